"""Which base scorers can run online, and the head weights each reads.

The online :class:`~mtcabench.evaluate.Tracer` keeps, per assistant token and sentence, one
head-weighted attention mass; a scorer runs online when its sentence score is exactly such a
sum (average attention, AT2). A scorer says so itself (``online = True`` and
:meth:`~mtcabench.evaluate.BaseScorer.head_weights`); a scorer of another form is refused with
the reason, never computed wrongly.
"""

from __future__ import annotations

import torch

from mtcabench.errors import InputError
from mtcabench.evaluate.attribution._base import SCORERS, BaseScorer


def declares_online(cls: type[BaseScorer]) -> bool:
    """Whether ``cls`` itself declares ``online = True``: a subclass that changes how a scorer
    scores may leave its online form, so it says so again (inheriting it is not enough)."""
    return bool(vars(cls).get("online", False))


def online_scorer_names() -> list[str]:
    """The registered scorers that run online."""
    return sorted(n for n, cls in SCORERS.load_all().items() if declares_online(cls))


def online_head_weights(scorer: BaseScorer, n_layers: int, n_heads: int) -> torch.Tensor:
    """The head weights of ``scorer`` for online tracing, or an InputError saying why not."""
    if not declares_online(type(scorer)):
        names = " or ".join(online_scorer_names())
        if scorer.offline_only:
            raise InputError(
                f"--scorer {scorer.name} cannot run online: {scorer.offline_only}; use it offline "
                f"(`mtcabench explain`, `mtcabench trace`) or trace online with {names}")
        raise InputError(
            f"scorer {scorer.name!r} has no online form: the tracer keeps per token one "
            f"head-weighted attention mass per sentence, which is what {names} read; declare "
            "online = True and head_weights() on a scorer of that form, or use it offline")
    w = torch.as_tensor(scorer.head_weights(n_layers, n_heads), dtype=torch.float32)
    if tuple(w.shape) != (n_layers, n_heads):
        raise InputError(f"scorer {scorer.name}: head weights are {tuple(w.shape)}, the model "
                         f"has {n_layers} layers x {n_heads} heads")
    return w
