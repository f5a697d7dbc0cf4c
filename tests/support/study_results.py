"""Hand-made study result files on the bundled sample, for the tables' tests.

The sample's three conversations stand in for both the dev and the test sample. Each unit's
turn shares are built by hand (no model): every query puts ``quality`` of its mass on the gold
parents of the spans and the rest on a seeded random spread over the earlier turns, so that a
better "scorer" finds more gold edges; the graphs and scores are then the studies' own replay
(:func:`mtcabench.studies._units.replay_point`), exactly as a real unit's. Passes and seconds are
made up (K + 1 passes, 10 s a pass). ``python -m tests.support.study_results`` rewrites the
committed copy in tests/studies/results/ (a test checks that it is what this writes).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from mtcabench.benchmark import load_benchmark
from mtcabench.evaluate import Tokengeist, TraceSettings
from mtcabench.model import Role
from mtcabench.studies import FLOOR, ResultStore, SearchPoint, ShareTables, StudyResult, Unit
from mtcabench.studies._results import rounded
from mtcabench.studies._units import FLOOR_POINT, replay_point
from tests.support.paths import ROOT, SAMPLE
from tests.support.sample_benchmark import build_sample_benchmark

COMMITTED = ROOT / "tests" / "studies" / "results"
#: (split, scorer, setting, seeds, quality, passes, per_query)
CONFIGS = [
    ("dev", "avg-attention", "default", (0,), 0.25, 1, False),
    ("dev", "ablation", "K=4", (0,), 0.05, 5, False),
    ("dev", "ablation", "K=8", (0,), 0.15, 9, False),
    ("dev", "ablation", "K=16", (0,), 0.35, 17, False),
    ("dev", "ablation", "K=32", (0,), 0.3, 33, False),
    ("test", "avg-attention", "default", (0,), 0.25, 1, False),
    ("test", "ablation", "K=16", (0, 1, 2), 0.35, 17, False),
    ("test", "peer-at2", "train-weights", (0,), 0.2, 1, True),
]
TUNED = {"top_k": 2, "threshold": 0.05, "d_max": 6, "alpha": 0.5}
TUNING = {s: {"tokengeist": {"search": TUNED}, "flat": {"search": TUNED}}
          for s in ("avg-attention", "ablation", "peer-at2")}


def hand_shares(conv, spans, quality: float, seed: int) -> ShareTables:
    """Shares of every query: ``quality`` on the gold parents of the node, the rest random."""
    rng = np.random.default_rng([seed, int(quality * 100), len(conv.turns)])
    parents: dict[int, set[int]] = {}
    for s in spans:
        for e in s.graph.edges:
            parents.setdefault(e.child, set()).add(e.parent)

    def shares(node_turn: int, gold: set[int]) -> dict[int, float]:
        before = list(range(node_turn))
        noise = rng.dirichlet(np.full(len(before), 0.3)) * (1 - quality)
        out = {t: float(n) for t, n in zip(before, noise)}
        for g in gold & set(before):
            out[g] += quality / max(len(gold & set(before)), 1)
        total = sum(out.values())
        return {t: rounded(v / total) for t, v in out.items()}

    tables = ShareTables()
    for s in spans:
        tables.targets[s.id] = shares(s.span.turn, {e.parent for e in s.graph.edges
                                                    if e.child == s.span.turn})
    last = max(s.span.turn for s in spans)
    for key in Tokengeist().query_turns(conv, last):
        turn = key.turn if hasattr(key, "turn") else key
        if conv.turns[turn].role is Role.ASSISTANT:
            tables.turns[key] = shares(turn, parents.get(turn, set()))
    return tables


def write(root: Path, bench_folder: Path) -> list[Path]:
    """Every hand-made result file (and tuning.json) under ``root``."""
    bench = load_benchmark(build_sample_benchmark(SAMPLE, bench_folder))
    store = ResultStore(root / "units")
    by_conv = bench.spans_by_conversation()
    written = []
    points = (SearchPoint("default"), SearchPoint("tuned-tokengeist", _search(), ("tokengeist",)),
              SearchPoint("tuned-flat", _search(), ("flat",)))
    for split, scorer, setting, seeds, quality, passes, per_query in CONFIGS:
        for seed in seeds:
            for cid in sorted(by_conv):
                conv, spans = bench.conversations[cid], by_conv[cid]
                unit = Unit("hand-made", split, conv, tuple(spans), scorer, setting,
                            TraceSettings(seed=seed), points=points)
                tables = hand_shares(conv, spans, quality + 0.02 * seed, seed)
                queries = len(tables.targets) + len(tables.turns)
                result = StudyResult(
                    split=split, conversation_id=cid, scorer=scorer, setting=setting, seed=seed,
                    signature=f"hand-made-{split}-{scorer}-{setting}-{seed}-{cid}",
                    settings={"hand_made": True}, model="smollm2-135m-instruct",
                    commit="hand-made", forward_passes=passes * (queries if per_query else 1),
                    queries=queries, per_query=per_query, spans=len(spans),
                    seconds=10.0 * passes * (queries if per_query else 1),
                    shares=tables.to_json(),
                    points={p.label: replay_point(unit, tables, p) for p in points})
                store.write(result, unit.path(store))
                written.append(unit.path(store))
    for cid in sorted(by_conv):
        conv, spans = bench.conversations[cid], by_conv[cid]
        floor = FLOOR_POINT  # every floor of the registry, as the plan's floor units
        unit = Unit("hand-made", "test", conv, tuple(spans), FLOOR, "floors", points=(floor,))
        result = StudyResult(split="test", conversation_id=cid, scorer=FLOOR, setting="floors",
                             seed=0, signature=f"hand-made-floors-{cid}", settings={},
                             model=None, commit="hand-made", forward_passes=0, queries=0,
                             spans=len(spans), seconds=0.0,
                             points={"default": replay_point(unit, None, floor)})
        store.write(result, unit.path(store))
        written.append(unit.path(store))
    # The sink study's files: two variants of one scorer, the wrong system edges counted.
    sink = ResultStore(root / "sink")
    for order, (name, quality) in enumerate((("shipped", 0.15), ("corrected", 0.3))):
        for cid in sorted(by_conv):
            conv, spans = bench.conversations[cid], by_conv[cid]
            unit = Unit("hand-made", "dev", conv, tuple(spans), "avg-attention", name)
            tables = hand_shares(conv, spans, quality, 7)
            point = replay_point(unit, tables, SearchPoint("default", methods=("tokengeist",)))
            system = {t.index for t in conv.turns if t.role is Role.SYSTEM}
            for span, got in zip(spans, point.methods["tokengeist"]):
                gold = {e.pair for e in span.graph.edges}
                got.extra = {"system_wrong": float(sum(
                    1 for c, q, share in got.edges
                    if share is not None and q in system and (c, q) not in gold))}
            result = StudyResult(split="dev", conversation_id=cid, scorer="avg-attention",
                                 setting=name, seed=0, signature=f"hand-made-sink-{name}-{cid}",
                                 settings={"order": order}, model="smollm2-135m-instruct",
                                 commit="hand-made", forward_passes=1, queries=0,
                                 spans=len(spans), seconds=10.0, points={"default": point})
            path = sink.path("dev", "avg-attention", name, 0, cid)
            sink.write(result, path)
            written.append(path)
    (root / "tuning.json").write_text(json.dumps(TUNING, indent=1, sort_keys=True) + "\n")
    return written


def _search():
    from mtcabench.evaluate import SearchSettings

    return SearchSettings(**TUNED)


if __name__ == "__main__":
    import shutil
    import tempfile

    shutil.rmtree(COMMITTED, ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        paths = write(COMMITTED, Path(tmp))
    print(f"{len(paths)} result files under {COMMITTED}", file=sys.stderr)
