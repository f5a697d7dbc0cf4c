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
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

import mtcabench.evaluate.attribution._loading as _loading  # load_model looked up at call time (tests)
from mtcabench.evaluate._settings import DEFAULT_DEVICE, DEFAULT_DTYPE, TraceSettings
from mtcabench.evaluate.attribution._base import make_scorer
from mtcabench.evaluate.attribution._loading import LoadedModel
from mtcabench.evaluate.attribution._passes import Meter, passes_for
from mtcabench.evaluate.attribution._render import Layout, RenderedConversation, Sentence
from mtcabench.evaluate.attribution._shared_start import SharedStart
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


def query_rows(layout: Layout, queries: list[Query]) -> list[np.ndarray]:
    """Each query's token positions in ``layout`` (the rows its pass reads)."""
    return [np.arange(*layout.span_tokens(q.turn, q.start, q.end)) for q in queries]


def segment_ids(sentences: list[Sentence]) -> np.ndarray:
    """A conversation-wide id of each unit's segment (units of one segment share it)."""
    ids: dict[tuple[int, int], int] = {}
    return np.array([ids.setdefault((x.turn, x.segment), len(ids)) for x in sentences],
                    dtype=np.int64)


def _turn_scores(
    sentence_scores: np.ndarray, sentence_turns: np.ndarray, before: int, aggregate: Aggregate,
    segments: np.ndarray | None = None, additive: bool = True,
) -> tuple[dict[int, float], float]:
    """Each scored turn's raw score before ``before``, and the total that makes them shares.

    With ``segments`` (:func:`segment_ids`) and the ``max`` aggregate, a turn scores its best
    segment, the units of a segment pooled: summed for an ``additive`` scorer (attention
    masses), their best otherwise (a top-k mean, a turn-level weight)."""
    raw: dict[int, float] = {}
    for turn in np.unique(sentence_turns[sentence_turns < before]):
        seen = (sentence_turns == turn) & ~np.isnan(sentence_scores)
        vals = sentence_scores[seen]
        if not len(vals):
            continue
        if aggregate == "sum":
            raw[int(turn)] = float(vals.sum())
        elif segments is None:
            raw[int(turn)] = float(vals.max())
        else:
            pooled: dict[int, float] = {}
            for seg, v in zip(segments[seen].tolist(), vals.tolist(), strict=True):
                pooled[seg] = (pooled.get(seg, 0.0) + v if additive
                               else max(pooled.get(seg, -np.inf), v))
            raw[int(turn)] = max(pooled.values())
    return raw, sum(max(s, 0.0) for s in raw.values())


def turn_shares(
    sentence_scores: np.ndarray,
    sentence_turns: np.ndarray,
    before: int,
    aggregate: Aggregate = "max",
    segments: np.ndarray | None = None,
    additive: bool = True,
) -> dict[int, float]:
    """Shares of the turns before ``before`` from sentence scores (NaN = not scored).

    Turns with no scored sentence get no entry; the others get ``max(score, 0)`` normalised
    to sum to 1 (all 0 when nothing is positive); ``segments`` and ``additive``: see
    :func:`_turn_scores`.
    """
    raw, total = _turn_scores(sentence_scores, sentence_turns, before, aggregate, segments,
                              additive)
    return {t: (max(s, 0.0) / total if total > 0 else 0.0) for t, s in raw.items()}


_OPENS = {"}": "{", "]": "["}
_CLOSES = {"{": "}", "[": "]"}


def evidence_range(text: str, start: int, end: int) -> tuple[int, int]:
    """A unit's range as evidence: without surrounding blanks, a JSON field's trailing comma,
    nor the brackets it shares with its container (``{"id": "A-1",`` shows ``"id": "A-1"``);
    never empty."""
    a, b = start, end
    while True:
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        piece = text[a:b]
        if len(piece) < 2:
            break
        first, last = piece[0], piece[-1]
        if last == "," or (last in _OPENS and piece.count(last) > piece.count(_OPENS[last])):
            b -= 1  # a separator, or a bracket closing a container opened before the unit
        elif first in _CLOSES and piece.count(first) > piece.count(_CLOSES[first]):
            a += 1  # a bracket opening a container that goes on after the unit
        else:
            break
    if a >= b:  # a blank unit (none expected): its first character
        return start, max(start + 1, min(end, start + 1))
    return a, b


def best_sentences(
    sentence_scores: np.ndarray,
    sentences: list[Sentence],
    texts: list[str],
    before: int,
    k: int,
    aggregate: Aggregate = "max",
    additive: bool = True,
) -> dict[int, list[ScoredSentence]]:
    """Per turn before ``before``, its ``k`` best sentences (positive scores only), best first.

    A sentence's score is put on its turn share's scale: ``max(score, 0)`` over the same total
    as :func:`turn_shares` (with ``max`` aggregation and a turn whose best segment is one unit,
    the best sentence's score *is* the share; a segment of several units shares it out).
    Ranges are offsets into the turn's text (``texts[turn]``), trimmed by
    :func:`evidence_range`; ties go to the earlier sentence.
    """
    if k <= 0:
        return {}
    turns = np.array([x.turn for x in sentences], dtype=np.int64)
    _, total = _turn_scores(sentence_scores, turns, before, aggregate, segment_ids(sentences),
                            additive)
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
            start, end = evidence_range(texts[turn], x.start, x.end)
            best.append(ScoredSentence(start=start, end=end, score=-neg / total))
        out[turn] = best
    return out


def answer(
    sentence_scores: np.ndarray, sentences: list[Sentence], texts: list[str], before: int,
    k: int, aggregate: Aggregate, additive: bool,
) -> tuple[dict[int, float], dict[int, list[ScoredSentence]]]:
    """A query's answer from its sentence scores: the turn shares of the turns before
    ``before`` (:func:`turn_shares`) and each turn's ``k`` best sentences
    (:func:`best_sentences`). The one answer of offline attribution and of the online Tracer,
    so both read a scorer the same way (its ``additive`` flag included)."""
    turns = np.array([s.turn for s in sentences], dtype=np.int64)
    return (turn_shares(sentence_scores, turns, before, aggregate, segment_ids(sentences),
                        additive),
            best_sentences(sentence_scores, sentences, texts, before, k, aggregate, additive))


class Attributor:
    """Turn shares for queries of a conversation, from a base scorer on a loaded model."""

    def __init__(
        self, loaded: LoadedModel, scorer: BaseScorer, *, aggregate: Aggregate = "max",
        seed: int = 0,
    ):
        if aggregate not in ("max", "sum"):
            raise ValueError(f"turn aggregate must be max or sum, got {aggregate!r}")
        self.loaded, self.scorer, self.aggregate, self.seed = loaded, scorer, aggregate, seed
        #: Model calls run so far, the sink probe's included (for reports and the performance
        #: scripts), the tokens they computed and those read from the prefix cache instead.
        self.forward_passes = 0
        self.model_tokens = 0
        self.reused_tokens = 0

    def rng(self, conversation_id: str) -> np.random.Generator:
        """The random stream of one conversation: same draws whatever the shard or order."""
        return np.random.default_rng([self.seed, zlib.crc32(conversation_id.encode())])

    def sentence_scores(self, rendered: RenderedConversation, queries: list[Query],
                        shared: SharedStart | None = None) -> np.ndarray:
        """``[queries, sentences]`` scores averaged over the scorer's passes (NaN: never seen);
        ``shared``: the conversation's shared start (:mod:`._shared_start`), for the passes that
        begin as its trunk does."""
        conv = rendered.conversation
        last = max(q.turn for q in queries)
        droppable = [
            i for i, s in enumerate(rendered.sentences)
            if s.turn < last and (self.scorer.drops_assistant
                                  or conv.turns[s.turn].role is not Role.ASSISTANT)
        ]
        drops = self.scorer.plan_conversation(rendered, droppable, self.rng(conv.id))
        with passes_for(self.loaded.model).meter() as meter:
            scores, reported = self._scores(rendered, queries, droppable, drops, shared)
        self.count(meter, reported)
        return scores

    @contextmanager
    def counting(self) -> Iterator[None]:
        """Count the model calls this thread makes in the block (edge verification's)."""
        with passes_for(self.loaded.model).meter() as meter:
            yield
        self.count(meter)

    def count(self, meter: Meter, reported: int = 0) -> None:
        """Add what the model calls of ``meter`` cost (``reported``: the passes a scorer that
        calls the model its own way says it ran, when none went through the pass service)."""
        self.forward_passes += meter.calls or reported
        self.model_tokens += meter.tokens
        self.reused_tokens += meter.reused

    def _scores(self, rendered: RenderedConversation, queries: list[Query],
                droppable: list[int], drops: list[frozenset[int]],
                shared: SharedStart | None = None) -> tuple[np.ndarray, int]:
        """The scores, and the passes a scorer running its own says it ran."""
        # torch is imported here, not with the module: model-free methods run without it.
        from mtcabench.evaluate.attribution._attention import query_features

        own = self.scorer.score_conversation(self.loaded, rendered, queries, droppable, drops)
        if own is not None:  # a scorer that runs its passes itself (e.g. log-probabilities)
            return own
        n_s = len(rendered.sentences)
        full = rendered.full
        prefix = rendered.shared_prefix
        total = np.zeros((len(queries), n_s))
        count = np.zeros((len(queries), n_s))
        for drop in drops:
            layout = rendered.layout(drop)
            rows = query_rows(layout, queries)
            # Only a layout that starts as the full one has the conversation's own prefix.
            keeps = layout.input_ids[:prefix] == full.input_ids[:prefix]
            feats = query_features(
                self.loaded.model, layout.input_ids, rows, layout.token_sentence, n_s,
                with_heads=self.scorer.needs_heads, store=prefix if keeps else 0,
                shared=shared,
            )
            scores = self.scorer.sentence_scores(feats).double().numpy()
            for q, r in enumerate(rows):
                if not len(r):
                    scores[q, :] = np.nan  # an empty text attends to nothing
            seen = ~np.isnan(scores)
            total += np.where(seen, scores, 0.0)
            count += seen
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(count > 0, total / np.maximum(count, 1), np.nan), 0

    def shares(self, rendered: RenderedConversation, queries: list[Query]) -> dict[object, dict[int, float]]:
        """Turn shares of every query (see :func:`turn_shares`)."""
        return {key: shares for key, (shares, _) in self.attribute(rendered, queries, 0).items()}

    def attribute(
        self, rendered: RenderedConversation, queries: list[Query], sentences: int,
        shared: SharedStart | None = None,
    ) -> dict[object, tuple[dict[int, float], dict[int, list[ScoredSentence]]]]:
        """Per query, its turn shares and each turn's ``sentences`` best sentences
        (:func:`best_sentences`), both from the same forward passes (``shared``: see
        :meth:`sentence_scores`)."""
        if not queries:
            return {}
        scores = self.sentence_scores(rendered, queries, shared)
        texts = [t.text for t in rendered.conversation.turns]
        return {q.key: answer(scores[i], rendered.sentences, texts, q.turn, sentences,
                              self.aggregate, self.scorer.additive)
                for i, q in enumerate(queries)}


def load_attributor(model: str | LoadedModel, scorer: str, settings: TraceSettings,
                    device: str = DEFAULT_DEVICE, dtype: str = DEFAULT_DTYPE) -> Attributor:
    """An Attributor over the model (loaded unless given) and the base scorer ``scorer``."""
    loaded = model if isinstance(model, LoadedModel) else _loading.load_model(
        model, device=device, dtype=dtype)
    return Attributor(loaded, make_scorer(scorer, settings, loaded),
                      aggregate=settings.turn_aggregate, seed=settings.seed)
