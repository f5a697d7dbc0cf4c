"""The metric definitions: one span's predicted provenance graph against its gold graph.

Every metric compares two *sets* (design.md section 5):

- edges: distinct ``(child, parent)`` pairs; a pair listed twice counts once;
- sources: the exogenous turns (system, user, tool) among the nodes of an edge set, where
  the nodes of an edge set are the turns at either end of its edges;
- hallucinated sources: the sources of the gold graph of a *hallucination* span (the turns
  that primed the error), compared with the sources of the prediction.

For a predicted set P and a gold set G, with hits ``|P & G|``:

    precision = |P & G| / |P|        recall = |P & G| / |G|        F1 = 2 P R / (P + R)

Empty sets, the conventions (the same for edges and sources):

- both empty: precision = recall = F1 = 1 (the prediction is exactly right);
- P empty, G not: precision = 0 (nothing was right), recall = 0;
- G empty, P not: recall = 0 (nothing due was recovered, yet something was claimed),
  precision = 0;
- F1 = 0 whenever precision + recall = 0.

So an empty prediction (a span missing from a submission, or skipped) earns nothing on a span
that has a gold graph, and never earns free precision.

Averages over a group of spans (:func:`aggregate`), each always named:

- *macro*: the mean of the per-span values (every span weighs the same);
- *micro*: the ratio of summed counts, ``sum |P & G| / sum |P|`` and ``sum |P & G| / sum |G|``
  (every edge or source weighs the same), with the conventions above applied to the sums;
  micro F1 is the F1 of micro precision and micro recall.

Hallucinated-source recall is defined on hallucination spans only: its macro average is
over the hallucination spans of a group and is ``None`` where a group has none.

Evidence hit@k (:data:`EVIDENCE_K` = 3) asks *where inside the parent turn*. It is defined
over the gold content edges whose evidence has a character range (the lineage annotator's
quote of the value in the parent turn); structural edges are left out (their evidence is the
call itself). Such a gold edge ``(c, p)`` with evidence range ``[a, b)`` in turn ``p`` is
*hit* when the prediction has the edge ``(c, p)`` and one of its first ``k`` evidence
sentences (best first) overlaps ``[a, b)``, i.e. ``start < b and a < end``. A missing edge, or
an edge without sentences (every model-free method, the floors included), is a miss, so
evidence hit <= the recall of those edges. Per span: hits / gold edges with evidence,
undefined (``None``) on a span with none; macro: the mean over the spans where it is
defined; micro: hits / gold edges with evidence, summed over spans.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

# Edge and set precision/recall/F1 are defined once, in the ground layer (mtcabench.graph),
# for the stages that compare graphs too; they are this module's metrics and names as well.
from mtcabench.graph import (
    Pair,
    edge_f1 as edge_f1,
    edge_precision as edge_precision,
    edge_recall as edge_recall,
    edge_set,
    f1,
    set_precision,
    set_recall,
)
from mtcabench.model import Conversation, DependencyType, Edge, EdgeKind, ScoredSentence

#: How many of a predicted edge's evidence sentences (best first) evidence hit@k reads.
EVIDENCE_K = 3

#: Metric names in report order, with a short label for tables.
METRICS: dict[str, str] = {
    "edge_precision": "edge P",
    "edge_recall": "edge R",
    "edge_f1": "edge F1",
    "source_precision": "source P",
    "source_recall": "source R",
    "hallucinated_source_recall": "halluc. source R",
    "evidence_hit": f"evidence hit@{EVIDENCE_K}",
}

#: One line per metric: its formula, for reports and the docs.
DEFINITIONS: dict[str, str] = {
    "edge_precision": "|P & G| / |P| over distinct (child, parent) edges",
    "edge_recall": "|P & G| / |G| over distinct (child, parent) edges",
    "edge_f1": "2 * precision * recall / (precision + recall) of the edges",
    "source_precision": "|S(P) & S(G)| / |S(P)|, S = exogenous turns among an edge set's nodes",
    "source_recall": "|S(P) & S(G)| / |S(G)|, S = exogenous turns among an edge set's nodes",
    "hallucinated_source_recall": "source recall on hallucination spans only",
    "evidence_hit": (f"share of gold content edges with an evidence range whose predicted edge "
                     f"has one of its first {EVIDENCE_K} sentences overlapping that range"),
}

#: How the two averages are taken, stated in every report.
AVERAGES: dict[str, str] = {
    "macro": "mean of per-span values (each span weighs the same)",
    "micro": "ratio of counts summed over spans (each edge or source weighs the same)",
}


# --------------------------------------------------------------------------- edges and sources


def edge_nodes(edges: Iterable[Pair]) -> set[int]:
    """The turns at either end of the edges."""
    return {x for pair in edges for x in pair}


def edge_sources(edges: Iterable[Pair], conversation: Conversation) -> set[int]:
    """Sources of an edge set: the exogenous turns (system, user, tool) among its nodes.

    Callers check that every node is a turn of the conversation; an index outside it
    raises IndexError rather than being dropped, so that no score silently changes.
    """
    turns = conversation.turns
    return {x for x in edge_nodes(edges) if _turn(turns, x).exogenous}


def _turn(turns, index: int):
    if not 0 <= index < len(turns):
        raise IndexError(f"turn {index} is not in the conversation ({len(turns)} turns)")
    return turns[index]


def source_precision(predicted_sources: set[int], gold_sources: set[int]) -> float:
    """Share of the predicted sources that are gold sources."""
    return set_precision(set(predicted_sources), set(gold_sources))


def source_recall(predicted_sources: set[int], gold_sources: set[int]) -> float:
    """Share of the gold sources (exogenous turns of the gold graph) that were predicted."""
    return set_recall(set(predicted_sources), set(gold_sources))


def hallucinated_source_recall(
    predicted_sources: set[int], gold_sources: set[int], dependency_type: DependencyType
) -> float | None:
    """Source recall on a hallucination span (the turns that primed the error); else None."""
    if dependency_type is not DependencyType.HALLUCINATION:
        return None
    return source_recall(predicted_sources, gold_sources)


# --------------------------------------------------------------------------- one span


@dataclass(frozen=True)
class SpanScore:
    """Counts and metric values of one span; counts feed the micro averages."""

    span_id: str
    hallucination: bool
    edge_hits: int
    edge_predicted: int
    edge_gold: int
    source_hits: int
    source_predicted: int
    source_gold: int
    #: Gold content edges with an evidence range, and those the prediction's evidence hit.
    evidence_hits: int = 0
    evidence_gold: int = 0

    @property
    def edge_precision(self) -> float:
        return _ratio(self.edge_hits, self.edge_predicted, self.edge_gold)

    @property
    def edge_recall(self) -> float:
        return _ratio(self.edge_hits, self.edge_gold, self.edge_predicted)

    @property
    def edge_f1(self) -> float:
        return f1(self.edge_precision, self.edge_recall)

    @property
    def source_precision(self) -> float:
        return _ratio(self.source_hits, self.source_predicted, self.source_gold)

    @property
    def source_recall(self) -> float:
        return _ratio(self.source_hits, self.source_gold, self.source_predicted)

    @property
    def hallucinated_source_recall(self) -> float | None:
        return self.source_recall if self.hallucination else None

    @property
    def evidence_hit(self) -> float | None:
        return self.evidence_hits / self.evidence_gold if self.evidence_gold else None

    def values(self) -> dict[str, float | None]:
        """Every metric of this span by name."""
        return {name: getattr(self, name) for name in METRICS}


def _ratio(hits: int, denominator: int, other: int) -> float:
    # Same conventions as set_precision / set_recall, from counts.
    if denominator == 0:
        return 1.0 if other == 0 else 0.0
    return hits / denominator


def gold_evidence(edges: Iterable[Edge]) -> dict[Pair, tuple[int, int]]:
    """The gold content edges that evidence hit@k is defined on: ``(child, parent)`` -> the
    evidence's ``[start, end)`` in the parent turn's text."""
    return {e.pair: (e.evidence.start, e.evidence.end) for e in edges
            if e.kind is EdgeKind.CONTENT and e.evidence is not None
            and e.evidence.start is not None and e.evidence.end is not None}


def evidence_hits(
    sentences: Mapping[Pair, Sequence[ScoredSentence]],
    gold: Mapping[Pair, tuple[int, int]],
    k: int = EVIDENCE_K,
) -> int:
    """How many gold evidence ranges one of their predicted edge's first ``k`` sentences
    overlaps (``sentences``: a predicted edge's evidence, best first; a missing edge: none)."""
    return sum(any(x.start < b and a < x.end for x in sentences.get(pair, ())[:k])
               for pair, (a, b) in gold.items())


def score_span(
    span_id: str,
    predicted: Iterable[Pair],
    gold: Iterable[Pair],
    gold_sources: Iterable[int],
    conversation: Conversation,
    dependency_type: DependencyType,
    *,
    sentences: Mapping[Pair, Sequence[ScoredSentence]] | None = None,
    evidence: Mapping[Pair, tuple[int, int]] | None = None,
) -> SpanScore:
    """Score one span: predicted edges against the gold edges and gold sources, and the
    predicted edges' ``sentences`` against the gold ``evidence`` (:func:`gold_evidence`)."""
    p_edges, g_edges = edge_set(predicted), edge_set(gold)
    p_src, g_src = edge_sources(p_edges, conversation), set(gold_sources)
    evidence = evidence or {}
    return SpanScore(
        span_id=span_id,
        hallucination=dependency_type is DependencyType.HALLUCINATION,
        edge_hits=len(p_edges & g_edges),
        edge_predicted=len(p_edges),
        edge_gold=len(g_edges),
        source_hits=len(p_src & g_src),
        source_predicted=len(p_src),
        source_gold=len(g_src),
        evidence_hits=evidence_hits(sentences or {}, evidence),
        evidence_gold=len(evidence),
    )


# --------------------------------------------------------------------------- averages

#: Columns of the per-span matrix that :func:`aggregate` reads (see :func:`span_matrix`).
COLUMNS = (
    "edge_hits", "edge_predicted", "edge_gold",
    "source_hits", "source_predicted", "source_gold",
    "hallucination",
    "hal_hits", "hal_predicted", "hal_gold",
    "edge_precision", "edge_recall", "edge_f1",
    "source_precision", "source_recall", "hallucinated_source_recall",
    "evidence_hits", "evidence_gold", "evidence_spans", "evidence_hit",
)
_C = {name: i for i, name in enumerate(COLUMNS)}


def span_matrix(scores: list[SpanScore]) -> np.ndarray:
    """Per-span counts and values as an ``(n_spans, len(COLUMNS))`` float array.

    Sums of its rows, weighted by how often a bootstrap resample drew each span, are all
    :func:`aggregate` needs; this is what makes the bootstrap one matrix product.
    """
    out = np.zeros((len(scores), len(COLUMNS)), dtype=np.float64)
    for i, s in enumerate(scores):
        h = 1.0 if s.hallucination else 0.0
        out[i] = (
            s.edge_hits, s.edge_predicted, s.edge_gold,
            s.source_hits, s.source_predicted, s.source_gold,
            h, h * s.source_hits, h * s.source_predicted, h * s.source_gold,
            s.edge_precision, s.edge_recall, s.edge_f1,
            s.source_precision, s.source_recall, h * s.source_recall,
            s.evidence_hits, s.evidence_gold, 1.0 if s.evidence_gold else 0.0,
            s.evidence_hit or 0.0,
        )
    return out


def _ratio_array(hits: np.ndarray, denominator: np.ndarray, other: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        value = hits / denominator
    return np.where(denominator > 0, value, np.where(other > 0, 0.0, 1.0))


def _f1_array(p: np.ndarray, r: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        value = 2 * p * r / (p + r)
    return np.where(p + r > 0, value, 0.0)


def aggregate(sums: np.ndarray, n: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
    """Macro and micro averages of every metric from weighted column sums.

    ``sums`` is ``(..., len(COLUMNS))``: the per-span matrix summed over a group of spans
    (weighted by resample counts in the bootstrap); ``n`` the matching number of spans.
    Returns ``{metric: {"macro": values, "micro": values}}``, NaN where undefined
    (no span, or no hallucination span for the hallucination metric).
    """
    s = {name: sums[..., i] for name, i in _C.items()}
    n = np.asarray(n, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        macro = {
            name: np.where(n > 0, s[name] / n, np.nan)
            for name in ("edge_precision", "edge_recall", "edge_f1",
                         "source_precision", "source_recall")
        }
        hal_n = s["hallucination"]
        macro["hallucinated_source_recall"] = np.where(
            hal_n > 0, s["hallucinated_source_recall"] / hal_n, np.nan)
        macro["evidence_hit"] = np.where(
            s["evidence_spans"] > 0, s["evidence_hit"] / s["evidence_spans"], np.nan)
        evidence_micro = np.where(s["evidence_gold"] > 0,
                                  s["evidence_hits"] / s["evidence_gold"], np.nan)
    ep = _ratio_array(s["edge_hits"], s["edge_predicted"], s["edge_gold"])
    er = _ratio_array(s["edge_hits"], s["edge_gold"], s["edge_predicted"])
    micro = {
        "edge_precision": ep,
        "edge_recall": er,
        "edge_f1": _f1_array(ep, er),
        "source_precision": _ratio_array(s["source_hits"], s["source_predicted"], s["source_gold"]),
        "source_recall": _ratio_array(s["source_hits"], s["source_gold"], s["source_predicted"]),
        "hallucinated_source_recall": np.where(
            hal_n > 0, _ratio_array(s["hal_hits"], s["hal_gold"], s["hal_predicted"]), np.nan),
        "evidence_hit": evidence_micro,
    }
    empty = n <= 0
    return {
        name: {"macro": macro[name], "micro": np.where(empty, np.nan, micro[name])}
        for name in METRICS
    }
