"""Base scorers: how much each context sentence contributed to a query's text.

A base scorer is one class. It says which forward passes it needs (:meth:`BaseScorer.plan`:
sets of sentences to leave out; the default is one pass over the whole conversation) and how
a pass's attention features (:class:`~mtcabench.evaluate.attribution._attention.PassFeatures`) become
sentence scores (:meth:`BaseScorer.sentence_scores`). The framework runs the passes, averages
each sentence over the passes that contained it, aggregates sentences into turns and hands the
turn scores to the model-based methods (Tokengeist, flat). A scorer with settings of its own
declares them as a dataclass next to it (``Settings``), which gives it its command-line
options. Adding a scorer::

    @register_scorer
    class MaxAttention(BaseScorer):
        name = "max-attention"
        summary = "the sentence's highest token attention"

        def sentence_scores(self, features):
            return sentence_top_k_mean(features.token_attn, features, 1)

The three scorers of the paper are here: average attention, AttnTrace and AT2. The class
they derive from and the registry are in :mod:`~mtcabench.evaluate.attribution._base`; a
scorer in a module of its own is listed there too, in ``SCORERS``' lazy table. This module
imports torch only when a scorer computes (the command line reads the settings without it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from mtcabench.evaluate._settings import MAX_ABLATION_PASSES, SettingsError
from mtcabench.evaluate.attribution._base import (
    SCORERS,
    BaseScorer,
    make_scorer,
    register_scorer,
    setting,
)

if TYPE_CHECKING:
    import torch

    from mtcabench.evaluate.attribution._attention import PassFeatures

__all__ = ["AT2", "SCORERS", "AT2Settings", "AttnTrace", "AttnTraceSettings", "AverageAttention",
           "BaseScorer", "make_scorer", "register_scorer", "sentence_sum", "sentence_top_k_mean"]

def sentence_sum(values: torch.Tensor, features: PassFeatures) -> torch.Tensor:
    """``[Q, S]``: per-token values ``[Q, T]`` summed over each sentence; NaN where absent."""
    import torch

    n_s = len(features.present)
    sent = torch.as_tensor(features.token_sentence, dtype=torch.long)
    sent = torch.where(sent < 0, torch.full_like(sent, n_s), sent)
    out = torch.zeros(values.shape[0], n_s + 1, dtype=values.dtype)
    out.index_add_(1, sent, values[:, : len(sent)])
    out = out[:, :n_s]
    out[:, ~torch.as_tensor(features.present)] = float("nan")
    return out


def sentence_top_k_mean(values: torch.Tensor, features: PassFeatures, k: int) -> torch.Tensor:
    """``[Q, S]``: mean of the ``k`` largest per-token values of each sentence; NaN where absent."""
    import torch

    n_s = len(features.present)
    out = torch.full((values.shape[0], n_s), float("nan"), dtype=values.dtype)
    ts = features.token_sentence
    order = np.argsort(ts, kind="stable")
    bounds = np.searchsorted(ts[order], np.arange(n_s + 1))
    for s in np.flatnonzero(features.present):
        idx = torch.as_tensor(order[bounds[s] : bounds[s + 1]])
        if len(idx):
            vals = values[:, idx]
            out[:, s] = vals.topk(min(k, len(idx)), dim=1).values.mean(dim=1)
    return out


@register_scorer
class AverageAttention(BaseScorer):
    """Attention mass of the query on each sentence, averaged over rows, heads and layers."""

    name = "avg-attention"
    summary = ("attention mass of the query on the sentence, averaged over query tokens, heads "
               "and layers")
    online = True

    def sentence_scores(self, features: PassFeatures) -> torch.Tensor:
        return sentence_sum(features.token_attn, features)

    def head_weights(self, n_layers: int, n_heads: int) -> torch.Tensor:
        import torch

        return torch.full((n_layers, n_heads), 1.0 / (n_layers * n_heads))


@dataclass(frozen=True)
class AttnTraceSettings:
    """AttnTrace's own settings (``--attntrace-*``); defaults of its reference code."""

    top_tokens: int = setting(5, "AttnTrace: top-K tokens averaged per sentence.")
    subsamples: int = setting(30, "AttnTrace: context subsamples (forward passes).")
    keep: float = setting(0.4, "AttnTrace: fraction of sentences kept per subsample.")

    def __post_init__(self):
        if not (self.top_tokens >= 1 and self.subsamples >= 1 and 0 < self.keep <= 1):
            raise SettingsError("attntrace needs top_tokens >= 1, subsamples >= 1, 0 < keep <= 1")
        if self.subsamples > MAX_ABLATION_PASSES:
            raise SettingsError(f"AttnTrace subsamples must be at most {MAX_ABLATION_PASSES} "
                             f"(forward passes per conversation), got {self.subsamples}")


@register_scorer
class AttnTrace(BaseScorer):
    """AttnTrace (Wang et al., 2025): top-K token averaging plus context subsampling.

    Each of ``subsamples`` passes keeps a random ``keep`` fraction of the droppable sentences
    (fixed seed, so runs repeat); a sentence's score in a pass is the mean of its ``top_tokens``
    highest token attentions (averaged over heads and layers); the final score is the mean over
    the passes that contained it. Defaults follow the AttnTrace reference code (K=5, q=0.4,
    B=30). Assistant turns are never left out: they are the texts Tokengeist attributes.
    """

    name = "attntrace"
    Settings = AttnTraceSettings
    summary = ("AttnTrace (Wang et al. 2025): mean of the top `top-tokens` token attentions of "
               "the sentence, averaged over `subsamples` passes that each keep a random `keep` "
               "of the sentences of system, user and tool turns (seeded by `--seed`; assistant "
               "turns are never left out: they are the texts attributed)")
    passes_per_conversation = "one per subsample"
    offline_only = ("it scores each sentence over forward passes that each leave random context "
                    "sentences out, and a key/value cache holds one context only")
    #: A top-k mean per unit: a segment is as strong as its best unit.
    additive = False

    def __init__(self, settings: AttnTraceSettings | None = None, **fields: Any):
        super().__init__(AttnTraceSettings(**fields) if settings is None else settings)

    @property
    def top_tokens(self) -> int:
        return self.settings.top_tokens

    @property
    def subsamples(self) -> int:
        return self.settings.subsamples

    @property
    def keep(self) -> float:
        return self.settings.keep

    def plan(self, droppable: list[int], rng: np.random.Generator) -> list[frozenset[int]]:
        passes = []
        n_keep = int(len(droppable) * self.keep)
        for _ in range(self.subsamples):
            kept = set(rng.permutation(len(droppable))[:n_keep].tolist())
            passes.append(frozenset(s for i, s in enumerate(droppable) if i not in kept))
        return passes

    def sentence_scores(self, features: PassFeatures) -> torch.Tensor:
        return sentence_top_k_mean(features.token_attn, features, self.top_tokens)


@dataclass(frozen=True)
class AT2Settings:
    """AT2's own settings (``--at2-*``)."""

    weights: str | None = setting(None, "AT2 per-head weights (default: the shipped file for "
                                  "the default model).", path=True)

    def __post_init__(self):
        if self.weights is not None and not str(self.weights).strip():
            raise SettingsError("AT2 weights: an empty path; give the weights file (written by "
                                "`mtcabench at2-learn`), or leave it out for the shipped one")


@register_scorer
class AT2(BaseScorer):
    """AT2 (Cohen-Wang et al., 2025): per-head attention masses weighted by learned weights.

    The weights (one per layer and head) come from a file written by ``mtcabench at2-learn``
    (see mtcabench.evaluate.attribution._at2); the file names the model shape it was learned for.
    """

    name = "at2"
    Settings = AT2Settings
    summary = ("AT2 (Cohen-Wang et al. 2025): per-head attention masses weighted by learned "
               "per-head weights (the default model has a shipped file)")
    online = True
    needs_heads = True

    def __init__(self, weights: torch.Tensor, source: str = "",
                 settings: AT2Settings | None = None):
        super().__init__(settings)
        self.weights = weights.float()  # [layers, heads]
        self.source = source

    @classmethod
    def from_settings(cls, settings, loaded):
        from mtcabench.evaluate.attribution._at2 import weights_for

        own = cls.settings_in(settings)
        weights, label = weights_for(loaded, own.weights)
        return cls(weights, label, own)

    def sentence_scores(self, features: PassFeatures) -> torch.Tensor:
        import torch

        hs = features.head_sentence
        if hs is None:
            raise ValueError("AT2 needs per-head features")
        if tuple(hs.shape[1:3]) != tuple(self.weights.shape):
            raise ValueError(f"AT2 weights are {tuple(self.weights.shape)} (layers, heads), the "
                             f"model has {tuple(hs.shape[1:3])}")
        out = torch.einsum("qlhs,lh->qs", hs, self.weights)
        out[:, ~torch.as_tensor(features.present)] = float("nan")
        return out

    def head_weights(self, n_layers: int, n_heads: int) -> torch.Tensor:
        return self.weights

    def parameters(self) -> dict[str, Any]:
        # The weights' label (the file's name and digest, or "packaged"), not the path given.
        return {"weights": self.source}
