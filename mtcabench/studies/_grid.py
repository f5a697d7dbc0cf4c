"""The grid of search settings, replayed on stored shares, scored, and the choice of defaults."""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from mtcabench.baselines import FLOORS
from mtcabench.benchmark import Benchmark
from mtcabench.evaluate import SearchSettings, TraceSettings, flat, tokengeist
from mtcabench.model import (
    BenchmarkSpan,
    Conversation,
    PredictedEdge,
    ProvenanceGraph,
    SubmissionEntry,
)
from mtcabench.results.metrics import score_span
from mtcabench.studies._shares import ShareTables

#: The grid. Every combination is replayed for Tokengeist; flat has no d_max.
GRID: dict[str, tuple] = {
    "top_k": (1, 2, 3, 4, 5),
    "threshold": (0.0, 0.02, 0.05, 0.1, 0.2),
    "alpha": (0.0, 0.25, 0.5, 0.75, 1.0),
    "d_max": (1, 2, 3, 4, 6, 8),
    "turn_aggregate": ("max", "sum"),
}


@dataclass(frozen=True)
class Point:
    """One grid point: the search settings and the turn aggregate."""

    top_k: int
    threshold: float
    alpha: float
    d_max: int
    turn_aggregate: str

    @property
    def search(self) -> SearchSettings:
        return SearchSettings(top_k=self.top_k, threshold=self.threshold, d_max=self.d_max,
                              alpha=self.alpha)

    def label(self, keys: Sequence[str] = ("top_k", "threshold", "alpha", "d_max",
                                           "turn_aggregate")) -> str:
        return ", ".join(f"{k} {getattr(self, k)}" for k in keys)


def default_point() -> Point:
    """The evaluator's current defaults."""
    s, t = SearchSettings(), TraceSettings()
    return Point(s.top_k, s.threshold, s.alpha, s.d_max, t.turn_aggregate)


def replay(method: str, conversation: Conversation, span: BenchmarkSpan, tables: ShareTables,
           search: SearchSettings) -> ProvenanceGraph | None:
    """The graph trace would give ``span`` from the stored shares; None when trace skips it."""
    if span.id in tables.skipped:
        return None
    shares = tables.shares_fn(span.id)
    if method == "tokengeist":
        return tokengeist(conversation, span.span.turn, shares, search, span.span.text)
    if method == "flat":
        return flat(span.span.turn, shares, search, conversation, span.span.text)
    raise ValueError(f"no replay for method {method!r}")


def to_entry(span: BenchmarkSpan, graph: ProvenanceGraph | None,
             skipped: str | None = None) -> SubmissionEntry:
    """A submission line as trace makes it (edge order; scores rounded once, when written)."""
    if graph is None:
        return SubmissionEntry(span_id=span.id, skipped=skipped)
    return SubmissionEntry(span_id=span.id, edges=[
        PredictedEdge(child=e.child, parent=e.parent,
                      score=None if e.score is None else float(e.score))  # rounded when written
        for e in sorted(graph.edges, key=lambda e: (-e.child, e.parent))])


@dataclass
class Scores:
    """Macro edge F1 and source recall over a set of spans (skipped spans score as empty)."""

    edge_f1: float
    source_recall: float
    spans: int
    empty: int


def score_graphs(bench: Benchmark, spans: list[BenchmarkSpan],
                 graphs: list[ProvenanceGraph | None]) -> Scores:
    f1 = sr = 0.0
    empty = 0
    for s, g in zip(spans, graphs):
        pred = [] if g is None else g.edges
        empty += g is None
        sc = score_span(s, bench.conversations[s.conversation_id], pred)
        f1 += sc.edge_f1
        sr += sc.source_recall
    n = len(spans)
    return Scores(f1 / n, sr / n, n, empty)


def evaluate_point(method: str, point: Point, bench: Benchmark, spans: list[BenchmarkSpan],
                   shares: dict[str, dict[str, ShareTables]]) -> Scores:
    search = point.search
    graphs = [replay(method, bench.conversations[s.conversation_id], s,
                     shares[s.conversation_id][point.turn_aggregate], search) for s in spans]
    return score_graphs(bench, spans, graphs)


def floor_scores(bench: Benchmark, spans: list[BenchmarkSpan]) -> dict[str, Scores]:
    return {name: score_graphs(bench, spans, [
        f.graph(bench.conversations[s.conversation_id], s.span) for s in spans])
        for name, f in FLOORS.items()}


def run_grid(bench, spans, shares, log) -> tuple[dict[Point, Scores], dict[Point, Scores]]:
    """Tokengeist at every grid point, flat at every point without d_max (d_max = 1 keys)."""
    tg, fl = {}, {}
    keys = list(GRID)
    points = [Point(**dict(zip(keys, values))) for values in itertools.product(*GRID.values())]
    t0 = time.perf_counter()
    for n, p in enumerate(points, 1):
        tg[p] = evaluate_point("tokengeist", p, bench, spans, shares)
        flat_key = replace(p, d_max=GRID["d_max"][0])
        if flat_key not in fl:
            fl[flat_key] = evaluate_point("flat", p, bench, spans, shares)
        if n % 100 == 0:
            log(f"grid {n}/{len(points)} ({time.perf_counter() - t0:.0f} s)")
    return tg, fl


#: Points whose objective is within this of the best form the plateau the choice is made on.
PLATEAU = 0.005


def objective(s: Scores) -> float:
    """What the defaults are chosen by: edge F1 and source recall weigh the same."""
    return (s.edge_f1 + s.source_recall) / 2


def changes(p: Point, prefer: Point) -> int:
    return sum(getattr(p, k) != getattr(prefer, k) for k in GRID)


def choose(scores: dict[Point, Scores], prefer: Point) -> Point:
    """The defaults: of the points within :data:`PLATEAU` of the best :func:`objective`, the
    one with the fewest changes from ``prefer`` (the previous defaults), then the best."""
    top = max(objective(s) for s in scores.values())
    plateau = [p for p, s in scores.items() if objective(s) >= top - PLATEAU]
    return max(plateau, key=lambda p: (-changes(p, prefer), round(objective(scores[p]), 9),
                                       round(scores[p].edge_f1, 9)))


def best_edge_f1(scores: dict[Point, Scores], prefer: Point) -> Point:
    """Highest edge F1 alone; ties by source recall, then fewest changes from ``prefer``."""
    return max(scores, key=lambda p: (round(scores[p].edge_f1, 6),
                                      round(scores[p].source_recall, 6), -changes(p, prefer)))
