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
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mtcabench.io import write_records
from mtcabench.model import (
    BenchmarkSpan,
    Conversation,
    DecisionSource,
    DependencyType,
    Edge,
    ProvenanceGraph,
    Role,
    TargetSpan,
    Turn,
    Verdict,
    span_id,
)


def generate(folder: Path, n_edges: int) -> str:
    """bench/ and sub.jsonl under ``folder``; returns the span id."""
    n = n_edges + 1
    turns = [Turn(index=k, role=Role.ASSISTANT if k % 2 else Role.USER,
                  content=f"turn {k}: the value is {k * 7}") for k in range(n)]
    if turns[-1].role is not Role.ASSISTANT:
        turns.append(Turn(index=n, role=Role.ASSISTANT, content=f"turn {n}: the value"))
    conv = Conversation(id="gen/long-chain", source="taubench", domain="d", turns=turns)
    t = len(turns) - 1
    target = TargetSpan(turn=t, start=0, end=4, text="turn")
    chain = [(c, c - 1) for c in range(t, t - n_edges, -1)]
    graph = ProvenanceGraph(target=t, nodes=sorted({x for p in chain for x in p}),
                            edges=[Edge(child=c, parent=p) for c, p in chain])
    sid = span_id(conv.id, target)
    span = BenchmarkSpan(id=sid, conversation_id=conv.id, source="taubench", domain="d",
                         span=target, dependency_type=DependencyType.CHAINED, graph=graph,
                         depth=n_edges, sources=[0], decision_source=DecisionSource.AUTO,
                         verdict=Verdict.ACCEPT)
    bench = folder / "bench"
    bench.mkdir()
    write_records(bench / "conversations.jsonl", [conv])
    write_records(bench / "spans.jsonl", [span])
    predicted = [{"child": c, "parent": p if i % 2 == 0 else max(0, p - 1), "score": 0.5}
                 for i, (c, p) in enumerate(chain)]
    (folder / "sub.jsonl").write_text(
        json.dumps({"kind": "submission", "method": "m"}) + "\n"
        + json.dumps({"span_id": sid, "edges": predicted}) + "\n", encoding="utf-8")
    return sid


def draw_seconds(folder: Path, sid: str) -> float:
    """The drawing as the command does it (the functions both old and new versions have)."""
    from mtcabench.scoring.show import render_mermaid, span_views, write_views

    t0 = time.perf_counter()
    views = span_views([sid], folder / "bench", folder / "sub.jsonl")
    write_views(views, folder / "out", "html")
    render_mermaid(views[0])
    return time.perf_counter() - t0


def cli_seconds(folder: Path, sid: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mtcabench", "show", sid, "-b", str(folder / "bench"),
                    "-s", str(folder / "sub.jsonl"), "-o", str(folder / "cli"), "--text",
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
            sid = generate(folder, n_edges)
            draw = draw_seconds(folder, sid)
            line = f"show, {n_edges}-edge gold chain + {n_edges} predicted edges: draw {draw:.2f} s"
            if not args.no_cli:
                line += f", whole `mtcabench show` command {cli_seconds(folder, sid):.2f} s"
            size = sum(p.stat().st_size for p in (folder / "out").iterdir())
            print(f"{line} (page {size / 2**20:.1f} MiB)", flush=True)


if __name__ == "__main__":
    main()
