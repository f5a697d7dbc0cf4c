"""Lineage on a conversation where the user calls tools of their own (tau2-bench's telecom
shape): every rules version runs through it, and its graphs keep the user turn a leaf, the
result's structural edge on the user turn that called. Domain rules for telecom are not here."""

from __future__ import annotations

import pytest

from mtcabench.lineage import LineageConfig, propose_lineage
from mtcabench.graph import check_graph
from mtcabench.model import Conversation, EdgeKind, Role, ToolCall, Turn

LINE = ToolCall(id="a1", name="get_line_details", arguments={"line_id": "L1002"})
STATUS = ToolCall(id="u1", name="check_status_bar", arguments={"line_id": "L1002"})


def phone() -> Conversation:
    return Conversation(id="t/phone", source="test", domain="telecom", turns=[
        Turn(index=0, role=Role.SYSTEM, content="Ringo Mobile policy."),
        Turn(index=1, role=Role.ASSISTANT, content="Hi! How can I help you today?"),
        Turn(index=2, role=Role.USER, content="My line L1002 has no data."),
        Turn(index=3, role=Role.ASSISTANT, tool_calls=[LINE]),
        Turn(index=4, role=Role.TOOL, tool_call_id="a1", name=LINE.name,
             content='{"line_id": "L1002", "plan_id": "P7731", "data_used_gb": 14.5}'),
        Turn(index=5, role=Role.ASSISTANT, content="Please check your status bar."),
        Turn(index=6, role=Role.USER, tool_calls=[STATUS]),
        Turn(index=7, role=Role.TOOL, tool_call_id="u1", name=STATUS.name,
             content='{"signal": "none", "mode": "airplane", "code": "SB-4417"}'),
        Turn(index=8, role=Role.USER, content="It shows SB-4417 and airplane mode."),
        Turn(index=9, role=Role.ASSISTANT,
             content="Line L1002 is on plan P7731; code SB-4417 means airplane mode is on."),
    ])


@pytest.mark.parametrize("rules", ["lineage-v1", "lineage-v2", "lineage-v3"])
def test_lineage_runs_through_a_user_s_calls_and_keeps_the_user_a_leaf(rules):
    conv = phone()
    candidates = list(propose_lineage([conv], LineageConfig(rules=rules)))
    spans = {c.span.text: c for c in candidates}
    assert {"L1002", "P7731", "SB-4417"} <= set(spans)
    for c in candidates:
        assert check_graph(c.graph, conv, c.span, record=c.conversation_id) == []
        assert not any(e.child in (2, 6, 8) for e in c.graph.edges)  # user turns are leaves
    # a value the user relayed comes from the user's message (or their own tool's result,
    # whose structural edge then goes to the user turn that called it)
    code = spans["SB-4417"].graph
    structural = {e.pair for e in code.edges if e.kind is EdgeKind.STRUCTURAL}
    assert structural <= {(7, 6)} and code.edges
