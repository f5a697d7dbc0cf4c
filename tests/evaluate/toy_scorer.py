"""A toy base scorer with one option of its own, written as a contributor would: this module
plus its registration line (``SCORERS.lazy["toy"] = "toy_scorer"``, as the
built-in scorers' lines in ``attribution/_base.py``). tests/evaluate/test_toy_scorer.py checks
that this is all it takes.

It averages the attention mass of only the last ``layers`` layers (all heads alike): a
head-weighted mass, so it runs online too.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from mtcabench.evaluate import BaseScorer, SettingsError, register_scorer, setting


@dataclass(frozen=True)
class LastLayersSettings:
    layers: int = setting(2, "toy: the last layers whose attention is averaged.")

    def __post_init__(self):
        if self.layers < 1:
            raise SettingsError(f"toy needs layers >= 1, got {self.layers}")


@register_scorer
class LastLayers(BaseScorer):
    name = "toy"
    Settings = LastLayersSettings
    summary = "attention mass of the query on the sentence in the last `layers` layers"
    online = True
    needs_heads = True

    def head_weights(self, n_layers: int, n_heads: int) -> torch.Tensor:
        k = min(self.settings.layers, n_layers)
        w = torch.zeros(n_layers, n_heads)
        w[n_layers - k:] = 1.0 / (k * n_heads)
        return w

    def sentence_scores(self, features) -> torch.Tensor:
        hs = torch.as_tensor(features.head_sentence)  # [queries, layers, heads, sentences]
        out = torch.einsum("qlhs,lh->qs", hs, self.head_weights(hs.shape[1], hs.shape[2]))
        out[:, ~torch.as_tensor(features.present)] = float("nan")
        return out
