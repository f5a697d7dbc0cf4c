"""A small benchmark built from the sample, with gold graphs written by hand, and helpers.

Eight spans over the three sample conversations cover every dependency type, an empty gold
graph (a hallucination nothing primed) and depths 0 to 3. Two hand-written submissions,
"tokengeist" and "flat", have per-span scores worked out by hand in test_scoring_cli.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # chain_data, beside (benchmarks use it too)

from mtcabench.graph import check_graph, depth, sources
from mtcabench.ingest import read_taubench, write_conversations
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

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "raw" / "sample" / "sample-airline.json"
S1 = "taubench/airline/sample/task-s1/trial-0"
S2 = "taubench/airline/sample/task-s2/trial-0"
S3 = "taubench/airline/sample/task-s3/trial-0"

D, C, M, H = (DependencyType.DIRECT, DependencyType.CHAINED, DependencyType.MULTI_SOURCE,
              DependencyType.HALLUCINATION)

#: name -> (conversation, turn, span text, type, content edges, structural edges)
GOLD = {
    "s1-reservations": (S1, 4, "4WQ150 and VAAOXJ", D, [(4, 3)], [(3, 2)]),
    "s1-flight": (S1, 10, "HAT136", C, [(10, 8), (8, 7)], [(7, 6)]),
    "s1-price": (S1, 10, "$151", D, [(10, 7)], [(7, 6)]),
    "s2-remaining": (S2, 6, "$72", M, [(6, 5), (6, 3)], [(5, 4), (3, 2)]),
    "s2-flight": (S2, 6, "HAT227", D, [(6, 5)], [(5, 4)]),
    "s3-time": (S3, 4, "18:25:00", H, [(4, 3)], [(3, 2)]),
    "s3-seat": (S3, 4, "your seat 14C is confirmed", H, [], []),
    "s1-route": (S1, 8, "JFK to SEA", D, [(8, 7)], [(7, 6)]),
}


def build_benchmark(folder: Path) -> dict[str, str]:
    """Write conversations.jsonl and spans.jsonl to ``folder``; returns span ids by name."""
    folder.mkdir(parents=True, exist_ok=True)
    convs = {c.id: c for c in read_taubench(SAMPLE)}
    write_conversations(folder / "conversations.jsonl", convs.values())
    spans, ids = [], {}
    for name, (cid, turn, text, dtype, content, structural) in GOLD.items():
        conv = convs[cid]
        start = conv.turns[turn].text.index(text)
        target = TargetSpan(turn=turn, start=start, end=start + len(text), text=text)
        edges = [Edge(child=c, parent=p) for c, p in content] + [
            Edge(child=c, parent=p, kind=EdgeKind.STRUCTURAL) for c, p in structural]
        nodes = sorted({turn} | {x for e in edges for x in e.pair})
        graph = ProvenanceGraph(target=turn, nodes=nodes, edges=edges)
        violations = check_graph(graph, conv, target, record=name)
        assert not violations, violations  # the fixture itself must be a valid benchmark
        sid = span_id(cid, target)
        ids[name] = sid
        spans.append(BenchmarkSpan(
            id=sid, conversation_id=cid, source="taubench", domain="airline", span=target,
            dependency_type=dtype, graph=graph, depth=depth(graph),
            sources=sources(graph, conv), decision_source=DecisionSource.AUTO,
            verdict=Verdict.ACCEPT))
    write_records(folder / "spans.jsonl", spans)
    return ids


#: Hand-written predictions; None = no line for the span, "skip" = a skipped line.
TOKENGEIST = {
    "s1-reservations": [(4, 3), (3, 2)],
    "s1-flight": [(10, 8), (8, 7), (7, 6)],
    "s1-price": [(10, 8), (8, 7), (7, 6)],
    "s2-remaining": [(6, 5), (5, 4)],
    "s2-flight": None,
    "s3-time": [(4, 3), (3, 2), (4, 1)],
    "s3-seat": [],
    "s1-route": [(8, 7), (8, 7), (7, 6)],
}
FLAT = {
    "s1-reservations": [(4, 3)],
    "s1-flight": [(10, 8)],
    "s1-price": [(10, 7)],
    "s2-remaining": [(6, 5), (6, 3)],
    "s2-flight": [(6, 5)],
    "s3-time": [(4, 1)],
    "s3-seat": [(4, 1)],
    "s1-route": "skip",
}


def write_jsonl(path: Path, objects: list[dict]) -> Path:
    path.write_text("".join(json.dumps(o) + "\n" for o in objects), encoding="utf-8")
    return path


def submission_lines(ids: dict[str, str], predictions: dict, method: str | None) -> list[dict]:
    lines = []
    if method:
        lines.append({"kind": "submission", "method": method, "scorer": "avg-attention",
                      "model": "SmolLM2-135M-Instruct", "parameters": {"top_k": 3}})
    for k, (name, edges) in enumerate(predictions.items()):
        if edges is None:
            continue
        if edges == "skip":
            lines.append({"kind": "prediction", "span_id": ids[name], "edges": [],
                          "skipped": "too long"})
            continue
        line = {"span_id": ids[name],
                "edges": [{"child": c, "parent": p, "score": round(0.9 - 0.1 * i, 2)}
                          for i, (c, p) in enumerate(edges)]}
        if k % 2 == 0:  # half the lines name their kind, half leave it out (both are valid)
            line["kind"] = "prediction"
        lines.append(line)
    return lines


@pytest.fixture(scope="session")
def bench(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """(benchmark folder, span ids by name)."""
    folder = tmp_path_factory.mktemp("bench")
    return folder, build_benchmark(folder)


@pytest.fixture(scope="session")
def submissions(bench, tmp_path_factory) -> tuple[Path, Path]:
    """(tokengeist.jsonl, flat.jsonl) for the benchmark."""
    _, ids = bench
    folder = tmp_path_factory.mktemp("subs")
    return (write_jsonl(folder / "tokengeist.jsonl", submission_lines(ids, TOKENGEIST,
                                                                      "tokengeist")),
            write_jsonl(folder / "flat.jsonl", submission_lines(ids, FLAT, "flat")))
