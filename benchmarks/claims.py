"""The claims study: Tokengeist against flat and the floors on the annotated claims, per claim
kind, domain and agent model, with conversation-clustered intervals; the method is
mtcabench/studies/_claims.py.

The gold is the claims of a release built by scripts/build_benchmark.sh. Resumable, one result
file per conversation under benchmarks/results/units/ (a rerun skips what is there). In the
background, at low priority:

    scripts/build_benchmark.sh runs/benchmark
    nohup nice -n 19 .venv/bin/python benchmarks/claims.py --release runs/benchmark/release/2.1.0 \\
        --split test > runs/claims.log 2>&1 &

``--table-only`` prints the table from the result files without the model (seconds; a stored
point whose settings or gold changed is replayed from its shares first);
``--write-docs`` also writes it into docs/evaluate.md between its markers. ``--grid`` also
replays Tokengeist's search settings one change at a time on the claims and on the domains
study's values of the split (its gold is built once under --gold, a few minutes, no model):
the settings are chosen on dev; the test split's grid only reports what that choice gives.

``--relay`` computes the claims and the domains study's values of the split again with every
assistant sentence among the queries, and compares an entered turn asked as a whole with the
same turn asked about the sentence relayed (mtcabench/studies/_claims_relay.py; about half an
hour of model time on dev).

``--peers`` runs the peers table's base scorers on the split's shortest claims conversations
instead (issue 47, item 4; mtcabench/studies/_claims_peers.py): in the peers' virtual
environment (their packages live there), for hours, resumable the same way:

    nohup nice -n 19 $(scripts/setup_peers.sh --python) benchmarks/claims.py \\
        --release runs/benchmark/release/2.1.0 --split test --peers > runs/claims-peers.log 2>&1 &
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
from mtcabench.studies import (  # noqa: E402
    RESULTS,
    WEIGHTS,
    Models,
    ResultStore,
    chosen_k,
    claim_bounds,
    claim_errors,
    claim_peer_units,
    claim_peers_table,
    claim_table,
    claim_units,
    claims_of,
    first_hop_shares,
    relay_table,
    relay_units,
    domain_gold,
    domain_units,
    run_units,
    search_table,
    write_docs,
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--release", type=Path, required=True,
                    help="a release with claims (scripts/build_benchmark.sh OUT: OUT/release/V)")
    ap.add_argument("--split", choices=("dev", "test"), default="dev")
    ap.add_argument("--results", type=Path, default=ROOT / RESULTS)
    ap.add_argument("--table-only", action="store_true", help="no model: the table only "
                    "(stored points whose settings or gold changed are replayed first)")
    ap.add_argument("--write-docs", type=Path, nargs="?", const=ROOT / "docs" / "evaluate.md")
    ap.add_argument("--lock", type=Path, help="a flock file held while a unit runs the model")
    ap.add_argument("--grid", action="store_true", help="also the search settings, claims "
                    "beside values (the domains study's units of the split), replayed without "
                    "the model (chosen on dev; test reports)")
    ap.add_argument("--peers", action="store_true", help="the peers table's base scorers on "
                    "the split's shortest claims conversations (hours; in the peers' venv)")
    ap.add_argument("--relay", action="store_true", help="the sentence relayed: the claims and "
                    "the domains study's values of the split again, with every assistant "
                    "sentence among the queries, an entered turn asked as a whole against by "
                    "the sentence relayed (model time; --table-only: the table)")
    ap.add_argument("--gold", type=Path, default=ROOT / "runs" / "domains" / "gold",
                    help="where the domains study's gold is built once (for --grid)")
    args = ap.parse_args(argv)
    start = time.perf_counter()

    def log(msg: str) -> None:
        stamp = time.strftime("%H:%M:%S")
        print(f"[{stamp} +{(time.perf_counter() - start) / 60:6.1f} min] {msg}", flush=True)

    try:
        bench = claims_of(load_benchmark(args.release))
        if not bench.spans:
            raise InputError(f"{args.release}: the release holds no claim (build it with "
                             "scripts/build_benchmark.sh)")
        store = ResultStore(args.results / "units")
        if args.peers:
            return peers(args, bench, store, log)
        if args.relay:
            return relay(args, bench, store, log)
        units = claim_units(bench, args.split)
        log(f"{len(units)} conversations, {sum(len(u.spans) for u in units)} claims")
        # --table-only replays what a changed setting or gold asks (no model), computes nothing
        run_units(units, store, models=Models(), lock=args.lock, log=log,
                  replay_only=args.table_only)
        results = [r for _, r in store.results()]
        table = claim_table(results, bench, args.split)
        errors = claim_errors(results, bench, args.split)
        shares = first_hop_shares(results, bench, args.split)
        bounds = claim_bounds(results, bench, args.split)
        print(table, errors, shares, bounds, sep="\n\n")
        if args.write_docs and table:
            write_docs(args.write_docs, table, f"<!-- claims-{args.split}:begin -->",
                       f"<!-- claims-{args.split}:end -->")
            write_docs(args.write_docs, errors, f"<!-- claims-{args.split}-errors:begin -->",
                       f"<!-- claims-{args.split}-errors:end -->")
            write_docs(args.write_docs, shares, f"<!-- claims-{args.split}-shares:begin -->",
                       f"<!-- claims-{args.split}-shares:end -->")
            write_docs(args.write_docs, bounds, f"<!-- claims-{args.split}-bounds:begin -->",
                       f"<!-- claims-{args.split}-bounds:end -->")
        if args.grid:
            values = values_gold(args)
            sample = {u.conversation.id for u in domain_units(values, args.split, 2)}
            value_results = [r for r in results if r.split == args.split
                             and r.setting == "default" and r.scorer == "avg-attention"
                             and r.seed == 0 and r.conversation_id in sample]
            claim_results = [r for r in results if r.split == args.split
                             and r.setting == "claims"]
            grid = search_table(claim_results, bench, value_results, values, args.split)
            print(grid)
            if args.write_docs and grid:  # dev chooses; test only reports what dev chose
                block = "claims-grid" if args.split == "dev" else "claims-grid-test"
                write_docs(args.write_docs, grid, f"<!-- {block}:begin -->",
                           f"<!-- {block}:end -->")
    except (InputError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    return 0


def peers(args, bench, store: ResultStore, log) -> int:
    """The peers on claims: K chosen on the values' dev curve and AT2's training-split
    weights, both from the studies' result files (benchmarks/study_plan.py)."""
    k = chosen_k([r for _, r in store.results()])
    weights = args.results / WEIGHTS
    if k is None or not weights.is_file():
        raise InputError(f"{args.results}: no K chosen on the dev curve or no AT2 weights "
                         f"({weights}); run benchmarks/study_plan.py --stage curve --stage "
                         "weights first")
    units = claim_peer_units(bench, args.split, k, weights)
    log(f"{len(units)} units, {len({u.conversation.id for u in units})} conversations")
    run_units(units, store, models=Models(), lock=args.lock, log=log,
              replay_only=args.table_only)
    table = claim_peers_table([r for _, r in store.results()], bench, args.split, k)
    print(table)
    if args.write_docs and table:
        write_docs(args.write_docs, table, f"<!-- claims-peers-{args.split}:begin -->",
                   f"<!-- claims-peers-{args.split}:end -->")
    return 0


def values_gold(args):
    """The domains study's gold (built once under --gold): the values beside the claims."""
    return domain_gold(args.gold, release_2_tau2_files(tau2_folder()), taubench_airline_path())


def relay(args, bench, store: ResultStore, log) -> int:
    """The sentence relayed against the whole turn, claims and values side by side."""
    values = values_gold(args)
    units = relay_units(bench, values, args.split)
    log(f"{len(units)} units (claims and values, with every assistant sentence a query)")
    run_units(units, store, models=Models(), lock=args.lock, log=log,
              replay_only=args.table_only)
    table = relay_table([r for _, r in store.results()], bench, values, args.split)
    print(table)
    if args.write_docs and table:
        write_docs(args.write_docs, table, f"<!-- claims-relay-{args.split}:begin -->",
                   f"<!-- claims-relay-{args.split}:end -->")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
