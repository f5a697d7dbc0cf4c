"""A benchmark on the bundled sample: its three conversations with five hand-written gold spans
(every dependency type), for the evaluator's and the studies' tests."""

from __future__ import annotations

from pathlib import Path

from mtcabench.graph import check_graph, depth, sources
from mtcabench.ingest import read_taubench
from mtcabench.io import write_records
from mtcabench.model import (
    BenchmarkSpan,
    DecisionSource,
    DependencyType,
    Edge,
    EdgeKind,
    ProvenanceGraph,
    TargetSpan,
    Verdict,
    span_id,
)

S = EdgeKind.STRUCTURAL

#: Hand-written gold spans on the sample: (task, turn, span text, type, edges).
SAMPLE_SPANS = [
    ("s1", 10, "HAT136", DependencyType.CHAINED,
     [(10, 8), (8, 7), (7, 6, S), (6, 5), (6, 4), (4, 3), (3, 2, S), (2, 1)]),
    ("s1", 10, "$151", DependencyType.DIRECT,
     [(10, 7), (7, 6, S), (6, 5), (6, 4), (4, 3), (3, 2, S), (2, 1)]),
    ("s2", 6, "$412", DependencyType.DIRECT, [(6, 5), (5, 4, S), (4, 1)]),
    ("s2", 6, "$72", DependencyType.MULTI_SOURCE,
     [(6, 5), (6, 3), (5, 4, S), (3, 2, S), (4, 1), (2, 1)]),
    ("s3", 4, "18:25:00", DependencyType.HALLUCINATION, [(4, 3), (3, 2, S), (2, 1)]),
]


def build_sample_benchmark(sample_path: Path, folder: Path) -> Path:
    convs = {c.task_id: c for c in read_taubench(sample_path)}
    spans = []
    for task, turn, text, dtype, edges in SAMPLE_SPANS:
        conv = convs[task]
        start = conv.turns[turn].text.index(text)
        span = TargetSpan(turn=turn, start=start, end=start + len(text), text=text)
        graph = ProvenanceGraph(
            target=turn,
            nodes=sorted({x for e in edges for x in e[:2]}),
            edges=[Edge(child=e[0], parent=e[1], kind=e[2] if len(e) > 2 else EdgeKind.CONTENT)
                   for e in edges],
        )
        problems = check_graph(graph, conv, span, record=task)
        assert not problems, problems
        spans.append(BenchmarkSpan(
            id=span_id(conv.id, span), conversation_id=conv.id, source=conv.source,
            domain=conv.domain, span=span, dependency_type=dtype, graph=graph,
            depth=depth(graph), sources=sources(graph, conv),
            decision_source=DecisionSource.AUTO, verdict=Verdict.ACCEPT))
    folder.mkdir(parents=True, exist_ok=True)
    write_records(folder / "conversations.jsonl", convs.values())
    write_records(folder / "spans.jsonl", spans)
    return folder
