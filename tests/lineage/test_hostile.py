"""Hostile tool results: the lineage annotator treats what it cannot parse as free text."""

from __future__ import annotations

from mtcabench.annotate.lineage import LineageConfig, LineageSummary, propose_lineage
from mtcabench.model import Conversation, Role, ToolCall, Turn


def test_a_deeply_nested_tool_result_is_free_text_not_a_crash():
    call = ToolCall(id="c1", name="get_user_details", arguments={"user_id": "mia_li_3668"})
    deep = "[" * 100_000 + "]" * 100_000  # beyond any JSON parser's recursion
    conv = Conversation(id="hostile", source="test", domain="airline", turns=[
        Turn(index=0, role=Role.USER, content="My user id is mia_li_3668."),
        Turn(index=1, role=Role.ASSISTANT, tool_calls=[call]),
        Turn(index=2, role=Role.TOOL, tool_call_id="c1", name=call.name, content=deep),
        Turn(index=3, role=Role.ASSISTANT, content="Thanks, mia_li_3668, I found nothing."),
    ])
    summary = LineageSummary()
    candidates = list(propose_lineage([conv], LineageConfig(), summary=summary))
    assert [c.span.text for c in candidates] == ["mia_li_3668"]
    assert summary.tool_results_not_json == 1
