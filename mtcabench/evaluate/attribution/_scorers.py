"""Base scorers: how much each context sentence contributed to a query's text.

A base scorer is one class. It says which forward passes it needs (:meth:`BaseScorer.plan`:
sets of sentences to leave out; the default is one pass over the whole conversation) and how
a pass's attention features (:class:`~mtcabench.evaluate.attribution._attention.PassFeatures`) become
sentence scores (:meth:`BaseScorer.sentence_scores`). The framework runs the passes, averages
each sentence over the passes that contained it, aggregates sentences into turns and hands the
turn scores to the model-based methods (Tokengeist, flat). A run builds its scorer with
:meth:`BaseScorer.from_settings` (default: no arguments), so a scorer with settings of its own
says there how it reads them. Adding a scorer::

    @register_scorer
    class MaxAttention(BaseScorer):
        name = "max-attention"

        def sentence_scores(self, features):
            return sentence_top_k_mean(features.token_attn, features, 1)

The three scorers of the paper are here: average attention, AttnTrace and AT2. The class
they derive from and the registry are in :mod:`~mtcabench.evaluate.attribution._base`
(importing no torch, so that the command line lists the scorers without loading torch); a
scorer in a module of its own is registered there too, in ``SCORER_MODULES``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from mtcabench.evaluate.attribution._at2 import weights_for
from mtcabench.evaluate.attribution._attention import PassFeatures
from mtcabench.evaluate.attribution._base import SCORERS, BaseScorer, make_scorer, register_scorer

__all__ = ["AT2", "SCORERS", "AttnTrace", "AverageAttention", "BaseScorer", "make_scorer",
           "register_scorer", "sentence_sum", "sentence_top_k_mean"]

def sentence_sum(values: torch.Tensor, features: PassFeatures) -> torch.Tensor:
    """``[Q, S]``: per-token values ``[Q, T]`` summed over each sentence; NaN where absent."""
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

    def sentence_scores(self, features: PassFeatures) -> torch.Tensor:
        return sentence_sum(features.token_attn, features)


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
    #: A top-k mean per unit: a segment is as strong as its best unit.
    additive = False

    def __init__(self, top_tokens: int = 5, subsamples: int = 30, keep: float = 0.4):
        if top_tokens < 1 or subsamples < 1 or not 0 < keep <= 1:
            raise ValueError("attntrace needs top_tokens >= 1, subsamples >= 1, 0 < keep <= 1")
        self.top_tokens, self.subsamples, self.keep = top_tokens, subsamples, keep

    @classmethod
    def from_settings(cls, settings, loaded):
        return cls(settings.attntrace_top_tokens, settings.attntrace_subsamples,
                   settings.attntrace_keep)

    def plan(self, droppable: list[int], rng: np.random.Generator) -> list[frozenset[int]]:
        passes = []
        n_keep = int(len(droppable) * self.keep)
        for _ in range(self.subsamples):
            kept = set(rng.permutation(len(droppable))[:n_keep].tolist())
            passes.append(frozenset(s for i, s in enumerate(droppable) if i not in kept))
        return passes

    def sentence_scores(self, features: PassFeatures) -> torch.Tensor:
        return sentence_top_k_mean(features.token_attn, features, self.top_tokens)

    def parameters(self) -> dict[str, Any]:
        return {"top_tokens": self.top_tokens, "subsamples": self.subsamples, "keep": self.keep}


@register_scorer
class AT2(BaseScorer):
    """AT2 (Cohen-Wang et al., 2025): per-head attention masses weighted by learned weights.

    The weights (one per layer and head) come from a file written by ``mtcabench at2-learn``
    (see mtcabench.evaluate.attribution._at2); the file names the model shape it was learned for.
    """

    name = "at2"
    needs_heads = True

    def __init__(self, weights: torch.Tensor, source: str = ""):
        self.weights = weights.float()  # [layers, heads]
        self.source = source

    @classmethod
    def from_settings(cls, settings, loaded):
        weights, label = weights_for(loaded, settings.at2_weights)
        return cls(weights, label)

    def sentence_scores(self, features: PassFeatures) -> torch.Tensor:
        hs = features.head_sentence
        if hs is None:
            raise ValueError("AT2 needs per-head features")
        if tuple(hs.shape[1:3]) != tuple(self.weights.shape):
            raise ValueError(f"AT2 weights are {tuple(self.weights.shape)} (layers, heads), the "
                             f"model has {tuple(hs.shape[1:3])}")
        out = torch.einsum("qlhs,lh->qs", hs, self.weights)
        out[:, ~torch.as_tensor(features.present)] = float("nan")
        return out

    def parameters(self) -> dict[str, Any]:
        return {"weights": self.source}
