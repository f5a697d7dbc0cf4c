"""A user turn that calls tools goes through every stage after ingest: lineage, review's
Label Studio tasks (built and read back), the release tables, view's page data and the
renderer (SVG, HTML, Mermaid, DOT), on the hand-written telecom run of tests/support."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtcabench.benchmark import load_benchmark
from mtcabench.benchmark.tables import conversation_from_row, conversation_row
from mtcabench.cli import app
from mtcabench.graph import check_graph
from mtcabench.io import read_records
from mtcabench.model import Candidate, Conversation, EdgeKind, Role
from mtcabench.render import Drawing, Graph, draw
from mtcabench.review import build_task, read_annotation
from mtcabench.review._annotations import graph_problems

from tests.support.tau2_runs import airline, telecom, write

runner = CliRunner()


def invoke(*args) -> None:
    res = runner.invoke(app, [str(a) for a in args])
    assert res.exit_code == 0, res.output


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """ingest tau2 -> annotate lineage -> review auto-accept -> release build, on the two
    hand-written runs."""
    d = tmp_path_factory.mktemp("tau2-stages")
    write(d / "telecom.json", telecom())
    write(d / "airline.json", airline())
    invoke("ingest", "tau2", d / "telecom.json", d / "airline.json", "--out", d / "c.jsonl")
    invoke("annotate", "lineage", "--in", d / "c.jsonl", "--out", d / "cand.jsonl")
    invoke("review", "auto-accept", "--candidates", d / "cand.jsonl", "--conversations",
           d / "c.jsonl", "--out", d / "rev.jsonl")
    invoke("release", "build", "--version", "0.1.0", "--reviewed", d / "rev.jsonl",
           "--conversations", d / "c.jsonl", "--out", d / "rel")
    return d


def _phone_candidate(d: Path) -> tuple[Candidate, Conversation]:
    convs = {c.id: c for c in read_records(d / "c.jsonl", Conversation)}
    cands = [c for c in read_records(d / "cand.jsonl", Candidate)
             if c.conversation_id.startswith("tau2/telecom/")]
    (cand,) = [c for c in cands if c.span.text == "CX-20417"]
    return cand, convs[cand.conversation_id]


def test_lineage_traces_a_value_of_the_user_s_tool_to_the_user_turn(built):
    cand, conv = _phone_candidate(built)
    assert conv.turns[4].role is Role.USER and conv.turns[4].tool_calls
    assert {(e.pair, e.kind) for e in cand.graph.edges} == {
        ((8, 6), EdgeKind.CONTENT), ((6, 4), EdgeKind.STRUCTURAL)}
    assert check_graph(cand.graph, conv, cand.span) == []


def test_review_tasks_show_the_user_s_calls_and_read_back(built):
    cand, conv = _phone_candidate(built)
    task = build_task(cand, conv)
    texts = [p["text"] for p in task["data"]["dialogue"]]
    assert texts[4] == 'check_status_bar({})\ncheck_network({"detail": "full"})'
    result = task["predictions"][0]["result"] + [
        {"from_name": "verdict", "to_name": "dialogue", "type": "choices",
         "value": {"choices": ["accept"]}}]
    read = read_annotation(result, conv)
    assert read.problems == [] and read.graph.pairs() == cand.graph.pairs()
    assert {e.pair for e in read.graph.edges if e.kind is EdgeKind.STRUCTURAL} == {(6, 4)}
    assert graph_problems(read, conv, cand.span, cand.id) == []


def test_the_release_tables_keep_the_user_s_calls(built):
    _, conv = _phone_candidate(built)
    # the turns, calls of the user's turn included, go through the table's row unchanged
    assert conversation_from_row(conversation_row(conv)).turns == conv.turns
    bench = load_benchmark(built / "rel" / "0.1.0")
    released = bench.conversations[conv.id]
    assert released.turns == conv.turns and released.call_turn(6) == 4
    span = next(s for s in bench.spans if s.span.text == "CX-20417")
    assert span.sources == [4, 6] and span.depth == 2


def test_view_s_page_data_and_the_renderer_draw_the_structural_edge_to_the_user(built, tmp_path):
    bench_dir = built / "rel" / "0.1.0"
    bench = load_benchmark(bench_dir)
    sub = tmp_path / "gold.jsonl"  # a submission predicting the gold graphs
    sub.write_text("\n".join([json.dumps({"kind": "submission", "method": "gold"})] + [
        json.dumps({"span_id": s.id, "edges": [{"child": e.child, "parent": e.parent}
                                               for e in s.graph.edges]})
        for s in bench.spans]) + "\n")
    out = tmp_path / "view"
    res = runner.invoke(app, ["view", str(sub), "--benchmark", str(bench_dir), "--out", str(out)])
    assert res.exit_code == 0, res.output
    data = (out / "data.js").read_text()  # the page's document: turns and spans
    assert "CX-20417" in data and "check_status_bar" in data
    cand, conv = _phone_candidate(built)
    drawing = Drawing("phone", conv, cand.span, [Graph("gold", list(cand.graph.edges),
                      structural=frozenset({(6, 4)}))])
    svg = draw(drawing, "svg")
    assert "#4 user" in svg and "check_status_bar" in draw(drawing, "html")
    assert "t6" in draw(drawing, "mermaid") and "t4" in draw(drawing, "mermaid")
    assert "structural" in draw(drawing, "dot")


def test_the_conversations_file_names_the_agent_and_keeps_metadata_by_name(built):
    lines = [json.loads(line) for line in (built / "c.jsonl").read_text().splitlines()]
    assert [r["agent_implementation"] for r in lines] == ["llm_agent", "llm_agent"]
    assert all(r["schema_version"] == 2 for r in lines)
    assert {k for r in lines for k in r["metadata"]} == {
        "origin", "reward", "termination_reason", "expected_actions", "expected_outputs",
        "system_turn"}
