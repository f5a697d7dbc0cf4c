"""The model-free floors scored on a benchmark's spans, computed once for every reader.

The floors of :mod:`mtcabench.baselines` (every one of ``FLOORS``: ``recency``, ``first-user``,
``string-match``) predict a graph for every span from the conversation alone;
:func:`floor_scores` scores those graphs with the metrics of :mod:`mtcabench.results.metrics`,
exactly as ``trace --method NAME`` then ``score`` would. The scorer puts these scores beside a submission's rows (with intervals); the release stage
averages them for the dataset card's Floors section. Both read them from here.
"""

from __future__ import annotations

from mtcabench.baselines import FLOORS
from mtcabench.benchmark import Benchmark
from mtcabench.results.metrics import SpanScore, score_span


def floor_scores(benchmark: Benchmark, name: str) -> list[SpanScore]:
    """The floor ``name``'s score on every span of the benchmark, in benchmark order."""
    floor = FLOORS[name]
    out = []
    for s in benchmark.spans:
        conv = benchmark.conversation_of(s)
        # A floor quotes no sentence: every gold evidence range is a miss (evidence hit 0).
        out.append(score_span(s, conv, floor.graph(conv, s.span).edges))
    return out


def all_floor_scores(benchmark: Benchmark) -> dict[str, list[SpanScore]]:
    """Every floor's scores (:func:`floor_scores`), in the order reports show the floors."""
    return {name: floor_scores(benchmark, name) for name in FLOORS}
