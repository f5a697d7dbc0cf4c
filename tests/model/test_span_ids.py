"""Span ids are unambiguous whatever the conversation id holds ('#', ':', '-'), issue 12.

A span id is ``<conversation id>#<turn>:<start>-<end>``; conversation ids may contain '#'
(and ':' and '-'), so ids are parsed from the right, where the shape is fixed. Every place
that reads a span id back is run here with such conversation ids.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode, InputError
from mtcabench.graph import depth, sources
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
    parse_span_id,
    span_id,
)
from mtcabench.scoring import score_submission
from mtcabench.scoring.show import draw_spans

runner = CliRunner()

HOSTILE_IDS = [
    "taubench/airline/gpt-4o/task-3/trial-0",
    "a#b",
    "x#1:2-3",  # looks like a span id itself
    "x#1:2-3#4:5-6",
    "##",
    "#",
    "conv:with:colons-and-dashes--",
    "ends-with#",
    "ünïcode#日本語:1-2",
    "",
    "spaces and\ttabs#0:0-0 ",
]


@pytest.mark.parametrize("cid", HOSTILE_IDS)
@pytest.mark.parametrize("turn, start, end", [(0, 0, 1), (4, 62, 70), (12, 1234, 99999)])
def test_span_id_round_trips(cid, turn, start, end):
    sid = span_id(cid, TargetSpan(turn=turn, start=start, end=end, text="x" * (end - start)))
    assert parse_span_id(sid) == (cid, turn, start, end)


@pytest.mark.parametrize("text", [
    "no-hash", "a#1:2", "a#1-2:3", "a#x:1-2", "a#1:2-3 ", "a#01:2-3", "a#1:02-3", "a#1:2-03",
    "a#-1:2-3", "a#1:2-3\n", "a#١:٢-٣", "",
])
def test_what_is_not_a_span_id_is_refused(text):
    with pytest.raises(ValueError, match="is not a span id"):
        parse_span_id(text)


def _benchmark(folder: Path, cids: list[str]) -> list[str]:
    """A benchmark with one span per conversation id; returns the span ids."""
    folder.mkdir(parents=True)
    convs, spans = [], []
    for cid in cids:
        conv = Conversation(id=cid, source="taubench", domain="d", turns=[
            Turn(index=0, role=Role.USER, content="my id is 12345"),
            Turn(index=1, role=Role.ASSISTANT, content="your id is 12345")])
        target = TargetSpan(turn=1, start=11, end=16, text="12345")
        graph = ProvenanceGraph(target=1, nodes=[0, 1], edges=[Edge(child=1, parent=0)])
        convs.append(conv)
        spans.append(BenchmarkSpan(
            id=span_id(cid, target), conversation_id=cid, source="taubench", domain="d",
            span=target, dependency_type=DependencyType.DIRECT, graph=graph, depth=depth(graph),
            sources=sources(graph, conv), decision_source=DecisionSource.AUTO,
            verdict=Verdict.ACCEPT))
    write_records(folder / "conversations.jsonl", convs)
    write_records(folder / "spans.jsonl", spans)
    return [s.id for s in spans]


CIDS = ["x#1:2-3", "x", "x_1_2-3", "x:1#2-3", "x/1/2-3"]


def test_scoring_with_hostile_conversation_ids(tmp_path):
    ids = _benchmark(tmp_path / "bench", CIDS)
    sub = tmp_path / "sub.jsonl"
    sub.write_text("".join(json.dumps({"span_id": s, "edges": [{"child": 1, "parent": 0}]}) + "\n"
                           for s in ids), encoding="utf-8")
    report = score_submission(sub, tmp_path / "bench", resamples=0)
    assert report.spans.predicted == len(CIDS)
    assert report.row("overall", "all").metrics["edge_f1"].macro.value == 1.0


def test_an_unknown_span_of_a_known_conversation_is_named_from_the_right(tmp_path):
    _benchmark(tmp_path / "bench", CIDS)
    sub = tmp_path / "sub.jsonl"
    # The conversation "x#1:2-3" exists; this id asks for other offsets in its turn 1.
    sub.write_text(json.dumps({"span_id": "x#1:2-3#1:11-17", "edges": []}) + "\n",
                   encoding="utf-8")
    with pytest.raises(InputError, match=r"conversation 'x#1:2-3'.*no span at turn 1, "
                                         r"characters 11-17"):
        score_submission(sub, tmp_path / "bench", resamples=0)
    sub.write_text(json.dumps({"span_id": "y#1:2-3#1:11-16", "edges": []}) + "\n",
                   encoding="utf-8")
    with pytest.raises(InputError, match=r"conversation 'y#1:2-3' is not in"):
        score_submission(sub, tmp_path / "bench", resamples=0)
    sub.write_text(json.dumps({"span_id": "x#1:2-3#1", "edges": []}) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"not a span id"):
        score_submission(sub, tmp_path / "bench", resamples=0)


def test_show_draws_every_span_even_when_file_names_would_collide(tmp_path):
    ids = _benchmark(tmp_path / "bench", CIDS)
    views, paths = draw_spans(ids, tmp_path / "bench", None, tmp_path / "out")
    assert len(set(paths)) == len(ids)  # "x#1:2-3" and "x_1_2-3" must not overwrite each other
    for view, path in zip(views, paths):
        assert view.span.id in path.read_text(encoding="utf-8")


def test_show_suggests_the_spans_of_the_conversation(tmp_path):
    _benchmark(tmp_path / "bench", CIDS)
    res = runner.invoke(app, ["show", "x#1:2-3#1:0-3", "-b", str(tmp_path / "bench"), "-o",
                              str(tmp_path / "out"), "--text", "none"])
    assert res.exit_code == ExitCode.BAD_INPUT, res.output
    assert "x#1:2-3#1:11-16" in res.output
