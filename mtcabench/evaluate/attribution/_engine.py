"""From a base scorer to turn shares: forward passes, sentence scores, turn aggregation.

:class:`Attributor` holds a loaded model and a base scorer. For a rendered conversation and a
list of queries (target spans, intermediate assistant turns) it runs the scorer's forward
passes (one for average attention and AT2, whatever the number of queries), averages each
sentence's score over the passes that contained it, aggregates sentences into one score per
preceding turn (``max`` by default: a turn is as relevant as its most relevant sentence) and
turns the scores into shares (negative scores count as zero; shares sum to 1 over the turns
before the query, or are all 0). Importing this module does not import torch (running a pass
does), so that the trace loop it serves also runs model-free methods without the eval extra.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

import mtcabench.evaluate.attribution._loading as _loading  # load_model looked up at call time (tests)
from mtcabench.evaluate._settings import DEFAULT_DEVICE, DEFAULT_DTYPE, TraceSettings
from mtcabench.evaluate.attribution._base import make_scorer
from mtcabench.evaluate.attribution._loading import LoadedModel
from mtcabench.evaluate.attribution._render import RenderedConversation
from mtcabench.model import Role

if TYPE_CHECKING:
    from mtcabench.evaluate.attribution._base import BaseScorer

Aggregate = Literal["max", "sum"]


@dataclass(frozen=True)
class Query:
    """A text being attributed: ``Turn.text[start:end]`` of one turn, under a key."""

    key: object
    turn: int
    start: int
    end: int


def turn_shares(
    sentence_scores: np.ndarray,
    sentence_turns: np.ndarray,
    before: int,
    aggregate: Aggregate = "max",
) -> dict[int, float]:
    """Shares of the turns before ``before`` from sentence scores (NaN = not scored).

    Turns with no scored sentence get no entry; the others get ``max(score, 0)`` normalised
    to sum to 1 (all 0 when nothing is positive).
    """
    raw: dict[int, float] = {}
    for turn in np.unique(sentence_turns[sentence_turns < before]):
        vals = sentence_scores[(sentence_turns == turn) & ~np.isnan(sentence_scores)]
        if len(vals):
            raw[int(turn)] = float(vals.max() if aggregate == "max" else vals.sum())
    pos = {t: max(s, 0.0) for t, s in raw.items()}
    total = sum(pos.values())
    return {t: (s / total if total > 0 else 0.0) for t, s in pos.items()}


class Attributor:
    """Turn shares for queries of a conversation, from a base scorer on a loaded model."""

    def __init__(
        self, loaded: LoadedModel, scorer: BaseScorer, *, aggregate: Aggregate = "max",
        seed: int = 0,
    ):
        if aggregate not in ("max", "sum"):
            raise ValueError(f"turn aggregate must be max or sum, got {aggregate!r}")
        self.loaded, self.scorer, self.aggregate, self.seed = loaded, scorer, aggregate, seed
        #: Forward passes run so far (for reports and the performance scripts).
        self.forward_passes = 0

    def rng(self, conversation_id: str) -> np.random.Generator:
        """The random stream of one conversation: same draws whatever the shard or order."""
        return np.random.default_rng([self.seed, zlib.crc32(conversation_id.encode())])

    def sentence_scores(self, rendered: RenderedConversation, queries: list[Query]) -> np.ndarray:
        """``[queries, sentences]`` scores averaged over the scorer's passes (NaN: never seen)."""
        # torch is imported here, not with the module: model-free methods run without it.
        from mtcabench.evaluate.attribution._attention import query_features

        conv = rendered.conversation
        last = max(q.turn for q in queries)
        droppable = [
            i for i, s in enumerate(rendered.sentences)
            if s.turn < last and conv.turns[s.turn].role is not Role.ASSISTANT
        ]
        drops = self.scorer.plan(droppable, self.rng(conv.id))
        n_s = len(rendered.sentences)
        total = np.zeros((len(queries), n_s))
        count = np.zeros((len(queries), n_s))
        for drop in drops:
            layout = rendered.layout(drop)
            rows = [np.arange(*layout.span_tokens(q.turn, q.start, q.end)) for q in queries]
            feats = query_features(
                self.loaded.model, layout.input_ids, rows, layout.token_sentence, n_s,
                with_heads=self.scorer.needs_heads,
            )
            self.forward_passes += 1
            scores = self.scorer.sentence_scores(feats).double().numpy()
            for q, r in enumerate(rows):
                if not len(r):
                    scores[q, :] = np.nan  # an empty text attends to nothing
            seen = ~np.isnan(scores)
            total += np.where(seen, scores, 0.0)
            count += seen
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(count > 0, total / np.maximum(count, 1), np.nan)

    def shares(self, rendered: RenderedConversation, queries: list[Query]) -> dict[object, dict[int, float]]:
        """Turn shares of every query (see :func:`turn_shares`)."""
        if not queries:
            return {}
        scores = self.sentence_scores(rendered, queries)
        turns = np.array([s.turn for s in rendered.sentences], dtype=np.int64)
        return {
            q.key: turn_shares(scores[i], turns, q.turn, self.aggregate)
            for i, q in enumerate(queries)
        }


def load_attributor(model: str | LoadedModel, scorer: str, settings: TraceSettings,
                    device: str = DEFAULT_DEVICE, dtype: str = DEFAULT_DTYPE) -> Attributor:
    """An Attributor over the model (loaded unless given) and the base scorer ``scorer``."""
    loaded = model if isinstance(model, LoadedModel) else _loading.load_model(
        model, device=device, dtype=dtype)
    return Attributor(loaded, make_scorer(scorer, settings, loaded),
                      aggregate=settings.turn_aggregate, seed=settings.seed)
