"""Which base scorers can run online, and the head weights each reads.

The online :class:`~mtcabench.evaluate.Tracer` keeps, per assistant token and sentence, one
head-weighted attention mass; a scorer runs online when its sentence score is exactly such a
sum (average attention, AT2). A scorer of another form is refused with the reason, never
computed wrongly.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from mtcabench.errors import InputError
from mtcabench.evaluate.attribution._scorers import AT2, AttnTrace, AverageAttention, BaseScorer

#: Per scorer class: its head weights ``[layers, heads]`` (what the sentence score sums).
HeadWeights = Callable[[BaseScorer, int, int], torch.Tensor]
ONLINE_SCORERS: dict[type[BaseScorer], HeadWeights] = {}


def register_online_scorer(cls: type[BaseScorer], head_weights: HeadWeights) -> None:
    """Let scorer class ``cls`` (exactly that class) run online.

    ``head_weights(scorer, layers, heads)`` gives ``w[layer, head]`` such that the scorer's
    score of a sentence for a query is ``sum_{l,h} w[l,h] * mass_{l,h}(query, sentence)``,
    the attention mass averaged over the query's tokens. A scorer not of that form cannot be
    computed from the features the tracer keeps.
    """
    ONLINE_SCORERS[cls] = head_weights


register_online_scorer(AverageAttention, lambda s, n_l, n_h: torch.full((n_l, n_h), 1.0 / (n_l * n_h)))
register_online_scorer(AT2, lambda s, n_l, n_h: s.weights)


def online_head_weights(scorer: BaseScorer, n_layers: int, n_heads: int) -> torch.Tensor:
    """The head weights of ``scorer`` for online tracing, or an InputError saying why not."""
    if isinstance(scorer, AttnTrace):
        raise InputError(
            f"--scorer attntrace cannot run online: it scores each sentence over "
            f"{scorer.subsamples} forward passes that each leave random context sentences out, "
            "and a key/value cache holds one context only; use it offline (`mtcabench explain`, "
            "`mtcabench trace`) or trace online with avg-attention or at2")
    fn = ONLINE_SCORERS.get(type(scorer))
    if fn is None:
        names = ", ".join(sorted(c.name for c in ONLINE_SCORERS))
        raise InputError(
            f"scorer {scorer.name!r} has no online form: the tracer keeps per token one "
            f"head-weighted attention mass per sentence, which is what {names} read; register "
            "a scorer of that form with register_online_scorer, or use it offline")
    w = torch.as_tensor(fn(scorer, n_layers, n_heads), dtype=torch.float32)
    if tuple(w.shape) != (n_layers, n_heads):
        raise InputError(f"scorer {scorer.name}: head weights are {tuple(w.shape)}, the model "
                         f"has {n_layers} layers x {n_heads} heads")
    return w
