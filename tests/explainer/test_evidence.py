"""Evidence inside the turn (real model, real Chromium): `explain` on an agent transcript says
which line of a tool result a value came from, in the terminal tree, explain.json, the HTML
page (highlighted, score on hover), the Python API and the online Tracer alike.

The transcript (transcripts/booking_agent.json) has a tool result of eighteen fields, one per
line as agents pretty-print JSON, and an answer quoting the gate. AT2's learned head weights
(the shipped ones for SmolLM2) put the answer's gate on the tool result's gate line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import mtcabench
from mtcabench.cli import app
from mtcabench.evaluate import Tracer
from mtcabench.model import EdgeKind, ProvenanceGraph
from mtcabench.render._highlight import WEIGHT_FLOOR
from mtcabench.transcripts import read_transcript

pytestmark = [pytest.mark.model, pytest.mark.browser]

BOOKING = Path(__file__).parents[1] / "transcripts" / "examples" / "booking_agent.json"
GATE_LINE = '"gate": "K41"'
runner = CliRunner()


def test_explain_names_the_tool_result_line_of_a_value(tmp_path, browser):
    conv = read_transcript(BOOKING)
    tool = conv.turns[3].text
    res = runner.invoke(app, ["explain", str(BOOKING), "--turn", "4", "--span", "K41",
                              "--method", "flat", "--scorer", "at2", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    # The terminal: the tool turn's edge quotes the gate line, not the result's first line.
    (line,) = [x for x in res.stdout.splitlines() if "turn 3 tool" in x]
    assert f"\u201c{GATE_LINE}\u201d" in line and '"booking_id"' not in line
    # explain.json: the edge's best sentence is that line, as offsets into Turn.text.
    data = json.loads((tmp_path / "explain.json").read_text())
    graph = ProvenanceGraph.model_validate(data["targets"][0]["graphs"]["flat"])
    (edge,) = [e for e in graph.edges if e.parent == 3]
    best = edge.sentences[0]
    assert tool[best.start:best.end] == GATE_LINE  # the line, its indent and newline left out
    # Scores are rounded once, when written: a sentence never outscores its edge.
    assert 0 < best.score <= edge.score and len(edge.sentences) <= 3
    assert [x.score for x in edge.sentences] == sorted((x.score for x in edge.sentences),
                                                       reverse=True)
    # The page: the line highlighted inside the tool turn, its score on hover.
    page = browser.new_page()
    page.goto((tmp_path / f"turn4_{conv.turns[4].text.index('K41')}-"
               f"{conv.turns[4].text.index('K41') + 3}.flat.html").as_uri())
    # Only the sentences that carry weight are painted, shaded by score.
    marks = page.locator("div.turn.tool mark.evidence")
    assert marks.count() == sum(x.score >= WEIGHT_FLOOR * best.score for x in edge.sentences)
    first = page.locator("div.turn.tool mark.evidence[title*='evidence #1 of edge 4\u21923']")
    assert first.inner_text() == GATE_LINE
    assert f"score {best.score:.3g}" in first.get_attribute("title")
    assert GATE_LINE in page.locator("td.quote").first.inner_text()
    page.close()


def test_python_api_and_online_tracer_give_the_same_evidence(loaded):
    messages = json.loads(BOOKING.read_text())
    graph = mtcabench.explain(messages, turn=4, span="K41", model=loaded, scorer="at2",
                              method="flat")
    tracer = Tracer(loaded, scorer="at2")
    for m in messages:
        tracer.add(m)
    online = tracer.explain(4, "K41", method="flat")
    offline_edges = {e.pair: e for e in graph.edges}
    assert {e.pair for e in online.edges} == set(offline_edges)
    for e in online.edges:
        if e.kind is EdgeKind.CONTENT:
            want = offline_edges[e.pair].sentences
            assert [(x.start, x.end) for x in e.sentences] == [(x.start, x.end) for x in want]
            assert [x.score for x in e.sentences] == pytest.approx([x.score for x in want],
                                                                   abs=1e-3)
    tool = read_transcript(BOOKING).turns[3].text
    (edge,) = [e for e in online.edges if e.parent == 3]
    assert tool[edge.sentences[0].start:edge.sentences[0].end] == GATE_LINE
