"""Tools called by the user, first-class in the data model and the graph rules: a user turn
may issue calls, a result answers the turn that issued its call whatever its role, its
structural edge goes there, and the user turn stays a leaf. The record's version 2
(agent implementation, user calls) beside version 1 files that read and write unchanged."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from mtcabench.graph import check_graph, infer_dependency_type, path_hops, sources, \
    with_structural_edges
from mtcabench.io import dump_record, read_records, write_records
from mtcabench.model import (
    Conversation,
    DependencyType,
    Edge,
    EdgeKind,
    ProvenanceGraph,
    Role,
    ToolCall,
    Turn,
)


def phone() -> Conversation:
    """0 system, 1 assistant asks, 2 user checks their phone (a call), 3 its result,
    4 user relays, 5 assistant concludes."""
    return Conversation(id="t/phone", source="test", domain="telecom", turns=[
        Turn(index=0, role=Role.SYSTEM, content="Policy."),
        Turn(index=1, role=Role.ASSISTANT, content="Please check your status bar."),
        Turn(index=2, role=Role.USER, tool_calls=[ToolCall(id="u1", name="check_status_bar")]),
        Turn(index=3, role=Role.TOOL, content="airplane mode ON", tool_call_id="u1",
             name="check_status_bar"),
        Turn(index=4, role=Role.USER, content="It says airplane mode is ON."),
        Turn(index=5, role=Role.ASSISTANT, content="Airplane mode is ON: turn it off."),
    ])


def test_a_user_turn_may_issue_calls_and_its_result_answers_it():
    conv = phone()
    assert conv.call_turn(3) == 2 and conv.turns[2].role is Role.USER
    assert conv.turns[2].text == "check_status_bar({})"
    assert conv.schema_version == 2  # a user's calls are a version 2 layout


@pytest.mark.parametrize("role", [Role.SYSTEM, Role.TOOL])
def test_system_and_tool_turns_issue_no_calls(role):
    with pytest.raises(ValidationError, match=f"a {role.value} turn issues tool calls; only "
                       "assistant and user turns do"):
        Turn(index=0, role=role, tool_call_id="x" if role is Role.TOOL else None,
             tool_calls=[ToolCall(id="a", name="f")])


def test_version_2_only_where_its_fields_are_used(tmp_path):
    plain = Conversation(id="t/1", source="s", domain="d", agent_model="m",
                         turns=[Turn(index=0, role=Role.USER, content="hi")])
    assert plain.schema_version == 1 and "agent_implementation" not in dump_record(plain)
    named = Conversation(id="t/2", source="s", domain="d", agent_model="m",
                         agent_implementation="llm_agent", turns=plain.turns)
    assert named.schema_version == 2
    path = tmp_path / "c.jsonl"
    write_records(path, [plain, named, phone()])
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["schema_version"] for r in lines] == [1, 2, 2]
    assert list(read_records(path, Conversation)) == [plain, named, phone()]
    with pytest.raises(ValidationError, match="needs schema_version 2"):
        Conversation(id="t/1", source="s", domain="d", agent_implementation="x",
                     schema_version=1, turns=[Turn(index=0, role=Role.USER, content="hi")])


def test_a_newer_mtcabench_s_version_is_refused_with_the_upgrade_hint():
    with pytest.raises(ValidationError, match="reads 1 to 2"):
        Conversation.model_validate({"kind": "conversation", "schema_version": 3, "id": "x",
                                     "source": "s", "domain": "d",
                                     "turns": [{"index": 0, "role": "user"}]})


def _graph(edges, nodes) -> ProvenanceGraph:
    return ProvenanceGraph(target=5, nodes=nodes, edges=edges)


def test_the_graph_rules_put_the_result_s_structural_edge_on_the_user_turn():
    conv = phone()
    good = _graph([Edge(child=5, parent=4), Edge(child=5, parent=3),
                   Edge(child=3, parent=2, kind=EdgeKind.STRUCTURAL)], [2, 3, 4, 5])
    assert check_graph(good, conv, record="r") == []
    assert sources(good, conv) == [2, 3, 4]
    assert infer_dependency_type(good, conv) is DependencyType.MULTI_SOURCE
    assert path_hops(good) == (1, 1)
    # the result's edge must be the structural one to the user turn that called
    wrong = _graph([Edge(child=5, parent=3), Edge(child=3, parent=1)], [1, 3, 5])
    rules = {v.rule for v in check_graph(wrong, conv, record="r")}
    assert "tool-edge" in rules
    # the user turn stays a leaf: no edge out of it, its call notwithstanding
    leaf = _graph([Edge(child=5, parent=3), Edge(child=3, parent=2, kind=EdgeKind.STRUCTURAL),
                   Edge(child=2, parent=1)], [1, 2, 3, 5])
    assert [v.rule for v in check_graph(leaf, conv, record="r")] == ["exogenous-leaf"]
    # a structural edge from a user turn is no tool-result link
    odd = _graph([Edge(child=5, parent=4), Edge(child=4, parent=2, kind=EdgeKind.STRUCTURAL)],
                 [2, 4, 5])
    assert {"structural-edge", "exogenous-leaf"} <= {v.rule for v in check_graph(odd, conv)}


def test_structural_edges_are_added_to_the_calling_user_turn():
    conv = phone()
    closed = with_structural_edges(_graph([Edge(child=5, parent=3)], [3, 5]), conv)
    assert {(e.pair, e.kind) for e in closed.edges} == {
        ((5, 3), EdgeKind.CONTENT), ((3, 2), EdgeKind.STRUCTURAL)}
    assert closed.nodes == [2, 3, 5] and check_graph(closed, conv) == []
