"""Benchmark: lineage on one long conversation (1,000 / 2,000 / 5,000 turns), time and memory.

Two shapes of long conversation: ``taubench``, the 200 TauBench airline conversations laid
end to end (the first system turn, then every other turn of each conversation, call ids made
unique, the list repeated if more turns are asked for): real values, repeated across many
turns, which made lineage quadratic in time (each value scanned every earlier turn); and
``chain``, an agent paging through results with a cursor (each call passes the cursor the
previous result gave), whose graphs grew with the conversation and made the output
quadratic (bounded by ``MAX_GRAPH_TURNS``). Each size runs in a
fresh process; it prints the seconds, the peak RSS, the spans and the output size, then the
ratio of each size's time to the first size's (linear growth: 5,000 turns about 5x 1,000).

Run: python benchmarks/lineage_long.py [--sizes 1000,2000,5000] [--shapes taubench,chain]
     [--file gpt-4o-airline.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]  # tests.support, and the helpers beside

from _memory import PeakRss
from lineage_taubench import default_file
from tests.support.long_conversations import cursor_chain, long_conversation

from mtcabench.lineage import LineageSummary, propose_conversation
from mtcabench.ingest import read_taubench


def one_size(file: Path, turns: int, shape: str) -> dict:
    """Measured in this process: build the conversation, then time lineage on it."""
    conv = (long_conversation(list(read_taubench(file)), turns) if shape == "taubench"
            else cursor_chain(turns))
    size_in = len(conv.model_dump_json())
    summary = LineageSummary()
    with PeakRss(interval=0.01) as mem:
        t0 = time.perf_counter()
        cands = propose_conversation(conv, summary=summary)
        seconds = time.perf_counter() - t0
        size_out = sum(len(c.model_dump_json(exclude_none=True)) + 1 for c in cands)
    return {"turns": len(conv.turns), "seconds": seconds, "peak_mib": mem.peak,
            "above_mib": mem.above, "spans": len(cands), "in_mb": size_in / 1e6,
            "out_mb": size_out / 1e6}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", type=Path, default=default_file())
    ap.add_argument("--sizes", default="1000,2000,5000")
    ap.add_argument("--shapes", default="taubench,chain")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)  # the child's size
    ap.add_argument("--shape", default="taubench", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.file is None or not args.file.is_file():
        print("gpt-4o-airline.json not found: pass --file, set MTCABENCH_TAUBENCH_AIRLINE or "
              "run `mtcabench raw fetch --only taubench/gpt-4o-airline.json`", file=sys.stderr)
        return 3
    if args.one:
        print(json.dumps(one_size(args.file, args.one, args.shape)))
        return 0
    print(f"file: {args.file}")
    print(f"{'shape':>8} {'turns':>6} {'seconds':>8} {'x first':>8} {'peak MiB':>9} "
          f"{'+MiB':>6} {'spans':>6} {'in MB':>6} {'out MB':>7}")
    for shape in args.shapes.split(","):
        first = None
        for size in (int(s) for s in args.sizes.split(",")):
            done = subprocess.run([sys.executable, __file__, "--file", str(args.file),
                                   "--one", str(size), "--shape", shape],
                                  capture_output=True, text=True, check=True)
            r = json.loads(done.stdout.strip().splitlines()[-1])
            first = first or r["seconds"]
            print(f"{shape:>8} {r['turns']:>6} {r['seconds']:>8.2f} "
                  f"{r['seconds'] / first:>8.1f} {r['peak_mib']:>9.0f} {r['above_mib']:>6.0f} "
                  f"{r['spans']:>6} {r['in_mb']:>6.1f} {r['out_mb']:>7.1f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
