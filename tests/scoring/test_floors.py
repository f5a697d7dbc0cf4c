"""The model-free floors beside every score: terminal, Markdown and JSON, exact values by hand.

On the hand-built benchmark of conftest.py the floors predict (sample conversations: s1 has
user turns 1, 5, 9, tool results 3, 7 answering calls 2, 6; s2 user 1, results 3, 5 of calls
2, 4; s3 user 1, result 3 of call 2):

    span             gold                        recency                    P, R, F1; source R
    s1-reservations  4->3 3->2                   4->3 3->2 2->1             2/3, 1, 0.8; 1
    s1-flight        10->8 8->7 7->6             10->7 7->6 6->5            1/3, 1/3, 1/3; 1
    s1-price         10->7 7->6                  10->7 7->6 6->5            2/3, 1, 0.8; 1
    s2-remaining     6->5 6->3 5->4 3->2         6->5 5->4 4->1             2/3, 1/2, 4/7; 1/2
    s2-flight        6->5 5->4                   6->5 5->4 4->1             2/3, 1, 0.8; 1
    s3-time (hal.)   4->3 3->2                   4->3 3->2 2->1             2/3, 1, 0.8; 1
    s3-seat (hal.)   (empty)                     4->3 3->2 2->1             0, 0, 0; 0
    s1-route         8->7 7->6                   8->7 7->6 6->5             2/3, 1, 0.8; 1

first-user links every target to user turn 1, which no gold graph of that benchmark holds:
every value is 0 (s3-seat too: a non-empty prediction on an empty gold earns nothing).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtcabench.baselines import FLOORS
from mtcabench.benchmark import load_benchmark
from mtcabench.cli import app
from mtcabench.evaluate import trace_benchmark
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
from mtcabench.scoring import floor_reports, run_scoring, score_floor, score_submission
from mtcabench.results.report import Comparison, ScoreReport

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "raw" / "sample" / "sample-airline.json"

RECENCY_F1 = (5 * 0.8 + 1 / 3 + 4 / 7) / 8
RECENCY_P = (6 * 2 / 3 + 1 / 3) / 8  # six spans at 2/3, s1-flight 1/3, s3-seat 0
RECENCY_SR = 6.5 / 8


def invoke(*args, width: int = 250):
    return runner.invoke(app, [str(a) for a in args], env={"COLUMNS": str(width)})


def report_of(out: Path, name: str) -> ScoreReport:
    return ScoreReport.model_validate_json((out / f"{name}.score.json").read_text())


def test_json_report_holds_both_floors_with_exact_values(bench, submissions, tmp_path):
    folder, _ = bench
    res = invoke("score", submissions[0], "--benchmark", folder, "--out", tmp_path,
                 "--resamples", 200, "--no-plot")
    assert res.exit_code == 0, res.output
    report = report_of(tmp_path, "tokengeist")
    assert [f.method for f in report.floors] == ["recency", "first-user", "string-match"]
    rec = report.floor("recency")
    assert rec.label == "floor: recency (model-free)" and "latest tool result" in rec.description
    o = rec.row("overall").metrics
    assert o["edge_f1"].macro.value == pytest.approx(RECENCY_F1)
    assert o["edge_precision"].macro.value == pytest.approx(RECENCY_P)
    assert o["edge_recall"].macro.value == pytest.approx((5 + 1 / 3 + 1 / 2) / 8)
    assert o["source_recall"].macro.value == pytest.approx(RECENCY_SR)
    # Micro: 13 edge hits of 24 predicted and 17 gold.
    assert o["edge_precision"].micro.value == pytest.approx(13 / 24)
    assert o["edge_recall"].micro.value == pytest.approx(13 / 17)
    hal = rec.row("dependency_type", "hallucination").metrics
    assert hal["hallucinated_source_recall"].macro.value == pytest.approx(0.5)
    assert rec.row("dependency_type", "chained").metrics["edge_f1"].macro.value == \
        pytest.approx(1 / 3)
    # The same groups as the submission's rows, nothing scored empty, intervals around values.
    assert [(r.breakdown, r.group, r.spans) for r in rec.rows] == \
        [(r.breakdown, r.group, r.spans) for r in report.rows]
    assert all(r.missing == 0 for r in rec.rows)
    e = o["edge_f1"].macro
    assert e.low <= e.value <= e.high and e.low < e.high
    first = report.floor("first-user")
    assert {m: v.macro.value for m, v in first.row("overall").metrics.items()} == {
        "edge_precision": 0.0, "edge_recall": 0.0, "edge_f1": 0.0, "source_precision": 0.0,
        "source_recall": 0.0, "hallucinated_source_recall": 0.0,
        "evidence_hit": None}  # the hand-built gold has no evidence range
    assert first.parameters["greeting_words"][:3] == ["afternoon", "again", "all"]


def test_floors_equal_scoring_the_trace_baselines(bench, submissions, tmp_path):
    """A floor's rows are exactly those of the submission `trace --method NAME` writes, for
    every floor of the registry (string-match, the lineage rules as a method, included)."""
    folder, _ = bench
    outs = {m: tmp_path / f"{m}.jsonl" for m in FLOORS}
    assert set(outs) == {"recency", "first-user", "string-match"}
    trace_benchmark(folder, outs, progress=False)
    floors = {f.method: f for f in score_submission(submissions[0], folder,
                                                    resamples=100).floors}
    assert list(floors) == list(FLOORS)
    for method, path in outs.items():
        traced = score_submission(path, folder, resamples=100, floors=False)
        assert traced.floors == []
        assert floors[method].rows == traced.rows
        assert floors[method].parameters == traced.submission.parameters


def test_markdown_has_a_floor_row_under_every_group(bench, submissions, tmp_path):
    folder, _ = bench
    run_scoring([submissions[0]], folder, out=tmp_path, resamples=200, plot=False)
    md = (tmp_path / "tokengeist.score.md").read_text()
    assert "- floors (rows marked ↳)" in md and "`first-user`: model-free" in md
    lines = md.splitlines()
    i = lines.index(next(x for x in lines if x.startswith("| overall | 8 | 1 | 0.750 [")))
    assert lines[i + 1].startswith(f"| ↳ floor recency (model-free) |  | 0 | {RECENCY_P:.3f} [")
    assert f" {RECENCY_F1:.3f} [" in lines[i + 1]
    assert lines[i + 2].startswith("| ↳ floor first-user (model-free) |  | 0 | 0.000 [0.000, "
                                   "0.000] |")
    groups = sum(1 for x in lines if x.startswith("| ") and not x.startswith("| ↳")
                 and not x.startswith("| group") and not x.startswith("| ---"))
    assert sum(1 for x in lines if x.startswith("| ↳ floor")) == 3 * groups
    # Micro tables too: 13/24 edge precision.
    assert f"| ↳ floor recency (model-free) |  | 0 | {13 / 24:.3f} [" in md


def test_terminal_table_shows_floors_and_no_floors_turns_them_off(bench, submissions, tmp_path):
    folder, _ = bench
    res = invoke("score", submissions[0], "--benchmark", folder, "--out", tmp_path / "a",
                 "--resamples", 100, "--no-plot")
    assert res.exit_code == 0, res.output
    rows = [x for x in res.output.splitlines() if "↳ floor recency" in x]
    assert len(rows) == len(report_of(tmp_path / "a", "tokengeist").rows)
    assert f"{RECENCY_F1:.3f}" in rows[0] and f"{RECENCY_SR:.3f}" in rows[0]
    for name in FLOORS:  # one row per group for every floor of the registry
        assert sum(f"↳ floor {name}" in x for x in res.output.splitlines()) == len(rows), name
    assert ("model-free floors recency, first-user and string-match, computed on the same "
            "spans") in " ".join(res.output.split())

    res = invoke("score", submissions[0], "--benchmark", folder, "--out", tmp_path / "b",
                 "--resamples", 100, "--no-plot", "--no-floors")
    assert res.exit_code == 0, res.output
    assert "floor" not in res.output
    assert report_of(tmp_path / "b", "tokengeist").floors == []
    assert "↳" not in (tmp_path / "b" / "tokengeist.score.md").read_text()
    # The submission's own rows do not depend on whether floors were computed.
    assert report_of(tmp_path / "a", "tokengeist").rows == \
        report_of(tmp_path / "b", "tokengeist").rows


def test_comparison_shows_the_floors_under_every_group(bench, submissions, tmp_path):
    """score --compare: each group's A / B row has a floor row per floor beneath it (terminal
    and Markdown), A's and B's reports in compare-*.json hold them; --no-floors drops them."""
    folder, _ = bench
    tg, flat = submissions
    res = invoke("score", "--benchmark", folder, "--compare", tg, flat, "--out", tmp_path / "a",
                 "--resamples", 100, "--no-plot")
    assert res.exit_code == 0, res.output
    cmp = Comparison.model_validate_json((tmp_path / "a" / "compare-tokengeist-vs-flat.json")
                                         .read_text())
    assert [f.method for f in cmp.a.floors] == list(FLOORS) and cmp.b.floors == cmp.a.floors
    assert cmp.a.floor("recency").row("overall").metrics["edge_f1"].macro.value == \
        pytest.approx(RECENCY_F1)
    # Terminal: a dimmed row per floor under every comparison row, with the floor's value.
    lines = res.output.splitlines()
    for name in FLOORS:
        assert sum(f"↳ floor {name}" in x for x in lines) == len(cmp.rows), name
    first = next(x for x in lines if "↳ floor recency" in x)
    assert f"{RECENCY_F1:.3f}" in first and f"{RECENCY_SR:.3f}" in first
    assert "model-free floors recency, first-user and string-match" in " ".join(res.output.split())
    # Markdown: under the overall row of both averages, one row per floor.
    md = (tmp_path / "a" / "compare-tokengeist-vs-flat.md").read_text().splitlines()
    overall = [i for i, x in enumerate(md) if x.startswith("| overall | 8 | ")]
    assert len(overall) == 2
    macro = md[overall[0] + 1]
    assert macro.startswith(f"| ↳ floor recency (model-free) |  | {RECENCY_P:.3f} [")
    assert f" {RECENCY_F1:.3f} [" in macro
    assert md[overall[1] + 1].startswith(f"| ↳ floor recency (model-free) |  | {13 / 24:.3f} [")
    assert sum(x.startswith("| ↳ floor") for x in md) == 2 * len(FLOORS) * len(cmp.rows)
    assert any(x.startswith("- floors (rows marked ↳") for x in md)
    # The A - B figures do not depend on the floors; --no-floors leaves them out.
    res = invoke("score", "--benchmark", folder, "--compare", tg, flat, "--out", tmp_path / "b",
                 "--resamples", 100, "--no-plot", "--no-floors")
    assert res.exit_code == 0, res.output
    assert "floor" not in res.output
    bare = Comparison.model_validate_json((tmp_path / "b" / "compare-tokengeist-vs-flat.json")
                                          .read_text())
    assert bare.a.floors == [] and bare.rows == cmp.rows
    assert "↳" not in (tmp_path / "b" / "compare-tokengeist-vs-flat.md").read_text()


#: A benchmark where first-user earns credit: (turn, span text, gold content edges,
#: gold structural edges) in the sample's s2 conversation.
USER_GOLD = [
    (4, '"ORD"', [(4, 1)], []),  # the call's origin, typed by the user in turn 1
    (6, "HAT227", [(6, 5)], [(5, 4)]),  # from the search result
    (2, "omar_khan_102", [(2, 1)], []),  # the user id of the first call
]


def test_first_user_floor_by_hand(tmp_path):
    """first-user: 1, 0, 1 edge F1 and 1, 0, 1 source recall; recency 0, 0.8, 1 and 1, 1, 1."""
    conv = next(c for c in read_taubench(SAMPLE) if c.task_id == "s2")
    spans = []
    for turn, text, content, structural in USER_GOLD:
        start = conv.turns[turn].text.index(text)
        target = TargetSpan(turn=turn, start=start, end=start + len(text), text=text)
        edges = [Edge(child=c, parent=p) for c, p in content] + [
            Edge(child=c, parent=p, kind=EdgeKind.STRUCTURAL) for c, p in structural]
        graph = ProvenanceGraph(target=turn, nodes=sorted({turn, *(x for e in edges
                                                                    for x in e.pair)}),
                                edges=edges)
        assert check_graph(graph, conv, target) == []
        spans.append(BenchmarkSpan(
            id=span_id(conv.id, target), conversation_id=conv.id, source="taubench",
            domain="airline", span=target, dependency_type=DependencyType.DIRECT, graph=graph,
            depth=depth(graph), sources=sources(graph, conv),
            decision_source=DecisionSource.AUTO, verdict=Verdict.ACCEPT))
    write_records(tmp_path / "conversations.jsonl", [conv])
    write_records(tmp_path / "spans.jsonl", spans)
    bench = load_benchmark(tmp_path)
    first = score_floor("first-user", bench)
    assert [s.edge_f1 for s in first.scores] == [1.0, 0.0, 1.0]
    assert [s.source_recall for s in first.scores] == [1.0, 0.0, 1.0]
    # recency at turn 4: 4->3, 3->2, 2->1 (no gold edge; user 1 is a gold source).
    rec = score_floor("recency", bench)
    assert [round(s.edge_f1, 6) for s in rec.scores] == [0.0, 0.8, 1.0]
    assert [s.source_recall for s in rec.scores] == [1.0, 1.0, 1.0]
    floors = {f.method: f for f in floor_reports(bench, resamples=0)}
    o = floors["first-user"].row("overall").metrics
    assert o["edge_f1"].macro.value == pytest.approx(2 / 3)
    assert o["edge_f1"].macro.low is None  # no resamples, no intervals
    assert floors["recency"].row("overall").metrics["edge_f1"].macro.value == \
        pytest.approx(1.8 / 3)
    json.dumps(floors["first-user"].model_dump(mode="json"))  # serialisable as in the report
