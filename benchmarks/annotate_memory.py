"""Peak memory of `annotate run` as the number of conversations grows (records are streamed).

Each size runs in a fresh process (``mtcabench annotate run``, both annotators) against a fast
fake OpenAI-compatible endpoint (tests/annotate), on copies of the 200 TauBench conversations
with new ids, and reports the child's peak RSS. Flat memory means the conversations, requests
and records are streamed rather than loaded.

    python benchmarks/annotate_memory.py [--sizes 100,200,400,800]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.support
sys.path.insert(0, str(ROOT / "benchmarks"))

from annotate_cache_rerun import quoting_responder
from tests.support.annotate_fakes import FakeOpenAI
from tests.support.paths import taubench_airline_path

from mtcabench.ingest import read_taubench
from mtcabench.io import dump_record


def peak_rss_mb(cmd: list[str]) -> tuple[float, float]:
    """Run ``cmd`` in a child (via a small wrapper) and return (peak RSS MB, seconds)."""
    wrapper = ("import resource, subprocess, sys, json;"
               "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, "
               "stderr=subprocess.DEVNULL);"
               "print(json.dumps([r.returncode, "
               "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss]))")
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", wrapper, *cmd], capture_output=True, text=True,
                         check=True)
    secs = time.perf_counter() - t0
    rc, kb = json.loads(out.stdout)
    if rc != 0:
        raise SystemExit(f"run failed ({rc}): {' '.join(cmd)}")
    return kb / 1024, secs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100,200,400,800")
    args = ap.parse_args()
    source = taubench_airline_path()
    if source is None:
        sys.exit("gpt-4o-airline.json not found: run `mtcabench raw fetch` first")
    base = list(read_taubench(source))
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI(quoting_responder) as fake:
        tmp = Path(tmp)
        for n in (int(x) for x in args.sizes.split(",")):
            path = tmp / f"conv-{n}.jsonl"
            with path.open("w") as fh:
                for i in range(n):
                    c = base[i % len(base)]
                    rec = dump_record(c.model_copy(update={"id": f"{c.id}/copy-{i // len(base)}"}))
                    fh.write(json.dumps(rec) + "\n")
            cmd = [sys.executable, "-m", "mtcabench", "annotate", "run", str(path),
                   "-o", str(tmp / f"out-{n}"), "--base-url", fake.base_url, "--model", "fake",
                   "--concurrency", "8", "--no-progress"]
            mb, secs = peak_rss_mb(cmd)
            size_mb = path.stat().st_size / 1e6
            print(json.dumps({"conversations": n, "input_mb": round(size_mb, 1),
                              "peak_rss_mb": round(mb, 1), "seconds": round(secs, 1)}))


if __name__ == "__main__":
    main()
