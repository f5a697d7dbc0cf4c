"""The model-free baselines (recency, first-user) on hand-built and real conversations."""

from __future__ import annotations

import pytest

from mtcabench.evaluate import first_user, recency
from mtcabench.evaluate.methods._baselines import is_greeting
from mtcabench.graph import check_graph
from mtcabench.ingest import read_taubench
from mtcabench.model import Conversation, EdgeKind, Role

S = EdgeKind.STRUCTURAL


def conversation(cid: str, turns: list[dict]) -> Conversation:
    return Conversation.model_validate({
        "id": cid, "source": "hand", "domain": "test",
        "turns": [{"index": i, **t} for i, t in enumerate(turns)]})


def call(cid: str, name: str = "get") -> dict:
    return {"role": "assistant", "tool_calls": [{"id": cid, "name": name, "arguments": {}}]}


def result(cid: str, content: str = "{}") -> dict:
    return {"role": "tool", "tool_call_id": cid, "content": content}


#: 0 system, 1 user, 2 call a, 3 result a, 4 answer, 5 user, 6 call b, 7 result b, 8 answer.
TWO_CALLS = conversation("hand/two-calls", [
    {"role": "system", "content": "policy"},
    {"role": "user", "content": "my id is u1"},
    call("a"), result("a", '{"x": 1}'),
    {"role": "assistant", "content": "x is 1"},
    {"role": "user", "content": "and y?"},
    call("b"), result("b", '{"y": 2}'),
    {"role": "assistant", "content": "x is 1 and y is 2"},
])

#: A greeting first; a user turn after the last tool result; a call with two results.
GREETING = conversation("hand/greeting", [
    {"role": "system", "content": "policy"},
    {"role": "user", "content": "Hi there!"},
    {"role": "assistant", "content": "Hello! How can I help?"},
    {"role": "user", "content": "Hello. Is flight HAT1 on time?"},
    {"role": "assistant", "tool_calls": [{"id": "c", "name": "status", "arguments": {}},
                                         {"id": "d", "name": "seat", "arguments": {}}]},
    result("c", '{"status": "on time"}'), result("d", '{"seat": "12A"}'),
    {"role": "user", "content": "Thanks, and my seat?"},
    {"role": "assistant", "content": "It is on time; your seat is 12A."},
])

#: The agent calls a tool before any user turn; only greetings from the user.
NO_USER = conversation("hand/no-user", [
    {"role": "system", "content": "policy"},
    call("e"), result("e"),
    {"role": "assistant", "content": "done"},
    {"role": "user", "content": "hello"},
    {"role": "assistant", "content": "hi"},
])


def pairs(graph) -> list[tuple]:
    return sorted((e.child, e.parent, *([S] if e.kind is S else [])) for e in graph.edges)


@pytest.mark.parametrize("conv, target, edges", [
    # latest tool result -> its call -> the latest user turn before the call
    (TWO_CALLS, 8, [(6, 5), (7, 6, S), (8, 7)]),
    (TWO_CALLS, 4, [(2, 1), (3, 2, S), (4, 3)]),
    # no tool result yet: the latest user turn
    (TWO_CALLS, 2, [(2, 1)]),
    # the user turn after the result is not the call's input; of two results, the latest
    (GREETING, 8, [(4, 3), (6, 4, S), (8, 6)]),
    (GREETING, 2, [(2, 1)]),
    # no user turn before the call: the call is a leaf
    (NO_USER, 3, [(2, 1, S), (3, 2)]),
    # a user turn after the latest result is not looked at
    (NO_USER, 5, [(2, 1, S), (5, 2)]),
])
def test_recency_edges(conv, target, edges):
    graph = recency(conv, target)
    assert pairs(graph) == sorted(edges)
    assert check_graph(graph, conv) == []
    assert all(e.score == 1.0 for e in graph.edges if e.kind is not S)
    assert all(e.score is None for e in graph.edges if e.kind is S)


@pytest.mark.parametrize("conv, target, edges", [
    # the opening user turn is the greeting: the source is the user's next turn
    (TWO_CALLS, 8, [(8, 5)]),
    # only the opening user turn before the target: that one
    (TWO_CALLS, 4, [(4, 1)]),
    # the first turn after the opening one that carries content (greeting-only ones passed over)
    (GREETING, 8, [(8, 3)]),
    (GREETING, 2, [(2, 1)]),
    (NO_USER, 5, [(5, 4)]),
    # no user turn at all: no edge, the target alone
    (NO_USER, 3, []),
])
def test_first_user_edges(conv, target, edges):
    graph = first_user(conv, target)
    assert pairs(graph) == edges
    assert graph.nodes == sorted({target, *(p for _, p in edges)})
    assert check_graph(graph, conv) == []


@pytest.mark.parametrize("text, greeting", [
    ("Hi!", True), ("Hello there.", True), ("Good morning!", True), ("hey 👋", True), ("", True),
    ("Hi, I want to check my upcoming trip.", False), ("Hello! Is HAT1 on time?", False),
    ("thanks", False), ("hi2", False),
])
def test_greetings(text, greeting):
    assert is_greeting(text) is greeting


def test_baselines_are_valid_graphs_on_real_conversations(sample_path, taubench_conversations):
    convs = [*read_taubench(sample_path), *taubench_conversations]
    targets = 0
    for conv in convs:
        for turn in conv.turns:
            if turn.role is Role.ASSISTANT:
                for fn in (recency, first_user):
                    graph = fn(conv, turn.index)
                    assert check_graph(graph, conv, record=conv.id) == [], (fn.__name__, turn.index)
                targets += 1
    assert targets > 500
