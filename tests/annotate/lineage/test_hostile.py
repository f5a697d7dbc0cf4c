"""Hostile inputs: what lineage cannot parse is free text; long conversations stay linear."""

from __future__ import annotations

import pytest

from mtcabench.lineage import LineageConfig, LineageSummary, propose_lineage
from mtcabench.lineage._config import MAX_GRAPH_TURNS
from mtcabench.lineage._tracing import Tracer
from mtcabench.ingest import read_taubench
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


@pytest.mark.parametrize("rules", ["lineage-v1", "lineage-v2", "lineage-v3"])
def test_numbers_of_thousands_of_digits_are_text_not_a_crash(rules):
    """Python refuses int() of over 4,300 digits: a huge number in a tool result, in an
    answer or as a JSON count is traced by its text (or not at all), never a ValueError."""
    huge, big = "9" * 5000, "1" + "0" * 400
    call = ToolCall(id="c1", name="get_reservation_details", arguments={"id": "ABC123"})
    conv = Conversation(id="digits", source="test", domain="airline", turns=[
        Turn(index=0, role=Role.USER, content=f"Reservation ABC123, {huge} or {big}."),
        Turn(index=1, role=Role.ASSISTANT, tool_calls=[call]),
        Turn(index=2, role=Role.TOOL, tool_call_id="c1", name=call.name,
             content=f'{{"reservation_id": "ABC123", "total_baggages": {"7" * 30}, '
                     f'"amount": {big}, "passengers": [1]}}'),
        Turn(index=3, role=Role.ASSISTANT, content=f"ABC123 costs {big} and holds {huge}."),
    ])
    candidates = list(propose_lineage([conv], LineageConfig(rules=rules)))
    assert "ABC123" in {c.span.text for c in candidates}


# ---------------------------------------------------------------- long conversations (issue 22)
def _paging(pages: int) -> Conversation:
    """An agent paging with a cursor: each call passes the cursor the previous result gave,
    so each cursor's chain reaches back through every earlier call (benchmarks/lineage_long)."""
    turns = [Turn(index=0, role=Role.USER, content="List every trip of user mia_li_3668.")]
    for page in range(pages):
        args = {"user_id": "mia_li_3668"} | ({"cursor": f"CUR{page:06d}"} if page else {})
        call = ToolCall(id=f"call-{page}", name="list_reservations", arguments=args)
        turns += [
            Turn(index=len(turns), role=Role.ASSISTANT, tool_calls=[call]),
            Turn(index=len(turns) + 1, role=Role.TOOL, tool_call_id=call.id, name=call.name,
                 content=f'{{"reservations": ["R{page:05d}X"], '
                         f'"next_cursor": "CUR{page + 1:06d}"}}'),
            Turn(index=len(turns) + 2, role=Role.ASSISTANT,
                 content=f"Page {page + 1}: next cursor CUR{page + 1:06d}."),
        ]
    return Conversation(id="paging", source="test", domain="airline", turns=turns)


def test_a_paging_chain_is_bounded_by_the_graph_limit_and_counted():
    summary = LineageSummary()
    candidates = list(propose_lineage([_paging(120)], LineageConfig(), summary=summary))
    # the early pages are proposed with their whole chain; the later ones would hold more
    # than MAX_GRAPH_TURNS turns each (the output grew with the square of the pages)
    assert candidates and max(len(c.graph.nodes) for c in candidates) <= MAX_GRAPH_TURNS
    assert {c.span.text for c in candidates} >= {"CUR000001", "CUR000010"}
    assert "CUR000100" not in {c.span.text for c in candidates}
    assert summary.as_dict()["skipped"]["large-graph"] == summary.skipped["large-graph"] > 0


def test_a_summary_below_the_limit_does_not_name_it():
    summary = LineageSummary()
    list(propose_lineage([_paging(5)], LineageConfig(), summary=summary))
    assert "large-graph" not in summary.as_dict()["skipped"]


@pytest.mark.parametrize("rules", ["lineage-v3", "lineage-v2", "lineage-v1"])
def test_the_turn_index_names_every_turn_a_full_scan_finds(sample_path, rules):
    """The index only narrows the search: for every value of every conversation, the turns
    it names include every turn where the rules' matching finds the value (case, separators
    and the characters re.IGNORECASE joins included)."""
    odd = Conversation(id="odd", source="test", domain="airline", turns=[
        Turn(index=0, role=Role.USER, content="Codes: \u212aEY77 and D\u0131S9 and "
             "\u0130D55, card gift-card-7504069, #W2378 at 07:00 PM on 2024-05-01."),
        Turn(index=1, role=Role.ASSISTANT, tool_calls=[ToolCall(
            id="c1", name="lookup", arguments={"a": "key77", "b": "dis9", "c": "id55",
                                               "d": "gift_card_7504069", "e": "#w2378",
                                               "f": "19:00:00", "g": 1234.5})]),
        Turn(index=2, role=Role.TOOL, tool_call_id="c1", name="lookup",
             content='{"when": "2024-05-01T07:00:00", "total": "1,234.50"}'),
        Turn(index=3, role=Role.ASSISTANT, content="KEY77, DIS9, id55, Gift Card 7504069, "
             "#W2378 at 7 PM on May 1st, 2024 for $1,234.50."),
    ])
    convs = [*read_taubench(sample_path), odd]
    config = LineageConfig(rules=rules)
    for conv in convs:
        tracer = Tracer(conv, config, LineageSummary())
        for key, value in tracer.values.items():
            scanned = [t for t in range(len(conv.turns)) if tracer.find(t, value) is not None]
            named = set(tracer.index.turns_of(value))
            assert set(scanned) <= named, (conv.id, key)
            for t in scanned:
                assert key in tracer.index.keys_in(t), (conv.id, key, t)
