"""A user turn that calls tools, with the real model: the chat template renders it with exact
token ranges, explain traces a tau2 run, and the Tracer takes tau2's messages one at a time
and gives the graph offline tracing gives, the user's call a leaf."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mtcabench.evaluate import Tracer, render_conversation
from mtcabench.explainer import explain
from mtcabench.graph import check_graph
from mtcabench.model import Role
from mtcabench.transcripts import read_transcript

from tests.evaluate.test_render import check_exact

pytestmark = pytest.mark.model

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "telecom_run.json"


def test_a_user_turn_with_calls_renders_with_exact_token_ranges(loaded):
    conv = read_transcript(EXAMPLE)
    assert conv.turns[6].role is Role.USER and conv.turns[6].tool_calls
    check_exact(conv, loaded.tokenizer)
    rendered = render_conversation(conv, loaded.tokenizer)
    segment = rendered.full.text[slice(*rendered.segments[6])]
    assert "check_status_bar({})" in segment and "user" in segment


def test_explain_and_the_tracer_agree_and_keep_the_user_s_call_a_leaf(loaded):
    conv = read_transcript(EXAMPLE)
    offline = explain(conv, span="airplane mode is ON", model=loaded)
    tracer = Tracer(loaded, background=False)
    tracer.add({"role": "system", "content": conv.turns[0].content})
    for m in json.loads(EXAMPLE.read_text())["simulations"][0]["messages"]:
        tracer.add(m)
    assert [t.role for t in tracer.turns] == [t.role for t in conv.turns]
    assert tracer.turns[6].tool_calls == conv.turns[6].tool_calls
    online = tracer.explain(span="airplane mode is ON")
    assert {e.pair for e in online.edges} == {e.pair for e in offline.edges}
    for graph in (online, offline):
        assert check_graph(graph, conv) == []
        assert not any(e.child in (2, 6, 8) for e in graph.edges)  # user turns: leaves
    tracer.close()
    # the recorded turns themselves (as chat messages, the user's calls on the user's turn)
    again = Tracer(loaded, background=False)
    again.extend(conv.turns)
    assert again.turns == conv.turns
    assert {e.pair for e in again.explain(span="airplane mode is ON").edges} == {
        e.pair for e in online.edges}
    again.close()
