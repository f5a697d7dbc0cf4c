"""From a base scorer to turn shares: forward passes, sentence scores, turn aggregation.

:class:`Attributor` holds a loaded model and a base scorer. For a rendered conversation and a
list of queries (target spans, intermediate assistant turns) it runs the scorer's forward
passes (one for average attention and AT2, whatever the number of queries), averages each
sentence's score over the passes that contained it, aggregates sentences into one score per
preceding turn (``max`` by default: a turn is as relevant as its most relevant sentence) and
turns the scores into shares (negative scores count as zero; shares sum to 1 over the turns
before the query, or are all 0). The same sentence scores, on the same scale, give each turn's
best sentences (:func:`best_sentences`): an edge's evidence, at no extra cost. Importing this
module does not import torch (running a pass does), so that the trace loop it serves also runs
model-free methods without the eval extra.
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
from mtcabench.evaluate.attribution._render import Sentence
from mtcabench.model import Role, ScoredSentence

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


def _turn_scores(
    sentence_scores: np.ndarray, sentence_turns: np.ndarray, before: int, aggregate: Aggregate,
) -> tuple[dict[int, float], float]:
    """Each scored turn's raw score before ``before``, and the total that makes them shares."""
    raw: dict[int, float] = {}
    for turn in np.unique(sentence_turns[sentence_turns < before]):
        vals = sentence_scores[(sentence_turns == turn) & ~np.isnan(sentence_scores)]
        if len(vals):
            raw[int(turn)] = float(vals.max() if aggregate == "max" else vals.sum())
    return raw, sum(max(s, 0.0) for s in raw.values())


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
    raw, total = _turn_scores(sentence_scores, sentence_turns, before, aggregate)
    return {t: (max(s, 0.0) / total if total > 0 else 0.0) for t, s in raw.items()}


def best_sentences(
    sentence_scores: np.ndarray,
    sentences: list[Sentence],
    texts: list[str],
    before: int,
    k: int,
    aggregate: Aggregate = "max",
) -> dict[int, list[ScoredSentence]]:
    """Per turn before ``before``, its ``k`` best sentences (positive scores only), best first.

    A sentence's score is put on its turn share's scale: ``max(score, 0)`` over the same total
    as :func:`turn_shares` (with ``max`` aggregation the best sentence's score *is* the share).
    Ranges are offsets into the turn's text (``texts[turn]``) without surrounding blanks; ties
    go to the earlier sentence.
    """
    if k <= 0:
        return {}
    turns = np.array([x.turn for x in sentences], dtype=np.int64)
    _, total = _turn_scores(sentence_scores, turns, before, aggregate)
    if total <= 0:
        return {}
    ranked: dict[int, list[tuple[float, int]]] = {}
    for i, (x, score) in enumerate(zip(sentences, sentence_scores)):
        if x.turn < before and score > 0:  # NaN compares False: never scored
            ranked.setdefault(x.turn, []).append((-float(score), i))
    out = {}
    for turn, items in ranked.items():
        best = []
        for neg, i in sorted(items)[:k]:
            x = sentences[i]
            piece = texts[turn][x.start : x.end]
            start = x.start + len(piece) - len(piece.lstrip())
            end = max(x.start + len(piece.rstrip()), start + 1)
            best.append(ScoredSentence(start=start, end=end, score=-neg / total))
        out[turn] = best
    return out


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
            if s.turn < last and (self.scorer.drops_assistant
                                  or conv.turns[s.turn].role is not Role.ASSISTANT)
        ]
        drops = self.scorer.plan(droppable, self.rng(conv.id))
        own = self.scorer.score_conversation(self.loaded, rendered, queries, droppable, drops)
        if own is not None:  # a scorer that runs its passes itself (e.g. log-probabilities)
            scores, passes = own
            self.forward_passes += passes
            return scores
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
        return {key: shares for key, (shares, _) in self.attribute(rendered, queries, 0).items()}

    def attribute(
        self, rendered: RenderedConversation, queries: list[Query], sentences: int,
    ) -> dict[object, tuple[dict[int, float], dict[int, list[ScoredSentence]]]]:
        """Per query, its turn shares and each turn's ``sentences`` best sentences
        (:func:`best_sentences`), both from the same forward passes."""
        if not queries:
            return {}
        scores = self.sentence_scores(rendered, queries)
        turns = np.array([s.turn for s in rendered.sentences], dtype=np.int64)
        texts = [t.text for t in rendered.conversation.turns]
        return {
            q.key: (turn_shares(scores[i], turns, q.turn, self.aggregate),
                    best_sentences(scores[i], rendered.sentences, texts, q.turn, sentences,
                                   self.aggregate))
            for i, q in enumerate(queries)
        }


def load_attributor(model: str | LoadedModel, scorer: str, settings: TraceSettings,
                    device: str = DEFAULT_DEVICE, dtype: str = DEFAULT_DTYPE) -> Attributor:
    """An Attributor over the model (loaded unless given) and the base scorer ``scorer``."""
    loaded = model if isinstance(model, LoadedModel) else _loading.load_model(
        model, device=device, dtype=dtype)
    return Attributor(loaded, make_scorer(scorer, settings, loaded),
                      aggregate=settings.turn_aggregate, seed=settings.seed)
