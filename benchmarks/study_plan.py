"""Run the studies' whole plan in order, resumably: the ablation curve on dev, the choice of K,
the test comparison against average attention, AT2's weights on the training split, the peers
on dev, their tuning, the peers on test (docs/evaluate.md, "Studies: the plan").

Run it in the peers' virtual environment (their packages live there), in the background, at
low priority, sharing the machine's heavy-job lock conversation by conversation:

    scripts/setup_peers.sh && mkdir -p runs
    nohup nice -n 19 $(scripts/setup_peers.sh --python) benchmarks/study_plan.py \\
        --lock /work/heavy.lock > runs/study-plan.log 2>&1 &

A stop (Ctrl-C, kill, kill -9) loses at most the conversation in progress: the same command
resumes, skipping every unit whose result file is there (benchmarks/results/units/; keyed by a
signature of its settings, the model and the conversation). ``--stage`` runs some stages only;
``--stage floors`` the model-free floors' units alone (seconds; the log says 0 with the model).
The tables come from the result files, without the model: benchmarks/study_tables.py. After a
change of the search's defaults, ``--replay-only`` replays every stored unit's points from its
shares (no model, minutes), before the tables are written again.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]  # this checkout's mtcabench and tests.support, whatever the venv

from tests.support.paths import taubench_airline_path  # noqa: E402

from mtcabench.errors import InputError  # noqa: E402
from mtcabench.studies import RESULTS, STAGES, Models, load_gold, run_plan  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stage", action="append", choices=STAGES,
                    help="run this stage only (repeatable; default: all, in order)")
    ap.add_argument("--results", type=Path, default=ROOT / RESULTS,
                    help="the result files' folder (default: benchmarks/results)")
    ap.add_argument("--gold", type=Path, default=ROOT / "runs" / "studies" / "gold",
                    help="where the gold is built once (lineage on the real runs)")
    ap.add_argument("--raw", type=Path, help="gpt-4o-airline.json (default: found as the "
                    "tests find it)")
    ap.add_argument("--lock", type=Path, help="a flock file held while a unit runs the model "
                    "(the team's heavy-job lock), released between units")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--replay-only", action="store_true", help="no model: replay the stored "
                    "units whose points' settings or gold changed (a new default), keep the "
                    "weights and the tuning; units not yet computed are left")
    args = ap.parse_args(argv)
    start = time.perf_counter()

    def log(msg: str) -> None:
        stamp = time.strftime("%H:%M:%S")
        print(f"[{stamp} +{(time.perf_counter() - start) / 60:6.1f} min] {msg}", flush=True)

    try:
        bench = load_gold(args.gold, args.raw or taubench_airline_path())
        run_plan(args.stage or STAGES, args.results, bench, models=Models(args.device),
                 lock=args.lock, log=log, replay_only=args.replay_only)
    except (InputError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    log("done")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
