"""Edge verification (``--verify-edges``): does leaving each parent out raise edge precision?

Tokengeist over average attention with the default settings, with and without verification,
on the ``--conversations`` shortest conversations of the parameter study's *dev* split (every
gold span of them; lineage gold on gpt-4o-airline.json, as the parameter study builds it):
macro edge precision, recall, F1 and source recall, and the forward passes of each.

    python benchmarks/verify_edges.py --conversations 1
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from tests.support.paths import taubench_airline_path

from mtcabench.benchmark import load_benchmark
from mtcabench.evaluate import TraceSettings, attribute_spans, get_methods, load_attributor
from mtcabench.graph import edge_prf
from mtcabench.results.metrics import edge_sources
from mtcabench.studies import build_gold, split_of


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--conversations", type=int, default=1)
    ap.add_argument("--out", default="runs/verify-edges")
    args = ap.parse_args()
    bench = load_benchmark(build_gold(Path(args.out) / "gold", taubench_airline_path(), None, None))
    dev = sorted((c for c in bench.conversations.values() if split_of(c.id) == "dev"),
                 key=lambda c: (sum(len(t.text) for t in c.turns), c.id))[: args.conversations]
    att = load_attributor("smollm2-135m-instruct", "avg-attention", TraceSettings())
    methods = get_methods(["tokengeist"])
    totals: dict[bool, list[float]] = {False: [0, 0, 0, 0, 0], True: [0, 0, 0, 0, 0]}
    n = 0
    for conv in dev:
        spans = [s for s in bench.spans if s.conversation_id == conv.id]
        n += len(spans)
        for verify in (False, True):
            before, t0 = att.forward_passes, time.perf_counter()
            res = attribute_spans(att, conv, {s.id: s.span for s in spans}, methods,
                                  TraceSettings(verify_edges=verify))
            tot = totals[verify]
            tot[4] += att.forward_passes - before
            for s in spans:
                g = res.graphs["tokengeist"].get(s.id)
                pred = [] if g is None else [e.pair for e in g.edges]
                p, r, f = edge_prf(pred, [e.pair for e in s.graph.edges])
                got = edge_sources(set(pred), conv)
                tot[0] += p
                tot[1] += r
                tot[2] += f
                tot[3] += len(got & set(s.sources)) / len(s.sources) if s.sources else 1.0
            print(f"{conv.id} verify={verify}: {time.perf_counter() - t0:.0f} s", flush=True)
    print(f"{len(dev)} dev conversation(s), {n} spans (macro):")
    print("| Tokengeist, avg-attention | edge precision | edge recall | edge F1 | source R | "
          "forward passes |")
    print("|---|---:|---:|---:|---:|---:|")
    for verify, tot in totals.items():
        print(f"| {'with' if verify else 'without'} --verify-edges | {tot[0] / n:.3f} | "
              f"{tot[1] / n:.3f} | {tot[2] / n:.3f} | {tot[3] / n:.3f} | {tot[4]:.0f} |")


if __name__ == "__main__":
    main()
