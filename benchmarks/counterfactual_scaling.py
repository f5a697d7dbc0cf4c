"""Benchmark: ``annotate counterfactual`` on one answer listing the flights of a search result.

One conversation (``tests.support.long_conversations.flight_listing``): a policy, a user's
request, a search call, its result of N flights (number, times, prices), then an answer
listing every flight, one line each ("- HAT0001 departs at 01:00 AM, economy $101"). Each of
the answer's values can be replaced by the same field of any of the N-1 other flights: about
3 N^2 possible edits, which the draw used to build and check all before drawing 3 (1.7 s at
100 flights, 34 s at 300, over 600 s at 1,000); it now checks only the ones it draws. Each
size runs in a fresh process; it prints the seconds and the edits made, then each size's
time over the first size's, beside the ratio of the sizes.

Run: python benchmarks/counterfactual_scaling.py [--sizes 100,300,1000] [--per-conversation 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]  # tests.support

from tests.support.long_conversations import flight_listing

from mtcabench.lineage import conversation_counterfactuals


def one_size(n: int, per_conversation: int) -> dict:
    conv = flight_listing(n)
    t0 = time.perf_counter()
    made = conversation_counterfactuals(conv, per_conversation=per_conversation)
    return {"flights": n, "seconds": time.perf_counter() - t0, "edits": len(made),
            "fields": sorted({c.counterfactual.field for _, c in made})}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100,300,1000")
    ap.add_argument("--per-conversation", type=int, default=3)
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)  # the child's size
    args = ap.parse_args()
    if args.one is not None:
        print(json.dumps(one_size(args.one, args.per_conversation)))
        return 0
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        out = subprocess.run([sys.executable, __file__, "--one", str(n), "--per-conversation",
                              str(args.per_conversation)], capture_output=True, text=True,
                             check=True)
        row = json.loads(out.stdout)
        rows.append(row)
        print(f"{row['flights']:>6} flights: {row['seconds']:7.2f} s, {row['edits']} edits "
              f"({', '.join(row['fields'])})", flush=True)
    first = rows[0]
    for row in rows[1:]:
        print(f"{row['flights']} / {first['flights']} flights: time x"
              f"{row['seconds'] / first['seconds']:.1f} (sizes x"
              f"{row['flights'] / first['flights']:.0f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
