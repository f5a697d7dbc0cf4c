"""How long `mtcabench show` takes to draw one span with a long graph (linear in its edges).

Generates a benchmark of one conversation of N+1 turns whose span's gold graph is a chain of
N edges (the target down to turn 0), and a submission whose graph is the same chain with
every other edge replaced by a skip over two turns, so that the picture holds edges of all
three kinds. Times the drawing itself (read the submission for the span, HTML page with SVG,
Mermaid text) and the whole `mtcabench show` command in a fresh process.

    python benchmarks/score_show.py [--edges 5000] [--edges 1000 --edges 5000 ...] [--no-cli]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.chain_data import chain_benchmark



def draw_seconds(folder: Path, sid: str) -> float:
    """The drawing as the command does it (the functions both old and new versions have)."""
    from mtcabench.scoring.show import render_mermaid, span_views, write_views

    t0 = time.perf_counter()
    views = span_views([sid], folder / "bench", folder / "bench" / "sub.jsonl")
    write_views(views, folder / "out", "html")
    render_mermaid(views[0])
    return time.perf_counter() - t0


def cli_seconds(folder: Path, sid: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mtcabench", "show", sid, "-b", str(folder / "bench"),
                    "-s", str(folder / "bench" / "sub.jsonl"), "-o", str(folder / "cli"), "--text",
                    "mermaid"], check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--edges", type=int, action="append")
    ap.add_argument("--no-cli", action="store_true", help="Time the drawing only.")
    args = ap.parse_args()
    for n_edges in args.edges or [5000]:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            sid = chain_benchmark(folder / "bench", n_edges)
            draw = draw_seconds(folder, sid)
            line = f"show, {n_edges}-edge gold chain + {n_edges} predicted edges: draw {draw:.2f} s"
            if not args.no_cli:
                line += f", whole `mtcabench show` command {cli_seconds(folder, sid):.2f} s"
            size = sum(p.stat().st_size for p in (folder / "out").iterdir())
            print(f"{line} (page {size / 2**20:.1f} MiB)", flush=True)


if __name__ == "__main__":
    main()
