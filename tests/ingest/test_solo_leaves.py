"""tau2's solo agent works a ticket with no user (issue 45): its conversation has no user
turn, and Tokengeist's only leaf there is turn 0, the prompt that holds the ticket (on the
tiny random-weight model: the structure, not the shares, is what is checked)."""

from __future__ import annotations

import pytest

from mtcabench import explain
from mtcabench.graph import check_graph
from mtcabench.ingest import read_tau2
from mtcabench.model import Role

from tests.support.tau2_runs import solo, write


@pytest.mark.parametrize("turn,span", [(1, "555-010-7788"), (3, "###STOP###")])
def test_tokengeist_s_only_leaf_in_a_solo_run_is_turn_0(tiny_loaded, tmp_path, turn, span):
    (conv,) = read_tau2(write(tmp_path / "solo.json", solo()))
    assert Role.USER not in {t.role for t in conv.turns}
    graph = explain(conv, turn=turn, span=span, model=tiny_loaded)
    assert graph.edges
    parents = {e.parent for e in graph.edges}
    children = {e.child for e in graph.edges}
    leaves = parents - children
    assert leaves == {0}
    # every tool result reached goes on to the call it answers: none is a leaf
    for e in graph.edges:
        if conv.turns[e.child].role is Role.TOOL:
            assert e.parent == conv.call_turn(e.child)
    assert graph.target == turn and check_graph(graph, conv) == []
