"""Tiny random-weight causal LMs for tests of mechanics, built in process from transformers
configs (real transformers code, no weights from outside).

A test of mechanics (online equals offline, crops, locks, shards, option plumbing) holds or
fails the same on a model of two layers as on SmolLM2's thirty, in a fraction of the time. So
:func:`build_tiny_model` writes, with ``save_pretrained``, a model folder that every path
takes like a real one (``load_model(str(folder))``, ``--model FOLDER``, the Tracer):

- ``llama``: the default model's own config (SmolLM2-135M-Instruct is a LlamaForCausalLM,
  read from its converted folder) cut to :data:`SIZE`, with its real vocabulary;
- ``qwen3``: a Qwen3 config (q/k norms on each head);
- ``mistral``: a Mistral config with a :data:`SLIDING_WINDOW` of 48 tokens, far shorter than
  the tests' conversations, so that the window masks keys.

All three carry the default model's tokenizer and chat template, so a conversation renders
to the same tokens as for the real model. Weights are random but seeded (the same every
run); every norm weight is drawn too (not left at one), so that swapping q_norm for k_norm
or leaving one out changes the attention. Random weights say nothing about which source is
right: a test on a tiny model asserts mechanics (two paths agree, counts, shapes), and a test
whose claim depends on real weights (a content edge, the sink) uses the real model.
"""

from __future__ import annotations

from pathlib import Path

#: The three architectures, by folder name.
ARCHITECTURES = ("llama", "qwen3", "mistral")
#: Two layers, four query heads sharing two key/value heads (grouped-query, as SmolLM2).
SIZE = dict(num_hidden_layers=2, hidden_size=64, intermediate_size=128, num_attention_heads=4,
            num_key_value_heads=2, head_dim=16)
#: Mistral's window, in tokens: the sample conversations are hundreds of tokens long.
SLIDING_WINDOW = 48
SEED = 0
#: Standard deviation of the random weights: larger than transformers' 0.02 so that the
#: attention of a head is peaked, not uniform (a masking or norm mistake then shows).
INIT_STD = 0.2


def tiny_config(arch: str):
    """The transformers config of a tiny model of ``arch`` (one of :data:`ARCHITECTURES`)."""
    from transformers import AutoConfig, MistralConfig, Qwen3Config

    from mtcabench.evaluate.attribution._loading import DEFAULT_MODEL, resolve_model

    real = AutoConfig.from_pretrained(resolve_model(DEFAULT_MODEL)[0])
    shared = dict(SIZE, vocab_size=real.vocab_size, bos_token_id=real.bos_token_id,
                  eos_token_id=real.eos_token_id, pad_token_id=real.pad_token_id,
                  max_position_embeddings=real.max_position_embeddings,
                  tie_word_embeddings=True, initializer_range=INIT_STD)
    if arch == "llama":
        for key, value in shared.items():
            setattr(real, key, value)
        return real
    if arch == "qwen3":
        return Qwen3Config(**shared, use_sliding_window=False)
    if arch == "mistral":
        return MistralConfig(**shared, sliding_window=SLIDING_WINDOW)
    raise ValueError(f"unknown tiny architecture {arch!r}; one of {ARCHITECTURES}")


def build_tiny_model(arch: str, folder: Path) -> Path:
    """Write the tiny ``arch`` model and the default model's tokenizer to ``folder``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from mtcabench.evaluate.attribution._loading import DEFAULT_MODEL, resolve_model

    config = tiny_config(arch)
    with torch.random.fork_rng(devices=[]):  # the caller's random state is left as it was
        torch.manual_seed(SEED)
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name.endswith("norm.weight"):
                    p.copy_(1 + 0.5 * torch.randn_like(p))
    # Written beside and renamed: a folder with a config.json is a whole model.
    tmp = folder.with_name(f".{folder.name}.partial")
    model.save_pretrained(tmp)
    AutoTokenizer.from_pretrained(resolve_model(DEFAULT_MODEL)[0]).save_pretrained(tmp)
    tmp.rename(folder)
    return folder


class TinyModels:
    """The tiny models' folders under ``root``, each built on first use."""

    def __init__(self, root: Path):
        self.root = root

    def __getitem__(self, arch: str) -> Path:
        folder = self.root / f"tiny-{arch}"
        if not (folder / "config.json").is_file():
            build_tiny_model(arch, folder)
        return folder
