"""What the one redaction costs the writers: write_records with no secret held vs three held.

Every record line a writer writes passes :func:`mtcabench.redact.scrubber` (the plain
spelling of each held secret replaced). This writes the same conversations (the sample,
copied to many distinct ids) twice, side by side, with no secret in the environment and
with three (OPENAI_API_KEY, LABEL_STUDIO_API_KEY, HF_TOKEN), best of several rounds, and
prints both times and their ratio; also the full redaction (every spelling, headers) of one
error message, as the CLI's messages get.

    python benchmarks/redact_writers.py [--copies 300] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from mtcabench.ingest import read_taubench
from mtcabench.io import write_records
from mtcabench.redact import redact

ROOT = Path(__file__).resolve().parent.parent
SECRETS = {"OPENAI_API_KEY": "sk-bench-" + "a1" * 20, "LABEL_STUDIO_API_KEY": "f" * 40,
           "HF_TOKEN": "hf_" + "B" * 34}


def best_time(fn, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    convs = list(read_taubench(ROOT / "raw" / "sample" / "sample-airline.json"))
    many = [c.model_copy(update={"id": f"{c.id}-{k}"}) for k in range(args.copies) for c in convs]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "c.jsonl"
        for name in SECRETS:
            os.environ.pop(name, None)
        bare = best_time(lambda: write_records(out, many), args.rounds)
        os.environ.update(SECRETS)
        held = best_time(lambda: write_records(out, many), args.rounds)
        size = out.stat().st_size
    message = ("x" * 250 + " Authorization: Bearer " + SECRETS["OPENAI_API_KEY"]) * 4
    one = best_time(lambda: [redact(message) for _ in range(1000)], args.rounds) / 1000
    print(f"write_records, {len(many)} conversations, {size / 1e6:.1f} MB "
          f"(best of {args.rounds}):")
    print(f"  no secret held     {bare:.3f} s")
    print(f"  3 secrets held     {held:.3f} s   ratio {held / bare:.2f}x")
    print(f"redact() of one {len(message)}-character error message: {one * 1e6:.0f} us")


if __name__ == "__main__":
    main()
