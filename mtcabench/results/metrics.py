"""The metric definitions: one span's predicted provenance graph against its gold graph.

The metrics are a table, :data:`METRICS`: one :class:`Metric` entry per metric says its name,
its label, its formula, how it is computed on a span and how it is averaged. The scorer, its
tables and charts, the dataset card's Floors section and docs/scoring.md all read the table,
so adding a metric is one new entry (or :func:`register_metric`; see docs/scoring.md).

Every metric compares two *sets* (the definitions of docs/scoring.md):

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

from collections.abc import Callable, Iterable, Mapping, Sequence
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

#: The counts kept of every span, in the order of the first columns of :func:`span_matrix`:
#: what a metric's per-span value and its micro average are computed from.
COUNTS = (
    "edge_hits", "edge_predicted", "edge_gold",
    "source_hits", "source_predicted", "source_gold",
    "hallucination",
    "hal_hits", "hal_predicted", "hal_gold",
    "evidence_hits", "evidence_gold", "evidence_spans",
)


@dataclass(frozen=True)
class SpanScore:
    """Counts of one span (they feed the micro averages) and its metric values."""

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
    def evidence_spans(self) -> int:
        """1 where evidence hit@k is defined on this span (a gold edge with evidence), else 0."""
        return 1 if self.evidence_gold else 0

    @property
    def hal_hits(self) -> int:
        return self.source_hits if self.hallucination else 0

    @property
    def hal_predicted(self) -> int:
        return self.source_predicted if self.hallucination else 0

    @property
    def hal_gold(self) -> int:
        return self.source_gold if self.hallucination else 0

    def value(self, name: str) -> float | None:
        """The metric ``name`` of this span (:data:`METRICS`); None where it is undefined."""
        return METRICS[name].span(self)

    def values(self) -> dict[str, float | None]:
        """Every metric of this span by name, in report order."""
        return {name: m.span(self) for name, m in METRICS.items()}

    # Every metric also reads as an attribute (score.edge_f1): a property per table entry,
    # set by _add (below).


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


# --------------------------------------------------------------------------- the table


def ratio_array(hits: np.ndarray, denominator: np.ndarray, other: np.ndarray) -> np.ndarray:
    """:func:`_ratio` on arrays of summed counts (for a metric's micro average)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        value = hits / denominator
    return np.where(denominator > 0, value, np.where(other > 0, 0.0, 1.0))


def f1_array(p: np.ndarray, r: np.ndarray) -> np.ndarray:
    """:func:`~mtcabench.graph.f1` on arrays."""
    with np.errstate(invalid="ignore", divide="ignore"):
        value = 2 * p * r / (p + r)
    return np.where(p + r > 0, value, 0.0)


#: Summed columns of :func:`span_matrix` by name, as a metric's micro average reads them.
Sums = Mapping[str, np.ndarray]


@dataclass(frozen=True)
class Metric:
    """One metric: its name, how it is computed on a span, how it is averaged over spans.

    ``span`` gives a span's value from its :class:`SpanScore` (None where the metric is not
    defined on that span). The macro average is the mean of the span values over the spans
    where it is defined: every span, or with ``only`` the spans whose count column ``only``
    is 1 (e.g. ``"hallucination"``). ``micro`` gives the micro average from the count columns
    (:data:`COUNTS`) summed over a group of spans; it may return NaN where it is undefined.
    """

    name: str
    #: Short column title of the score tables and charts.
    label: str
    #: The formula, one line, stated in every report and in the docs.
    definition: str
    span: Callable[[SpanScore], float | None]
    micro: Callable[[Sums], np.ndarray]
    only: str | None = None
    #: Its column title in the dataset card's Floors tables; None: the card leaves it out.
    card: str | None = None


def _edge_p(c):
    return _ratio(c.edge_hits, c.edge_predicted, c.edge_gold)


def _edge_r(c):
    return _ratio(c.edge_hits, c.edge_gold, c.edge_predicted)


def _source_r(c):
    return _ratio(c.source_hits, c.source_gold, c.source_predicted)


def _micro(hits: str, denominator: str, other: str) -> Callable[[Sums], np.ndarray]:
    return lambda s: ratio_array(s[hits], s[denominator], s[other])


_S = "S = exogenous turns among an edge set's nodes"

#: Every metric, in report order; :func:`register_metric` adds one.
METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("edge_precision", "edge P", "|P & G| / |P| over distinct (child, parent) edges",
           _edge_p, _micro("edge_hits", "edge_predicted", "edge_gold")),
    Metric("edge_recall", "edge R", "|P & G| / |G| over distinct (child, parent) edges",
           _edge_r, _micro("edge_hits", "edge_gold", "edge_predicted")),
    Metric("edge_f1", "edge F1", "2 * precision * recall / (precision + recall) of the edges",
           lambda c: f1(_edge_p(c), _edge_r(c)),
           lambda s: f1_array(ratio_array(s["edge_hits"], s["edge_predicted"], s["edge_gold"]),
                              ratio_array(s["edge_hits"], s["edge_gold"], s["edge_predicted"])),
           card="edge F1"),
    Metric("source_precision", "source P", f"|S(P) & S(G)| / |S(P)|, {_S}",
           lambda c: _ratio(c.source_hits, c.source_predicted, c.source_gold),
           _micro("source_hits", "source_predicted", "source_gold")),
    Metric("source_recall", "source R", f"|S(P) & S(G)| / |S(G)|, {_S}",
           _source_r, _micro("source_hits", "source_gold", "source_predicted"),
           card="source recall"),
    Metric("hallucinated_source_recall", "halluc. source R",
           "source recall on hallucination spans only",
           lambda c: _source_r(c) if c.hallucination else None,
           lambda s: np.where(s["hallucination"] > 0,
                              ratio_array(s["hal_hits"], s["hal_gold"], s["hal_predicted"]),
                              np.nan),
           only="hallucination"),
    Metric("evidence_hit", f"evidence hit@{EVIDENCE_K}",
           f"share of gold content edges with an evidence range whose predicted edge has one "
           f"of its first {EVIDENCE_K} sentences overlapping that range",
           lambda c: c.evidence_hits / c.evidence_gold if c.evidence_gold else None,
           lambda s: np.where(s["evidence_gold"] > 0,
                              ratio_array(s["evidence_hits"], s["evidence_gold"],
                                          s["evidence_hits"]),
                              np.nan),
           only="evidence_spans"),
)}


def _add(metric: Metric) -> None:
    METRICS[metric.name] = metric
    setattr(SpanScore, metric.name, property(metric.span, doc=metric.definition))


for _metric in list(METRICS.values()):
    _add(_metric)


def register_metric(metric: Metric) -> Metric:
    """Add a metric to :data:`METRICS` (after the others): every report, table and chart that
    lists metrics shows it from then on, and a :class:`SpanScore` reads it as an attribute.
    A name already taken (by a metric, a count or an attribute of SpanScore) is refused."""
    if metric.name in METRICS or metric.name in COUNTS or hasattr(SpanScore, metric.name):
        raise ValueError(f"a metric or count named {metric.name!r} exists already")
    if metric.only is not None and metric.only not in COUNTS:
        raise ValueError(f"metric {metric.name}: only={metric.only!r} is not a count column "
                         f"({', '.join(COUNTS)})")
    _add(metric)
    return metric


def unregister_metric(name: str) -> Metric:
    """Take a metric registered with :func:`register_metric` out again (tests, experiments)."""
    metric = METRICS.pop(name)
    delattr(SpanScore, name)
    return metric


def definitions() -> dict[str, str]:
    """Each metric's formula by name, as reports state them."""
    return {name: m.definition for name, m in METRICS.items()}


# --------------------------------------------------------------------------- averages


def columns() -> tuple[str, ...]:
    """Columns of the per-span matrix: the counts, then one value per metric."""
    return (*COUNTS, *METRICS)


def span_matrix(scores: list[SpanScore]) -> np.ndarray:
    """Per-span counts and metric values as an ``(n_spans, len(columns()))`` float array
    (a metric's value is 0 where it is undefined; its macro average leaves those spans out).

    Sums of its rows, weighted by how often a bootstrap resample drew each span, are all
    :func:`aggregate` needs; this is what makes the bootstrap one matrix product.
    """
    metrics = list(METRICS.values())
    out = np.zeros((len(scores), len(COUNTS) + len(metrics)), dtype=np.float64)
    for i, s in enumerate(scores):
        values = [m.span(s) for m in metrics]
        out[i] = (
            s.edge_hits, s.edge_predicted, s.edge_gold,
            s.source_hits, s.source_predicted, s.source_gold,
            1.0 if s.hallucination else 0.0, s.hal_hits, s.hal_predicted, s.hal_gold,
            s.evidence_hits, s.evidence_gold, s.evidence_spans,
            *(0.0 if v is None else v for v in values),
        )
    return out


def aggregate(sums: np.ndarray, n: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
    """Macro and micro averages of every metric from weighted column sums.

    ``sums`` is ``(..., len(columns()))``: the per-span matrix summed over a group of spans
    (weighted by resample counts in the bootstrap); ``n`` the matching number of spans.
    Returns ``{metric: {"macro": values, "micro": values}}``, NaN where undefined
    (no span, or no span the metric is defined on).
    """
    s = {name: sums[..., i] for i, name in enumerate(columns())}
    n = np.asarray(n, dtype=np.float64)
    empty = n <= 0
    out = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        for name, m in METRICS.items():
            over = n if m.only is None else s[m.only]
            out[name] = {"macro": np.where(over > 0, s[name] / over, np.nan),
                         "micro": np.where(empty, np.nan, m.micro(s))}
    return out


def point(matrix: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
    """Both averages of every metric over all the rows of a per-span matrix."""
    return aggregate(matrix.sum(axis=0)[None, :], np.array([float(matrix.shape[0])]))


def macro_averages(scores: list[SpanScore]) -> dict[str, float | None]:
    """The macro average of every metric over ``scores``; None where undefined."""
    values = point(span_matrix(scores))
    return {name: (None if np.isnan(v := float(a["macro"][0])) else v)
            for name, a in values.items()}


# --------------------------------------------------------------------------- the docs


def markdown_table() -> str:
    """The table of docs/scoring.md's "The metrics": one row per entry of :data:`METRICS`
    (tests/scoring/test_metric_table.py checks that the page holds it, and prints the table
    to paste when it does not)."""
    rows = ["| metric | label | per span | macro average over | on the dataset card |",
            "| --- | --- | --- | --- | --- |"]
    for m in METRICS.values():
        over = "every span" if m.only is None else f"spans with `{m.only}`"
        rows.append(f"| `{m.name}` | {m.label} | {m.definition.replace('|', chr(92) + '|')} "
                    f"| {over} | {m.card or '-'} |")
    return "\n".join(rows) + "\n"
