"""Tokengeist speed: one forward pass per conversation vs one per recursion step (same run).

On the first N TauBench airline conversations (gpt-4o-airline.json) with the default model
(SmolLM2-135M-Instruct, CPU unless --device cuda), two answer spans per conversation:

- forward passes per conversation for each base scorer (one for average attention and AT2,
  one per context subsample for AttnTrace), for Tokengeist and flat together;
- wall time per span of Tokengeist with shared passes, against the naive implementation that
  runs one forward pass (set) per recursion step, side by side in this run, and whether the
  two produced the same graphs.

    python benchmarks/evaluate_speed.py --conversations 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.support

from tests.support.paths import taubench_airline_path

from mtcabench.benchmark import load_benchmark
from mtcabench.evaluate import (
    Attributor,
    AttnTraceSettings,
    TraceSettings,
    load_model,
    make_scorer,
    trace_conversation,
)
from tests.support.smoke import answer_span_benchmark
from mtcabench.ingest import read_taubench


def run(attributor, bench, methods, settings, naive=False):
    """(seconds, forward passes, entries) over every conversation of the benchmark."""
    start, passes, entries = time.perf_counter(), attributor.forward_passes, {}
    for cid, spans in bench.spans_by_conversation().items():
        result = trace_conversation(attributor, bench.conversations[cid], spans, methods,
                                    settings, naive=naive)
        for m, es in result.entries.items():
            entries.setdefault(m, []).extend(es)
    return time.perf_counter() - start, attributor.forward_passes - passes, entries


def same_graphs(a, b) -> bool:
    return all([(e.child, e.parent) for e in x.edges] == [(e.child, e.parent) for e in y.edges]
               for x, y in zip(a, b))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conversations", type=int, default=5)
    ap.add_argument("--spans", type=int, default=2, help="spans per conversation")
    ap.add_argument("--scorers", default="avg-attention,at2,attntrace")
    ap.add_argument("--attntrace-subsamples", type=int, default=4)
    ap.add_argument("--naive-scorer", default="avg-attention")
    ap.add_argument("--device", default="auto")
    args = ap.parse_args()

    loaded = load_model(device=args.device)
    convs = list(islice(read_taubench(taubench_airline_path()), args.conversations))
    settings = TraceSettings(scorers={"attntrace": AttnTraceSettings(
        subsamples=args.attntrace_subsamples)})
    with tempfile.TemporaryDirectory() as tmp:
        bench = load_benchmark(answer_span_benchmark(convs, tmp, per_conversation=args.spans))
    n_conv, n_spans = len(bench.conversations), len(bench.spans)
    print(f"model {loaded.name} on {loaded.device}; {n_conv} TauBench conversations, "
          f"{n_spans} spans; settings {settings}")
    print(f"\n{'scorer':14s} {'passes/conv':>11s} {'s/span (tokengeist+flat)':>25s}")
    for name in args.scorers.split(","):
        attributor = Attributor(loaded, make_scorer(name, settings, loaded), seed=settings.seed)
        wall, passes, entries = run(attributor, bench, ["tokengeist", "flat"], settings)
        skipped = {e.span_id for e in entries["tokengeist"] if e.skipped}
        # conversations with at least one span that fits the context (others need no pass)
        traced = len({s.conversation_id for s in bench.spans if s.id not in skipped})
        print(f"{name:14s} {passes / traced:11.1f} {wall / n_spans:25.2f}"
              + (f"   ({len(skipped)} spans skipped: too long; {traced} conversations traced)"
                 if skipped else ""))

    name = args.naive_scorer
    attributor = Attributor(loaded, make_scorer(name, settings, loaded), seed=settings.seed)
    fast_wall, fast_passes, fast = run(attributor, bench, ["tokengeist"], settings)
    naive_wall, naive_passes, naive = run(attributor, bench, ["tokengeist"], settings, naive=True)
    print(f"\nTokengeist with {name}, same run:")
    print(f"  one pass per conversation: {fast_passes:4d} passes, {fast_wall / n_spans:7.2f} s/span")
    print(f"  one pass per step (naive): {naive_passes:4d} passes, {naive_wall / n_spans:7.2f} s/span")
    print(f"  speed-up: {naive_wall / fast_wall:.1f}x; same graphs: "
          f"{same_graphs(fast['tokengeist'], naive['tokengeist'])}")
    sizes = [len(c.turns) for c in bench.conversations.values()]
    print(f"  (conversations of {min(sizes)}-{max(sizes)} turns, median "
          f"{statistics.median(sizes)})")


if __name__ == "__main__":
    main()
