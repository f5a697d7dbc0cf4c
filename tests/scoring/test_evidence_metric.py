"""Evidence hit@3 on hand-built spans whose answers are known: which gold evidence ranges a
prediction's sentences overlap, per span, macro and micro, by type, and the floors at 0."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mtcabench.io import write_records
from mtcabench.model import (
    BenchmarkSpan,
    Conversation,
    DecisionSource,
    DependencyType,
    Edge,
    EdgeKind,
    Evidence,
    ProvenanceGraph,
    Role,
    ScoredSentence,
    TargetSpan,
    Turn,
    Verdict,
    span_id,
)
from mtcabench.scoring import (
    EVIDENCE_K,
    evidence_hits,
    gold_evidence,
    score_spans,
    score_submission,
)
from mtcabench.results.metrics import aggregate, span_matrix


def S(start, end, score=0.5):
    return ScoredSentence(start=start, end=end, score=score)


def test_overlap_rank_and_missing_edges():
    gold = {(4, 3): (10, 15), (4, 1): (0, 5), (2, 1): (20, 30)}
    assert EVIDENCE_K == 3
    sentences = {
        (4, 3): [S(0, 10), S(14, 40)],          # second sentence overlaps [10, 15): hit
        (4, 1): [S(5, 9), S(9, 12), S(30, 40), S(0, 5)],  # touching is not overlapping; the
                                                          # hit is 4th, beyond k = 3: miss
        # (2, 1) not predicted: miss
    }
    assert evidence_hits(sentences, gold) == 1
    assert evidence_hits(sentences, gold, k=4) == 2
    assert evidence_hits({(2, 1): [S(25, 26)]}, gold) == 1
    assert evidence_hits({}, gold) == 0 and evidence_hits(sentences, {}) == 0


def test_gold_evidence_is_content_edges_with_a_range():
    edges = [Edge(child=4, parent=3, evidence=Evidence(quote="K41", start=10, end=13)),
             Edge(child=3, parent=2, kind=EdgeKind.STRUCTURAL,
                  evidence=Evidence(quote="call()", start=0, end=6)),
             Edge(child=4, parent=1, evidence=Evidence(quote="K41")),  # no range
             Edge(child=2, parent=1)]
    assert gold_evidence(edges) == {(4, 3): (10, 13)}


# A conversation: a user asks, the assistant calls a tool whose result has one field per line,
# and answers with two of its values. Lines of the tool result (offsets into its text):
TOOL = '{\n"gate": "K41",\n"seat": "17C",\n"meal": "veg"\n}'
GATE, SEAT, MEAL = (TOOL.index(x) for x in ('"gate"', '"seat"', '"meal"'))
ANSWER = "Gate K41, seat 17C. Hi Ana!"


def _bench(tmp_path):
    conv = Conversation(id="hand/1", source="taubench", domain="d", turns=[
        Turn(index=0, role=Role.USER, content="I am Ana. Gate and seat for BK-1?"),
        Turn.model_validate({"index": 1, "role": "assistant", "content": "",
                             "tool_calls": [{"id": "c", "name": "get", "arguments": {}}]}),
        Turn(index=2, role=Role.TOOL, content=TOOL, tool_call_id="c"),
        Turn(index=3, role=Role.ASSISTANT, content=ANSWER)])
    def span(text, dtype, edges):
        start = ANSWER.index(text)
        t = TargetSpan(turn=3, start=start, end=start + len(text), text=text)
        return BenchmarkSpan(
            id=span_id(conv.id, t), conversation_id=conv.id, source="taubench", domain="d",
            span=t, dependency_type=dtype, depth=1, sources=sorted({e.parent for e in edges
                                                                    if e.parent != 1}),
            graph=ProvenanceGraph(target=3, nodes=sorted({3, *(x for e in edges for x in e.pair)}),
                                  edges=edges),
            decision_source=DecisionSource.AUTO, verdict=Verdict.ACCEPT)
    call = Edge(child=2, parent=1, kind=EdgeKind.STRUCTURAL,
                evidence=Evidence(quote="get({})", start=0, end=7))
    gate = span("K41", DependencyType.DIRECT, [
        Edge(child=3, parent=2, evidence=Evidence(quote="K41", start=GATE + 9, end=GATE + 12)),
        call])
    seat = span("17C", DependencyType.DIRECT, [
        Edge(child=3, parent=2, evidence=Evidence(quote="17C", start=SEAT + 9, end=SEAT + 12)),
        call])
    both = span("Gate K41, seat 17C", DependencyType.MULTI_SOURCE, [
        Edge(child=3, parent=2, evidence=Evidence(quote="K41", start=GATE + 9, end=GATE + 12)),
        Edge(child=3, parent=0, evidence=Evidence(quote="Gate and seat", start=10, end=23)),
        call])
    ana = span("Ana", DependencyType.DIRECT, [Edge(child=3, parent=0)])  # no evidence range
    folder = tmp_path / "bench"
    folder.mkdir()
    write_records(folder / "conversations.jsonl", [conv])
    write_records(folder / "spans.jsonl", [gate, seat, both, ana])
    return folder, [gate, seat, both, ana]


def _line(span, edges):
    return {"span_id": span.id, "edges": edges}


def _edge(child, parent, *ranges):
    return {"child": child, "parent": parent, "score": 0.9,
            "sentences": [{"start": a, "end": b, "score": 0.9 - 0.1 * i}
                          for i, (a, b) in enumerate(ranges)]}


def test_score_reports_evidence_hit_by_hand(tmp_path):
    folder, (gate, seat, both, ana) = _bench(tmp_path)
    line = lambda x: len(TOOL[x:].split("\n")[0])  # noqa: E731
    sub = tmp_path / "sub.jsonl"
    sub.write_text("\n".join(json.dumps(x) for x in [
        {"kind": "submission", "method": "hand"},
        # gate: the gate line first: hit.
        _line(gate, [_edge(3, 2, (GATE, GATE + line(GATE)), (SEAT, SEAT + line(SEAT)))]),
        # seat: right turn, wrong lines (gate, meal): miss, though the edge is right.
        _line(seat, [_edge(3, 2, (GATE, GATE + line(GATE)), (MEAL, MEAL + line(MEAL)))]),
        # both: the tool edge hits on its third sentence; the user edge is not predicted.
        _line(both, [_edge(3, 2, (MEAL, MEAL + 5), (SEAT, SEAT + 3), (GATE + 10, GATE + 11))]),
        _line(ana, [_edge(3, 0, (0, 9))]),
    ]) + "\n", encoding="utf-8")
    report = score_submission(sub, folder, resamples=200)
    row = report.row("overall").metrics["evidence_hit"]
    # Per span: gate 1/1, seat 0/1, both 1/2; ana has no evidence range (left out).
    assert row.macro.value == pytest.approx((1 + 0 + 0.5) / 3)
    assert row.micro.value == pytest.approx(2 / 4)
    assert row.macro.low <= row.macro.value <= row.macro.high
    assert report.row("dependency_type", "multi-source").metrics["evidence_hit"].macro.value \
        == pytest.approx(0.5)
    assert report.row("dependency_type", "direct").metrics["evidence_hit"].micro.value \
        == pytest.approx(1 / 2)
    # Edge recall of the seat span is perfect: evidence hit tells the wrong place apart.
    assert report.definitions["evidence_hit"].startswith("share of gold content edges")
    # Read without the benchmark, then checked against it: the same counts.
    from mtcabench.benchmark import load_benchmark
    from mtcabench.results.submission import check_against_benchmark, read_submission

    alone, bench = read_submission(sub), load_benchmark(folder)
    assert check_against_benchmark(alone, bench) == []
    scores = {s.span_id: s for s in score_spans(alone, bench).scores}
    assert [(scores[x.id].evidence_hits, scores[x.id].evidence_gold)
            for x in (gate, seat, both, ana)] == [(1, 1), (0, 1), (1, 2), (0, 0)]
    # The floors quote nothing: 0 wherever gold evidence exists.
    for floor in report.floors:
        ev = floor.row("overall").metrics["evidence_hit"]
        assert ev.macro.value == 0.0 and ev.micro.value == 0.0


def test_a_group_without_evidence_is_undefined():
    from mtcabench.results.metrics import SpanScore

    counts = {name: 1 for name in ("edge_hits", "edge_predicted", "edge_gold", "source_hits",
                                   "source_predicted", "source_gold")}
    counts.update(hallucination=0, hal_hits=0, hal_predicted=0, hal_gold=0)
    none = SpanScore("a", {**counts, "evidence_hits": 0, "evidence_gold": 0,
                           "evidence_spans": 0})
    some = SpanScore("b", {**counts, "evidence_hits": 1, "evidence_gold": 2,
                           "evidence_spans": 1})
    assert none.evidence_hit is None and some.evidence_hit == 0.5
    m = span_matrix([none])
    assert np.isnan(aggregate(m.sum(axis=0)[None, :], np.array([1.0]))["evidence_hit"]["macro"][0])
    m = span_matrix([none, some])
    avg = aggregate(m.sum(axis=0)[None, :], np.array([2.0]))["evidence_hit"]
    assert avg["macro"][0] == 0.5 and avg["micro"][0] == 0.5
