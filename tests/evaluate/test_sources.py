"""The right sources on a support log a new user would write (real model): the tracking number
in the answer comes from the tool result, the call from the user turn that gave the order id,
never from the system prompt; with or without a sentence before the call, the same graph.

logs/order_said_and_called.json: system prompt, the user gives ORD-55821, the assistant says
"Sure, let me look that order up for you." and calls lookup_order, a JSON tool result with the
tracking number, the answer quoting it. logs/order_called.json: the same, the call alone.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import mtcabench
from mtcabench.evaluate.attribution._attention import sink_positions
from mtcabench.evaluate.attribution._render import render_conversation
from mtcabench.model import EdgeKind
from mtcabench.transcripts import read_transcript

pytestmark = pytest.mark.model

LOGS = Path(__file__).parent / "logs"
TRACKING = "1Z999AA10123456784"
FIELD = f'"tracking_number": "{TRACKING}"'
SYSTEM, USER, CALL, TOOL, ANSWER = range(5)


def graph_of(loaded, name: str):
    messages = json.loads((LOGS / name).read_text())
    return mtcabench.explain(messages, turn=ANSWER, span=TRACKING, model=loaded)


@pytest.fixture(scope="module")
def graphs(loaded):
    return {name: graph_of(loaded, name)
            for name in ("order_said_and_called.json", "order_called.json")}


def test_the_call_is_traced_to_the_user_turn_that_gave_the_order_id(graphs):
    for name, graph in graphs.items():
        pairs = {e.pair for e in graph.edges}
        assert (ANSWER, TOOL) in pairs and (TOOL, CALL) in pairs, name
        assert (CALL, USER) in pairs, (name, graph.edges)


def test_the_answer_is_not_traced_to_the_system_prompt(graphs):
    for name, graph in graphs.items():
        assert (ANSWER, SYSTEM) not in {e.pair for e in graph.edges}, (name, graph.edges)


def test_the_evidence_of_the_tool_edge_is_no_longer_than_the_tracking_number_field(graphs):
    tool = read_transcript(LOGS / "order_called.json").turns[TOOL].text
    for name, graph in graphs.items():
        (edge,) = [e for e in graph.edges if e.pair == (ANSWER, TOOL)]
        best = edge.sentences[0]
        assert TRACKING in tool[best.start:best.end], name
        assert best.end - best.start <= len(FIELD), (name, tool[best.start:best.end])


def test_a_sentence_before_the_call_does_not_change_the_graph(graphs):
    said, called = graphs.values()
    assert {(e.pair, e.kind) for e in said.edges} == {(e.pair, e.kind) for e in called.edges}
    assert all(e.kind is EdgeKind.STRUCTURAL or e.score > 0 for e in said.edges)


def test_the_sink_is_found_by_the_probe_and_lies_in_the_system_prompt(loaded):
    conv = read_transcript(LOGS / "order_called.json")
    layout = render_conversation(conv, loaded.tokenizer).full
    sinks = sink_positions(loaded.model, layout.input_ids)
    # Some text token of the system prompt is a sink (template tokens are no unit anyway)...
    text = [int(t) for t in sinks if layout.token_sentence[t] >= 0]
    assert text and all(layout.token_sentence[t] == 0 for t in text)
    # ...and no token of the user's turn, whose order id the call reads, is one.
    a, b = layout.turn_tokens(USER)
    assert not np.any((sinks >= a) & (sinks < b))
