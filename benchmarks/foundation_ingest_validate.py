"""Ingest and validation throughput on the real TauBench file, and validation of 3,845 graphs.

Run: .venv/bin/python benchmarks/foundation_ingest_validate.py [PATH_TO_gpt-4o-airline.json]
Prints conversations per second for ingest (parse + validate + write) and graphs per second
for the graph rules, each the best of several repeats (this machine is shared and noisy).
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mtcabench.graph import check_graph, with_structural_edges  # noqa: E402
from mtcabench.ingest import read_taubench, write_conversations  # noqa: E402
from mtcabench.io import load_conversations  # noqa: E402
from mtcabench.model import Edge, ProvenanceGraph, Role, TargetSpan  # noqa: E402

DEFAULT = Path(__file__).resolve().parent.parent.parent / "shared/raw/tau-bench/gpt-4o-airline.json"


def best_of(n: int, fn) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def generated_graphs(convs, n: int, seed: int = 0):
    """n valid graphs over real conversations: answer -> latest tool result (-> its call ->
    the user turn before) and -> the latest user turn, the shape of a typical gold graph."""
    rng = random.Random(seed)
    pool = [(c, t) for c in convs for t in c.turns if t.role is Role.ASSISTANT and t.content]
    out = []
    for conv, turn in (rng.choice(pool) for _ in range(n)):
        earlier = conv.turns[: turn.index]
        users = [t.index for t in earlier if t.role is Role.USER]
        tools = [t.index for t in earlier if t.role is Role.TOOL]
        edges = [Edge(child=turn.index, parent=users[-1])] if users else []
        if tools:
            edges.append(Edge(child=turn.index, parent=tools[-1]))
        nodes = sorted({turn.index, *(e.parent for e in edges)})
        graph = with_structural_edges(ProvenanceGraph(target=turn.index, nodes=nodes, edges=edges), conv)
        call = [e.parent for e in graph.edges if e.kind.value == "structural"]
        if call and users and users[0] < call[0]:
            prev_user = max(u for u in users if u < call[0])
            graph.edges.append(Edge(child=call[0], parent=prev_user))
            graph.nodes = sorted({*graph.nodes, prev_user})
        word = turn.content.split()[0]
        out.append((conv, graph, TargetSpan(turn=turn.index, start=0, end=len(word), text=word)))
    return out


def main() -> None:
    src = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "c.jsonl"
        t_ingest = best_of(3, lambda: write_conversations(out, read_taubench(src)))
        t_load = best_of(3, lambda: load_conversations(out))
        convs = list(load_conversations(out).values())
    n = len(convs)
    print(f"ingest (parse, validate, write) {n} conversations: {t_ingest:.3f} s "
          f"= {n / t_ingest:,.0f} conversations/s")
    print(f"read back + validate {n} conversations: {t_load:.3f} s = {n / t_load:,.0f} conversations/s")
    graphs = generated_graphs(convs, 3845)

    def validate_all():
        bad = sum(1 for conv, g, s in graphs if check_graph(g, conv, s, record="x"))
        assert bad == 0, f"{bad} generated graphs invalid"

    t_val = best_of(5, validate_all)
    print(f"graph rules on 3,845 generated graphs: {t_val * 1000:.1f} ms = "
          f"{3845 / t_val:,.0f} graphs/s")


if __name__ == "__main__":
    main()
