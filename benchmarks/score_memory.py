"""Scoring memory against submission size: a generated ~200 MB submission of long edge lists.

Generates a benchmark (665 conversations of 60 to 120 turns, 3,845 spans) and a valid
submission whose lines list many distinct backward edges each (never more than the
conversation's possible turn pairs), then scores it in a fresh process and prints that
process's peak memory and time. The same is done for a small submission (a few edges per
span) of the same benchmark, so that the two peaks can be compared: scoring memory should be
bounded by the benchmark, not by the submission.

    python benchmarks/score_memory.py [--size-mb 200] [--spans 3845] [--conversations 665]
                                      [--resamples 1000] [--tracemalloc] [--keep DIR]

``--tracemalloc`` also reports the peak of Python allocations (slower: it traces every
allocation). Peak RSS is the process's maximum resident set (``ru_maxrss``); the baseline
line is the RSS after imports and loading the benchmark, before the submission is read.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def generate(folder: Path, n_convs: int, n_spans: int, size_mb: float, seed: int = 0) -> dict:
    """Write bench/ and two submissions (big, small) under ``folder``; returns their sizes."""
    from score_bootstrap import generate as generate_benchmark

    rnd = random.Random(seed)
    bench = folder / "bench"
    bench.mkdir(parents=True, exist_ok=True)
    # score_bootstrap's benchmark, with longer conversations (more edges per span).
    spans = generate_benchmark(bench, n_convs, n_spans, blocks=(15, 30), rnd=rnd)

    # Every distinct backward pair up to the target is a valid edge; keep the share of them
    # that brings the file to about size_mb.
    def line(s, keep: float) -> str:
        t = s.graph.target
        edges = [{"child": c, "parent": p, "score": round(rnd.random(), 6)}
                 for c in range(1, t + 1) for p in range(c) if rnd.random() < keep]
        return json.dumps({"span_id": s.id, "edges": edges}, separators=(",", ":")) + "\n"

    header = json.dumps({"kind": "submission", "method": "generated", "scorer": "none",
                         "model": "none", "parameters": {}}) + "\n"
    full = sum(len(line(s, 1.0)) for s in spans[:200]) / 200 * len(spans)
    keep = min(1.0, size_mb * 2**20 / full)
    sizes = {}
    for name, share in (("big", keep), ("small", 0.0)):
        path = folder / f"{name}.jsonl"
        with path.open("w", encoding="utf-8") as fh:
            fh.write(header)
            for s in spans:
                fh.write(line(s, share) if share else json.dumps(
                    {"span_id": s.id, "edges": [{"child": e.child, "parent": e.parent}
                                                for e in s.graph.edges]}) + "\n")
        sizes[name] = path.stat().st_size
    sizes["benchmark"] = sum(p.stat().st_size for p in bench.iterdir())
    return sizes


def score_child(folder: Path, name: str, resamples: int, trace: bool) -> None:
    """Run in a fresh process: load the benchmark, score one submission, print JSON figures."""
    import tracemalloc

    from mtcabench.benchmark import load_benchmark
    from mtcabench.scoring import score_submission

    bench = load_benchmark(folder / "bench")
    baseline = _rss_mib()
    if trace:
        tracemalloc.start()
    t0 = time.perf_counter()
    report = score_submission(folder / f"{name}.jsonl", bench, resamples=resamples)
    seconds = time.perf_counter() - t0
    traced = tracemalloc.get_traced_memory()[1] / 2**20 if trace else None
    print(json.dumps({"seconds": seconds, "peak_rss_mib": _rss_mib(), "baseline_rss_mib": baseline,
                      "traced_peak_mib": traced, "spans": report.spans.benchmark}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=float, default=200)
    ap.add_argument("--spans", type=int, default=3845)
    ap.add_argument("--conversations", type=int, default=665)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--tracemalloc", action="store_true")
    ap.add_argument("--keep", type=Path, help="Generate into (or reuse) this folder.")
    ap.add_argument("--child", nargs=2, metavar=("FOLDER", "NAME"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        score_child(Path(args.child[0]), args.child[1], args.resamples, args.tracemalloc)
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        t0 = time.perf_counter()
        if args.keep and (folder / "big.jsonl").is_file():
            sizes = {n: (folder / f"{n}.jsonl").stat().st_size for n in ("big", "small")}
            sizes["benchmark"] = sum(p.stat().st_size for p in (folder / "bench").iterdir())
        else:
            sizes = generate(folder, args.conversations, args.spans, args.size_mb)
        print(f"generated in {time.perf_counter() - t0:.1f} s: benchmark "
              f"{sizes['benchmark'] / 2**20:.1f} MiB ({args.spans} spans), submissions "
              f"{sizes['big'] / 2**20:.1f} MiB (long edge lists) and "
              f"{sizes['small'] / 2**20:.2f} MiB (gold-sized edge lists)")
        for name in ("small", "big"):
            cmd = [sys.executable, __file__, "--child", str(folder), name,
                   "--resamples", str(args.resamples)] + (["--tracemalloc"] if args.tracemalloc
                                                           else [])
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode:
                print(f"{name}: scoring failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
                continue
            r = json.loads(done.stdout.strip().splitlines()[-1])
            traced = (f", traced peak {r['traced_peak_mib']:.0f} MiB"
                      if r["traced_peak_mib"] is not None else "")
            print(f"  {name:<5} {sizes[name] / 2**20:8.1f} MiB submission: {r['seconds']:6.1f} s, "
                  f"peak RSS {r['peak_rss_mib']:6.0f} MiB (after loading the benchmark "
                  f"{r['baseline_rss_mib']:.0f} MiB){traced}")


if __name__ == "__main__":
    main()
