"""The domains study: Tokengeist against flat over average attention per domain and per agent
model of the real runs (tau2-bench's airline, retail and telecom, tau-bench's airline), with
conversation-clustered intervals; the method is mtcabench/studies/_domains.py.

Resumable, one result file per conversation under benchmarks/results/units/ (a rerun skips
what is there; a stop loses at most the conversation in progress). In the background, at low
priority:

    mkdir -p runs && nohup nice -n 19 .venv/bin/python benchmarks/domains.py --split dev \\
        --per-group 2 > runs/domains.log 2>&1 &

``--table-only`` prints the table from the result files without the model (seconds; a stored
point whose settings or gold changed is replayed from its shares first);
``--write-docs`` also writes it into docs/evaluate.md between its markers.

``--release OUT/release/2.1.0`` runs it on a built release (``scripts/build_benchmark.sh OUT``:
every real run, five domains) instead of the 19 tau2-bench files and the airline runs of
release 2.0; its real value spans (no counterfactual copies, no claims). Keep its result files
apart (``--results``: the result files are per conversation, and a conversation record of
another build is another unit) and its tables under their own markers (``--label``):

    nohup nice -n 19 .venv/bin/python benchmarks/domains.py --split test \
        --release OUT/release/2.1.0 --results benchmarks/results/release-2.1 --label 2.1 \
        > runs/domains-2.1.log 2>&1 &
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]  # this checkout's mtcabench and tests.support, whatever the venv

from tests.support.paths import (  # noqa: E402
    release_2_tau2_files,
    tau2_folder,
    taubench_airline_path,
)

from mtcabench.errors import InputError  # noqa: E402
from mtcabench.studies import (  # noqa: E402
    RESULTS,
    Models,
    ResultStore,
    candidate_table,
    domain_gold,
    domain_table,
    domain_units,
    release_gold,
    run_units,
    write_docs,
)



def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", choices=("dev", "test"), default="dev")
    ap.add_argument("--per-group", type=int, default=2,
                    help="conversations per (domain, agent model), the shortest (default 2)")
    ap.add_argument("--results", type=Path, default=ROOT / RESULTS)
    ap.add_argument("--gold", type=Path, default=ROOT / "runs" / "domains" / "gold",
                    help="where the gold is built once (lineage on the real runs)")
    ap.add_argument("--tau2", type=Path, help="the tau2-bench results folder (default: found "
                    "as the tests find it)")
    ap.add_argument("--raw", type=Path, help="gpt-4o-airline.json (default: as the tests)")
    ap.add_argument("--table-only", action="store_true", help="no model: the table only "
                    "(stored points whose settings or gold changed are replayed first)")
    ap.add_argument("--write-docs", type=Path, nargs="?", const=ROOT / "docs" / "evaluate.md")
    ap.add_argument("--lock", type=Path, help="a flock file held while a unit runs the model")
    ap.add_argument("--release", type=Path, help="a built release folder (its real value "
                    "spans) instead of release 2.0's files")
    ap.add_argument("--label", help="the docs markers' label: domains-LABEL-SPLIT")
    args = ap.parse_args(argv)
    start = time.perf_counter()

    def log(msg: str) -> None:
        stamp = time.strftime("%H:%M:%S")
        print(f"[{stamp} +{(time.perf_counter() - start) / 60:6.1f} min] {msg}", flush=True)

    try:
        if args.release:
            bench = release_gold(args.release)
        else:
            tau2 = args.tau2 or tau2_folder()
            if tau2 is None:
                raise InputError("the tau2-bench results are nowhere: pass --tau2 or run "
                                 "`mtcabench raw fetch`")
            # the 19 files the study was defined on (the folder holds 9 later ones, 2 of them
            # bare lists that need --agent-model)
            bench = domain_gold(args.gold, release_2_tau2_files(Path(tau2)),
                                args.raw or taubench_airline_path())
        store = ResultStore(args.results / "units")  # beside the other studies' units
        units = domain_units(bench, args.split, args.per_group)
        log(f"{len(units)} conversations, {sum(len(u.spans) for u in units)} spans")
        # --table-only replays what a changed setting or gold asks (no model), computes nothing
        run_units(units, store, models=Models(), lock=args.lock, log=log,
                  replay_only=args.table_only)
        table = domain_table([r for _, r in store.results()], bench, args.split,
                             args.per_group)
        results = [r for _, r in store.results()]
        candidate = candidate_table(results, bench, args.split, args.per_group)
        print(table, candidate, sep="\n\n")
        if args.write_docs and table:
            mark = f"domains-{args.label}-{args.split}" if args.label else f"domains-{args.split}"
            write_docs(args.write_docs, table, f"<!-- {mark}:begin -->", f"<!-- {mark}:end -->")
            write_docs(args.write_docs, candidate, f"<!-- {mark}-candidate:begin -->",
                       f"<!-- {mark}-candidate:end -->")
    except (InputError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
