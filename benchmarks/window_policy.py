"""Shared context windows against a window per turn: what the room costs the windowed spans'
quality, and what it saves in forward passes, on the domains study's conversations.

A span past the model's context is attributed in a context window (docs/evaluate.md, *Long
conversations*). By default each windowed turn gets a window of its own, fitted to the limit:
one more set of passes per such turn. With ``TraceSettings.window_room`` (``--window-room``)
a window is fitted that share of the limit below it and the later turns that still fit share
it and its passes. This study takes the domains study's units of ``--split`` whose spans were
attributed in a window (benchmarks/results/units/, the default), computes them again at each
``--room`` (resumable, one result file per conversation under
benchmarks/results/window-room/units/, setting ``default-room-R``) and compares, on the
windowed spans, Tokengeist's edge F1 and source recall (95% conversation-clustered bootstrap
intervals; the difference paired on the same spans) and the forward passes per conversation::

    python benchmarks/domains.py --split dev          # the default's units, if not there yet
    python benchmarks/window_policy.py --split dev --room 0.05 --room 0.25
    python benchmarks/window_policy.py --split dev --room 0.05 --room 0.25 --table-only \\
        --write-docs

The cost compared is the forward passes: each unit's model seconds are in its result file,
but the default's units were computed at other times and loads.
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
    domain_gold,
    domain_units,
    room_units,
    run_units,
    window_room_table,
    windowed,
    write_docs,
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", choices=("dev", "test"), default="dev")
    ap.add_argument("--room", type=float, action="append", required=True,
                    help="a window room to measure (a share of the limit; repeatable)")
    ap.add_argument("--per-group", type=int, default=2, help="as the domains study's")
    ap.add_argument("--results", type=Path, default=ROOT / RESULTS)
    ap.add_argument("--gold", type=Path, default=ROOT / "runs" / "domains" / "gold")
    ap.add_argument("--table-only", action="store_true", help="no model: the table only")
    ap.add_argument("--write-docs", type=Path, nargs="?", const=ROOT / "docs" / "evaluate.md")
    args = ap.parse_args(argv)
    start = time.perf_counter()

    def log(msg: str) -> None:
        stamp = time.strftime("%H:%M:%S")
        print(f"[{stamp} +{(time.perf_counter() - start) / 60:6.1f} min] {msg}", flush=True)

    try:
        tau2 = tau2_folder()
        if tau2 is None:
            raise InputError("the tau2-bench results are nowhere: run `mtcabench raw fetch`")
        bench = domain_gold(args.gold, release_2_tau2_files(Path(tau2)),
                            taubench_airline_path())
        store = ResultStore(args.results / "units")
        units = domain_units(bench, args.split, args.per_group)
        base_run = run_units(units, store, models=Models(), log=log, replay_only=True)
        if base_run.left:
            raise InputError(f"{base_run.left} of the domains study's {args.split} units are not "
                             f"computed: run benchmarks/domains.py --split {args.split} first")
        base = {r.conversation_id: r for r in base_run.results if windowed(r)}
        targets = [u for u in units if u.conversation.id in base]
        log(f"{len(targets)} of {len(units)} conversations have spans in a context window")
        by_room = {}
        for room in args.room:
            got = run_units(room_units(targets, room),
                            ResultStore(args.results / "window-room" / "units"),
                            models=Models(), log=log, replay_only=args.table_only)
            if got.left:
                raise InputError(f"room {room:g}: {got.left} units not computed; run without "
                                 "--table-only")
            by_room[room] = got.results
        out = window_room_table(args.split, list(base.values()), by_room)
        print(out)
        if args.write_docs:
            mark = f"window-room-{args.split}"
            write_docs(args.write_docs, out, f"<!-- {mark}:begin -->", f"<!-- {mark}:end -->")
    except (InputError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
