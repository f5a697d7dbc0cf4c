"""Benchmark: lineage proposals for the 200 TauBench airline conversations, per rules version.

Prints, for each rules version (lineage-v2, the default, then lineage-v1): the time to propose
(seconds; best and median of several runs, ingest timed apart), the throughput and the spans
found by dependency type, depth and rule; then how many spans and graphs differ between the
two versions.

Run: python benchmarks/lineage_taubench.py [--file gpt-4o-airline.json] [--repeat 5]
     [--rules lineage-v2 --rules lineage-v1]
The file defaults to $MTCABENCH_TAUBENCH_AIRLINE, raw/data/taubench/gpt-4o-airline.json
(after `mtcabench raw fetch`) or the workplace's shared copy beside the checkout.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

from mtcabench.lineage import RULE_SETS, LineageConfig, LineageSummary, propose_lineage
from mtcabench.ingest import read_taubench

ROOT = Path(__file__).resolve().parent.parent


def default_file() -> Path | None:
    for c in (os.environ.get("MTCABENCH_TAUBENCH_AIRLINE"),
              ROOT / "raw" / "data" / "taubench" / "gpt-4o-airline.json",
              ROOT.parent / "shared" / "raw" / "tau-bench" / "gpt-4o-airline.json"):
        if c and Path(c).is_file():
            return Path(c)
    return None


def measure(convs, rules: str, repeat: int):
    """(times, summary, candidates by id) of ``repeat`` runs of one rules version."""
    config = LineageConfig(rules=rules)
    times, summary, cands = [], None, {}
    for _ in range(repeat):
        summary = LineageSummary()
        t0 = time.perf_counter()
        cands = {c.id: c for c in propose_lineage(convs, config, summary=summary)}
        times.append(time.perf_counter() - t0)
    return times, summary, cands


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", type=Path, default=default_file())
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rules", action="append", choices=sorted(RULE_SETS),
                    help="rules version to measure (repeatable; default: lineage-v2, lineage-v1)")
    args = ap.parse_args()
    if args.file is None or not args.file.is_file():
        print("gpt-4o-airline.json not found: pass --file, set MTCABENCH_TAUBENCH_AIRLINE or "
              "run `mtcabench raw fetch --only taubench/gpt-4o-airline.json`", file=sys.stderr)
        return 3

    t0 = time.perf_counter()
    convs = list(read_taubench(args.file))
    ingest_s = time.perf_counter() - t0
    turns = sum(len(c.turns) for c in convs)
    print(f"file: {args.file}")
    print(f"conversations: {len(convs)}, turns: {turns}, ingest: {ingest_s:.2f} s")

    results = {}
    for rules in args.rules or ["lineage-v2", "lineage-v1"]:
        times, summary, cands = measure(convs, rules, args.repeat)
        results[rules] = cands
        best, median = min(times), statistics.median(times)
        print(f"\n{rules}: {len(cands)} spans; time best {best:.2f} s, median {median:.2f} s "
              f"over {args.repeat} runs; {len(convs) / median:.0f} conversations/s, "
              f"{len(cands) / median:.0f} spans/s")
        for line in summary.lines():
            print(line)
    if {"lineage-v1", "lineage-v2"} <= results.keys():
        v1, v2 = results["lineage-v1"], results["lineage-v2"]
        both = v1.keys() & v2.keys()
        changed = [k for k in both if v1[k].graph.pairs() != v2[k].graph.pairs()]
        retyped = [k for k in both if v1[k].dependency_type is not v2[k].dependency_type]
        print(f"\nlineage-v1 -> lineage-v2: {len(both)} spans in both, {len(v2.keys() - both)} "
              f"new, {len(v1.keys() - both)} gone; {len(changed)} graphs changed, "
              f"{len(retyped)} types changed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
