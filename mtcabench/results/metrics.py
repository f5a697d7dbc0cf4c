"""The metric definitions: one span's predicted provenance graph against its gold graph.

The metrics are a table, :data:`METRICS`: one :class:`Metric` entry per metric says its name,
its label, its formula, the counts it needs, how it is computed on a span from them and how
it is averaged. The counts are a table too, :data:`COUNTS`: one :class:`Count` entry per
count says how it is counted on a span (:class:`SpanCase`). :func:`score_span` is the one
place a span is scored (the submission's spans, the floors', ``show``'s, ``view``'s), and it
returns the counts by name (:class:`SpanScore`). The scorer, its JSON and Markdown reports,
tables and charts, the floors, ``show``, ``view``, the dataset card's Floors section and
docs/scoring.md all read the tables, so adding a metric is one new entry, and one that needs
a new count one more (or :func:`register_metric` and :func:`register_count`; see
docs/scoring.md).

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
from dataclasses import dataclass, field

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
from mtcabench.model import (
    BenchmarkSpan,
    Conversation,
    DependencyType,
    Edge,
    EdgeKind,
    PredictedEdge,
    ScoredSentence,
)

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


@dataclass(frozen=True)
class SpanCase:
    """What one span is scored from: the prediction and the gold, as sets.

    The counts (:data:`COUNTS`) are functions of this and nothing else; :func:`score_span`
    builds it from a benchmark span and a prediction, :meth:`of_sets` from plain sets.
    """

    span_id: str
    #: Distinct predicted and gold ``(child, parent)`` edges.
    predicted: frozenset[Pair]
    gold: frozenset[Pair]
    #: The exogenous turns among the predicted edges' nodes; the span's gold sources.
    predicted_sources: frozenset[int]
    gold_sources: frozenset[int]
    hallucination: bool
    #: A predicted edge's evidence sentences, best first (a missing edge: none).
    sentences: Mapping[Pair, Sequence[ScoredSentence]]
    #: The gold content edges with an evidence range (:func:`gold_evidence`).
    evidence: Mapping[Pair, tuple[int, int]]
    conversation: Conversation
    #: The benchmark span, where the case was built from one (a count may read any of it).
    span: BenchmarkSpan | None = None

    @classmethod
    def of_sets(
        cls,
        span_id: str,
        predicted: Iterable[Pair],
        gold: Iterable[Pair],
        gold_sources: Iterable[int],
        conversation: Conversation,
        dependency_type: DependencyType,
        *,
        sentences: Mapping[Pair, Sequence[ScoredSentence]] | None = None,
        evidence: Mapping[Pair, tuple[int, int]] | None = None,
        span: BenchmarkSpan | None = None,
    ) -> SpanCase:
        """The case of predicted edges against gold edges and gold sources."""
        p_edges = frozenset(edge_set(predicted))
        return cls(span_id, p_edges, frozenset(edge_set(gold)),
                   frozenset(edge_sources(p_edges, conversation)), frozenset(gold_sources),
                   dependency_type is DependencyType.HALLUCINATION, sentences or {},
                   evidence or {}, conversation, span)


@dataclass(frozen=True)
class Count:
    """One count kept of every span: what a metric's per-span value and its micro average
    are computed from (summed over a group of spans for the micro average and the bootstrap).

    ``of`` gives it from a :class:`SpanCase`, as an integer. ``written``: whether the
    per-span file (``NAME.spans.jsonl``) lists it beside the metrics; False for a count that
    only restates others (a 0/1 flag, counts of one kind of span).
    """

    name: str
    #: What it counts, one line.
    definition: str
    of: Callable[[SpanCase], int]
    written: bool = True


#: Every count, in the order of the first columns of :func:`span_matrix`;
#: :func:`register_count` adds one.
COUNTS: dict[str, Count] = {c.name: c for c in (
    Count("edge_hits", "distinct predicted edges that are gold edges, |P & G|",
          lambda c: len(c.predicted & c.gold)),
    Count("edge_predicted", "distinct predicted edges, |P|", lambda c: len(c.predicted)),
    Count("edge_gold", "distinct gold edges, |G|", lambda c: len(c.gold)),
    Count("source_hits", "predicted sources that are gold sources, |S(P) & S(G)|",
          lambda c: len(c.predicted_sources & c.gold_sources)),
    Count("source_predicted", "predicted sources, |S(P)|", lambda c: len(c.predicted_sources)),
    Count("source_gold", "gold sources, |S(G)|", lambda c: len(c.gold_sources)),
    Count("hallucination", "1 on a hallucination span, else 0",
          lambda c: 1 if c.hallucination else 0, written=False),
    Count("hal_hits", "source_hits on a hallucination span, else 0",
          lambda c: len(c.predicted_sources & c.gold_sources) if c.hallucination else 0,
          written=False),
    Count("hal_predicted", "source_predicted on a hallucination span, else 0",
          lambda c: len(c.predicted_sources) if c.hallucination else 0, written=False),
    Count("hal_gold", "source_gold on a hallucination span, else 0",
          lambda c: len(c.gold_sources) if c.hallucination else 0, written=False),
    Count("evidence_hits", f"gold evidence ranges one of their predicted edge's first "
          f"{EVIDENCE_K} sentences overlaps", lambda c: evidence_hits(c.sentences, c.evidence)),
    Count("evidence_gold", "gold content edges with an evidence range",
          lambda c: len(c.evidence)),
    Count("evidence_spans", "1 where the span has a gold content edge with an evidence "
          "range (evidence hit@k is defined), else 0",
          lambda c: 1 if c.evidence else 0, written=False),
)}


@dataclass(frozen=True)
class SpanScore:
    """One span's counts by name (:data:`COUNTS`), from which every metric is computed.

    A count and a metric both read as an attribute (``score.edge_hits``, ``score.edge_f1``)
    and by name (``score.counts["edge_hits"]``, ``score.value("edge_f1")``).
    """

    span_id: str
    counts: Mapping[str, int]

    @classmethod
    def of(cls, case: SpanCase) -> SpanScore:
        """Every count of :data:`COUNTS` on one case."""
        return cls(case.span_id, {name: int(c.of(case)) for name, c in COUNTS.items()})

    def __getattr__(self, name: str):
        # Only called where ordinary lookup fails: the counts and metrics, by name.
        if name.startswith("_") or name == "counts":
            raise AttributeError(name)
        if name in self.counts:
            return self.counts[name]
        metric = METRICS.get(name)
        if metric is None:
            raise AttributeError(f"{type(self).__name__} has no count or metric {name!r}")
        return metric.span(self)

    def value(self, name: str) -> float | None:
        """The metric ``name`` of this span (:data:`METRICS`); None where it is undefined."""
        return METRICS[name].span(self)

    def values(self) -> dict[str, float | None]:
        """Every metric of this span by name, in report order."""
        return {name: m.span(self) for name, m in METRICS.items()}


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
    span: BenchmarkSpan,
    conversation: Conversation,
    predicted: Iterable[PredictedEdge | Edge | Pair] = (),
    *,
    sentences: Mapping[Pair, Sequence[ScoredSentence]] | None = None,
) -> SpanScore:
    """Score one benchmark span: the one place it is done (the scorer, the floors, ``show``,
    ``view`` and the studies all call it).

    ``predicted``: the predicted edges (submission edges, graph edges or pairs; an empty
    prediction for a missing or skipped span). Their evidence sentences are those of the
    predicted edges' first listing (as for a duplicated edge's score), or ``sentences``.
    Against the span's gold edges, gold sources and gold evidence ranges.
    """
    pairs: list[Pair] = []
    found: dict[Pair, Sequence[ScoredSentence]] = {}
    for e in predicted:
        pair = e if isinstance(e, tuple) else (e.child, e.parent)
        pairs.append(pair)
        if sentences is None and not isinstance(e, tuple) and getattr(e, "sentences", None):
            found.setdefault(pair, e.sentences)
    case = SpanCase.of_sets(
        span.id, pairs, [e.pair for e in span.graph.edges], span.sources, conversation,
        span.dependency_type, sentences=found if sentences is None else sentences,
        evidence=gold_evidence(span.graph.edges), span=span)
    return SpanScore.of(case)


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
    """One metric: its name, the counts it needs, how it is computed on a span, how it is
    averaged over spans.

    ``counts`` names the counts (:data:`COUNTS`) it is computed from. ``span`` gives a span's
    value from its :class:`SpanScore` (None where the metric is not defined on that span).
    The macro average is the mean of the span values over the spans where it is defined:
    every span, or with ``only`` the spans whose count ``only`` (one of ``counts``) is 1
    (e.g. ``"hallucination"``). ``micro`` gives the micro average from its counts summed over
    a group of spans (a mapping of ``counts`` to arrays: only those); it may return NaN where
    it is undefined.
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
    #: Its column title in ``mtcabench view``'s table of spans; None: only on a span's page.
    view: str | None = None
    #: A column of ``score --compare``'s terminal table (the files hold every metric).
    headline: bool = False
    #: A panel of the chart by dependency type.
    plot: bool = False
    counts: tuple[str, ...] = field(kw_only=True)


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
           _edge_p, _micro("edge_hits", "edge_predicted", "edge_gold"), counts=("edge_hits", "edge_predicted", "edge_gold")),
    Metric("edge_recall", "edge R", "|P & G| / |G| over distinct (child, parent) edges",
           _edge_r, _micro("edge_hits", "edge_gold", "edge_predicted"), counts=("edge_hits", "edge_predicted", "edge_gold")),
    Metric("edge_f1", "edge F1", "2 * precision * recall / (precision + recall) of the edges",
           lambda c: f1(_edge_p(c), _edge_r(c)),
           lambda s: f1_array(ratio_array(s["edge_hits"], s["edge_predicted"], s["edge_gold"]),
                              ratio_array(s["edge_hits"], s["edge_gold"], s["edge_predicted"])),
           card="edge F1", view="edge F1", headline=True, plot=True, counts=("edge_hits", "edge_predicted", "edge_gold")),
    Metric("source_precision", "source P", f"|S(P) & S(G)| / |S(P)|, {_S}",
           lambda c: _ratio(c.source_hits, c.source_predicted, c.source_gold),
           _micro("source_hits", "source_predicted", "source_gold"), counts=("source_hits", "source_predicted", "source_gold")),
    Metric("source_recall", "source R", f"|S(P) & S(G)| / |S(G)|, {_S}",
           _source_r, _micro("source_hits", "source_gold", "source_predicted"),
           card="source recall", headline=True, plot=True, counts=("source_hits", "source_predicted", "source_gold")),
    Metric("hallucinated_source_recall", "halluc. source R",
           "source recall on hallucination spans only",
           lambda c: _ratio(c.hal_hits, c.hal_gold, c.hal_predicted) if c.hallucination
           else None,
           lambda s: np.where(s["hallucination"] > 0,
                              ratio_array(s["hal_hits"], s["hal_gold"], s["hal_predicted"]),
                              np.nan),
           only="hallucination", headline=True,
           counts=("hallucination", "hal_hits", "hal_predicted", "hal_gold")),
    Metric("evidence_hit", f"evidence hit@{EVIDENCE_K}",
           f"share of gold content edges with an evidence range whose predicted edge has one "
           f"of its first {EVIDENCE_K} sentences overlapping that range",
           lambda c: c.evidence_hits / c.evidence_gold if c.evidence_gold else None,
           lambda s: np.where(s["evidence_gold"] > 0,
                              ratio_array(s["evidence_hits"], s["evidence_gold"],
                                          s["evidence_hits"]),
                              np.nan),
           only="evidence_spans", view=f"evidence hit@{EVIDENCE_K}", headline=True,
           counts=("evidence_hits", "evidence_gold", "evidence_spans")),
)}


def register_metric(metric: Metric) -> Metric:
    """Add a metric to :data:`METRICS` (after the others): every report, table, chart, the
    floors, ``show``, ``view`` and the card list it from then on, and a :class:`SpanScore`
    reads it as an attribute. A name already taken (by a metric, a count or an attribute of
    SpanScore) is refused, and so is a count it needs that :data:`COUNTS` does not hold. The
    registries' one rule (``mtcabench.registry``): the same metric again is harmless."""
    if METRICS.get(metric.name) is metric:
        return metric
    if metric.name in METRICS or metric.name in COUNTS or hasattr(SpanScore, metric.name):
        raise ValueError(f"a metric or count named {metric.name!r} exists already")
    unknown = [c for c in metric.counts if c not in COUNTS]
    if unknown:
        raise ValueError(f"metric {metric.name}: needs {', '.join(unknown)}, not a count column "
                         f"({', '.join(COUNTS)}); register the count first (register_count)")
    if metric.only is not None and metric.only not in metric.counts:
        raise ValueError(f"metric {metric.name}: only={metric.only!r} is not a count column "
                         f"of its counts ({', '.join(metric.counts)})")
    METRICS[metric.name] = metric
    return metric


def unregister_metric(name: str) -> Metric:
    """Take a metric registered with :func:`register_metric` out again (tests, experiments)."""
    return METRICS.pop(name)


def register_count(count: Count) -> Count:
    """Add a count to :data:`COUNTS` (after the others): every span is counted with it from
    then on, a metric may need it, and the per-span file lists it (``written``). The same
    count again is harmless, as in every registry."""
    if COUNTS.get(count.name) is count:
        return count
    if count.name in COUNTS or count.name in METRICS or hasattr(SpanScore, count.name):
        raise ValueError(f"a metric or count named {count.name!r} exists already")
    COUNTS[count.name] = count
    return count


def unregister_count(name: str) -> Count:
    """Take a count out again; refused while a metric needs it."""
    users = [m.name for m in METRICS.values() if name in m.counts]
    if users:
        raise ValueError(f"count {name!r} is needed by {', '.join(users)}; unregister them first")
    return COUNTS.pop(name)


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
    counts = list(COUNTS)
    out = np.zeros((len(scores), len(counts) + len(metrics)), dtype=np.float64)
    for i, s in enumerate(scores):
        values = [m.span(s) for m in metrics]
        out[i] = (*(s.counts[c] for c in counts), *(0.0 if v is None else v for v in values))
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
            # A metric's micro average sees only the counts it declares.
            micro = m.micro({c: s[c] for c in m.counts})
            out[name] = {"macro": np.where(over > 0, s[name] / over, np.nan),
                         "micro": np.where(empty, np.nan, micro)}
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
