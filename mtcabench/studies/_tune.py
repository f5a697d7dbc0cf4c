"""Search settings tuned per scorer on dev, replayed from the stored shares (no model).

For each scorer and method, every point of the parameter study's grid (:data:`GRID`, the
``max`` turn aggregate the units store; flat has no ``d_max``) is replayed on the scorer's dev
units and scored; the choice is the parameter study's rule (:func:`choose`: edge F1 and
source recall weigh the same, and of the points within :data:`PLATEAU` of the best the one
with the fewest changes from the evaluator's defaults). The choice and its dev figures are
written to ``tuning.json`` beside the result files, which the test stage reads.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from mtcabench.benchmark import Benchmark
from mtcabench.files import atomic_write
from mtcabench.studies._grid import GRID, Point, choose, default_point, evaluate_point, objective
from mtcabench.studies._results import StudyResult, rounded
from mtcabench.studies._shares import ShareTables


def grid_points(method: str) -> list[Point]:
    """The grid of a method at the ``max`` aggregate (flat: one ``d_max``, which it ignores)."""
    axes = {**GRID, "turn_aggregate": ("max",)}
    if method == "flat":
        axes["d_max"] = (default_point().d_max,)
    return [Point(**dict(zip(axes, values))) for values in itertools.product(*axes.values())]


def tune_scorer(bench: Benchmark, results: Sequence[StudyResult]) -> dict[str, dict]:
    """Per method (tokengeist, flat): the chosen search settings and the dev figures."""
    by_conv = bench.spans_by_conversation()
    spans = [s for r in results for s in by_conv[r.conversation_id]]
    missing = [r.conversation_id for r in results if r.shares is None]
    if missing:
        raise ValueError(f"no shares kept for {missing}: they cannot be replayed")
    shares = {r.conversation_id: {"max": ShareTables.from_json(r.shares)} for r in results}
    prefer = default_point()
    out = {}
    for method in ("tokengeist", "flat"):
        scores = {p: evaluate_point(method, p, bench, spans, shares) for p in grid_points(method)}
        chosen = choose(scores, prefer)
        default = scores.get(prefer)
        out[method] = {
            "search": asdict(chosen.search),
            "dev": {"edge_f1": rounded(scores[chosen].edge_f1),
                    "source_recall": rounded(scores[chosen].source_recall),
                    "objective": rounded(objective(scores[chosen]))},
            "dev_at_defaults": None if default is None else {
                "edge_f1": rounded(default.edge_f1),
                "source_recall": rounded(default.source_recall)},
            "points": len(scores),
        }
    out["sample"] = {"conversations": sorted(r.conversation_id for r in results),
                     "spans": len(spans)}
    return out


def write_tuning(path: Path, tuning: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path) as fh:
        fh.write(json.dumps(tuning, indent=1, sort_keys=True) + "\n")


def read_tuning(path: Path) -> dict:
    if not path.is_file():
        raise ValueError(f"{path}: no tuning yet; run the dev and tune stages first")
    return json.loads(path.read_text(encoding="utf-8"))
