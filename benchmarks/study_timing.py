"""The studies' model time, measured on a few conversations and extrapolated to the plan.

    flock /work/heavy.lock nice -n 5 $(scripts/setup_peers.sh --python) \\
        benchmarks/study_timing.py --dev 1

Runs every base-scorer configuration of the plan (mtcabench/studies/_plan.py: the curve's K,
the peers' rows) as the studies run them (:func:`mtcabench.studies.run_units`, into a scratch
folder, never the results) on the first ``--dev``/``--test`` conversations of its samples, and
prints seconds per conversation, per 1,000 tokens and per query. The plan's estimate then
scales each planned unit by its own length: a scorer sharing its passes across queries costs
its measured seconds per token times the unit's tokens (up to its last span); a package run once
per query costs its seconds per query-token times the unit's queries times its tokens. AT2
learning costs its masks + 1 passes per conversation at the measured seconds per pass-token.
ContextCite is measured at ``--contextcite-k`` ablations and scaled by K (its cost is K passes
per query); a K of the curve not measured is scaled from K = 32 by K + 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from tests.support.paths import taubench_airline_path  # noqa: E402

from mtcabench.evaluate import Tokengeist, load_model, render_conversation  # noqa: E402
from mtcabench.studies import Models, ResultStore, load_gold, run_units  # noqa: E402
from mtcabench.studies import comparison_units, curve_units, plan  # noqa: E402


def tokens(loaded, unit) -> int:
    last = max(s.span.turn for s in unit.spans)
    return render_conversation(unit.conversation, loaded.tokenizer, upto=last).full.num_tokens


def queries(unit) -> int:
    if unit.queries == "flat":
        return len(unit.spans)
    last = max(s.span.turn for s in unit.spans)
    return len(unit.spans) + len(Tokengeist().query_turns(unit.conversation, last))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dev", type=int, default=1, help="dev conversations measured")
    ap.add_argument("--gold", type=Path, default=ROOT / "runs" / "studies" / "gold")
    ap.add_argument("--k", type=int, action="append", help="chosen K to estimate for "
                    "(default: 16 and 32)")
    ap.add_argument("--skip", action="append", default=[], help="scorer not measured")
    ap.add_argument("--contextcite-k", type=int, default=4)
    ap.add_argument("--scratch", type=Path, default=ROOT / "runs" / "studies" / "timing",
                    help="the measured units' files (a rerun measures only what is missing)")
    args = ap.parse_args()
    bench = load_gold(args.gold, taubench_airline_path())
    loaded = load_model(plan.MODEL)
    weights = None  # the shipped weights: the cost of AT2 does not depend on their values
    cc_k = args.contextcite_k
    rows = {(r.scorer, r.setting): r for r in [
        plan.AVG, *(plan.ablation_row(k) for k in plan.CURVE_K),
        *[r for r in plan.peer_rows(cc_k, weights) if r.scorer != "ablation"]]
        if r.scorer not in args.skip}
    chosen = plan.sample(bench, "dev", args.dev)
    rate: dict[tuple, tuple[str, float]] = {}
    store = ResultStore(args.scratch)
    for key, row in rows.items():
        # labelled "timing": the plan's per-split sample sizes do not apply
        units = plan.units("timing", "timing", [plan.Row(row.scorer, row.setting,
                                                         row.settings, row.queries, (0,))],
                           chosen)
        summary = run_units(units, store, models=Models(loaded=loaded), log=lambda _: None,
                            commit="timing")
        toks = sum(tokens(loaded, u) for u in units)
        qs = sum(r.queries for r in summary.results)
        secs = sum(r.seconds for r in summary.results)
        per_query = any(r.per_query for r in summary.results)
        rate[key] = ("query-token", secs / (qs * toks / len(units))) if per_query else (
            "token", secs / toks)
        print(f"{row.scorer:17s} {row.setting:14s} {len(units)} conv, {toks} tokens, "
              f"{qs} queries, {sum(r.forward_passes for r in summary.results)} passes: "
              f"{secs:.0f} s model, {1000 * secs / toks:.1f} s per 1k "
              f"tokens, {secs / qs:.1f} s per query", flush=True)
    # Extrapolate over the plan.
    def estimate(units) -> float:
        total = 0.0
        for u in units:
            found = rate.get((u.scorer, u.setting))
            k = int(u.setting.split("=")[1]) if u.setting.startswith("K=") else None
            if found is None and u.scorer == "peer-contextcite":
                how, r = rate[("peer-contextcite", f"K={cc_k}")]
                found = (how, r * k / cc_k)
            if found is None and u.scorer == "ablation":
                how, r = rate[("ablation", "K=32")]
                found = (how, r * (k + 1) / 33)
            if found is None:
                print(f"  (not measured: {u.scorer} {u.setting})")
                continue
            how, r = found
            total += r * tokens(loaded, u) * (queries(u) if how == "query-token" else 1)
        return total

    for k in args.k or [16, 32]:
        stages = {
            "curve (dev)": curve_units(bench),
            "comparison (test)": comparison_units(bench, k),
            "peers dev": [u for u in plan.units("peers", "dev", [
                plan.Row(r.scorer, r.setting, r.settings, r.queries, (0,))
                for r in plan.peer_rows(k, None) if r.scorer not in plan.TUNED_AS],
                plan.sample(bench, "dev", plan.DEV_CONVERSATIONS))],
            "peers test": plan.units("peers", "test", plan.peer_rows(k, None),
                                     plan.sample(bench, "test", plan.TEST_CONVERSATIONS)),
        }
        done: set = set()
        total = 0.0
        print(f"\nplan with K = {k}:")
        for name, units in stages.items():
            fresh = [u for u in units if (u.split, u.scorer, u.setting, u.seed,
                                          u.conversation.id) not in done]
            done |= {(u.split, u.scorer, u.setting, u.seed, u.conversation.id) for u in units}
            secs = estimate(fresh)
            total += secs
            print(f"  {name:18s} {len(fresh):3d} new units, about {secs / 60:6.1f} min")
        at2 = plan.AT2_CONVERSATIONS * 33 * 2_200 * rate[("avg-attention", "default")][1]
        total += at2
        print(f"  {'AT2 weights':18s}   {plan.AT2_CONVERSATIONS} conversations x 33 passes, about "
              f"{at2 / 60:6.1f} min\n  total about {total / 3600:.1f} h of model time")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
