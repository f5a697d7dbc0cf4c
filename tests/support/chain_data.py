"""A benchmark of one long chain, for `show` on long graphs: used by tests/scoring/
test_show_large.py and benchmarks/score_show.py (imported with this folder on sys.path)."""

from __future__ import annotations

import json
from pathlib import Path

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


def chain_benchmark(folder: Path, n_edges: int) -> str:
    """One conversation whose span's gold graph is a chain of ``n_edges`` edges; a submission
    with the chain, every other edge skipping a turn. Returns the span id."""
    n = n_edges + 1 + (n_edges % 2 == 1)
    turns = [Turn(index=k, role=Role.ASSISTANT if k % 2 else Role.USER, content=f"turn {k}")
             for k in range(n)]
    conv = Conversation(id="gen/chain", source="taubench", domain="d", turns=turns)
    t = n - 1
    target = TargetSpan(turn=t, start=0, end=4, text="turn")
    chain = [(c, c - 1) for c in range(t, t - n_edges, -1)]
    graph = ProvenanceGraph(target=t, nodes=sorted({x for p in chain for x in p}),
                            edges=[Edge(child=c, parent=p) for c, p in chain])
    sid = span_id(conv.id, target)
    folder.mkdir(parents=True)
    write_records(folder / "conversations.jsonl", [conv])
    write_records(folder / "spans.jsonl", [BenchmarkSpan(
        id=sid, conversation_id=conv.id, source="taubench", domain="d", span=target,
        dependency_type=DependencyType.CHAINED, graph=graph, depth=n_edges, sources=[0],
        decision_source=DecisionSource.AUTO, verdict=Verdict.ACCEPT)])
    edges = [{"child": c, "parent": p if i % 2 == 0 else max(0, p - 1), "score": 0.5}
             for i, (c, p) in enumerate(chain)]
    (folder / "sub.jsonl").write_text(json.dumps({"span_id": sid, "edges": edges}) + "\n",
                                      encoding="utf-8")
    return sid
