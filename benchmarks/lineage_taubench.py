"""Benchmark: lineage proposals for the 200 TauBench airline conversations.

Prints the time to propose (seconds; best and median of several runs, ingest timed apart),
the throughput, and the spans found by dependency type and graph depth.

Run: python benchmarks/lineage_taubench.py [--file gpt-4o-airline.json] [--repeat 5]
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

from mtcabench.annotate.lineage import LineageSummary, propose_lineage
from mtcabench.ingest import read_taubench

ROOT = Path(__file__).resolve().parent.parent


def default_file() -> Path | None:
    for c in (os.environ.get("MTCABENCH_TAUBENCH_AIRLINE"),
              ROOT / "raw" / "data" / "taubench" / "gpt-4o-airline.json",
              ROOT.parent / "shared" / "raw" / "tau-bench" / "gpt-4o-airline.json"):
        if c and Path(c).is_file():
            return Path(c)
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", type=Path, default=default_file())
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    if args.file is None or not args.file.is_file():
        print("gpt-4o-airline.json not found: pass --file, set MTCABENCH_TAUBENCH_AIRLINE or "
              "run `mtcabench raw fetch --only taubench/gpt-4o-airline.json`", file=sys.stderr)
        return 3

    t0 = time.perf_counter()
    convs = list(read_taubench(args.file))
    ingest_s = time.perf_counter() - t0

    times, summary, n = [], None, 0
    for _ in range(args.repeat):
        summary = LineageSummary()
        t0 = time.perf_counter()
        n = sum(1 for _ in propose_lineage(convs, summary=summary))
        times.append(time.perf_counter() - t0)

    turns = sum(len(c.turns) for c in convs)
    best, median = min(times), statistics.median(times)
    print(f"file: {args.file}")
    print(f"conversations: {len(convs)}, turns: {turns}, ingest: {ingest_s:.2f} s")
    print(f"lineage proposals: {n} spans; time best {best:.2f} s, median {median:.2f} s "
          f"over {args.repeat} runs; {len(convs) / median:.0f} conversations/s, "
          f"{n / median:.0f} spans/s")
    for line in summary.lines():
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
