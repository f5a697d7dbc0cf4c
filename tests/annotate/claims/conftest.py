"""A small airline conversation written for the claims tests: a lookup, an empty search, a
refusal under the policy, a cancellation and its confirmation."""

from __future__ import annotations

import pytest

from mtcabench.model import Conversation, Role, ToolCall, Turn

POLICY = ("# Airline Agent Policy\n- Basic economy flights cannot be modified.\n"
          "- A reservation booked within the last 24 hours can be cancelled for a full refund.")


def claims_conversation() -> Conversation:
    turns = [
        (Role.SYSTEM, POLICY, [], None),
        (Role.USER, "Hi, I want to change reservation ABC123 to a nonstop flight on May 20.", [],
         None),
        (Role.ASSISTANT, "", [ToolCall(id="c1", name="get_reservation_details",
                                       arguments={"reservation_id": "ABC123"})], None),
        (Role.TOOL, '{"reservation_id": "ABC123", "cabin": "basic_economy", '
                    '"created_at": "2024-05-15T10:00:00", "insurance": "no", "status": "active"}',
         [], "c1"),
        (Role.ASSISTANT, "", [ToolCall(id="c2", name="search_direct_flight",
                                       arguments={"date": "2024-05-20"})], None),
        (Role.TOOL, "[]", [], "c2"),
        (Role.ASSISTANT,
         "Hello! Thank you for your patience. There are no nonstop flights on May 20. "
         "According to our policy, basic economy flights cannot be modified. "
         "Here are your options:\n- **Status:** active\n"
         "Would you like me to cancel the reservation instead?", [], None),
        (Role.USER, "Yes, cancel it.", [], None),
        (Role.ASSISTANT, "", [ToolCall(id="c3", name="cancel_reservation",
                                       arguments={"reservation_id": "ABC123"})], None),
        (Role.TOOL, '{"reservation_id": "ABC123", "status": "cancelled", "refund": 250}', [],
         "c3"),
        (Role.ASSISTANT,
         '{"message": "Your reservation ABC123 has been cancelled.\\nYou are eligible for a '
         'full refund of $250 since it was booked within 24 hours. Let me know if you need '
         'anything else!"}', [], None),
    ]
    return Conversation(
        id="test/airline/agent/task-1/trial-0", source="test", domain="airline",
        agent_model="agent",
        turns=[Turn(index=i, role=r, content=c, tool_calls=calls, tool_call_id=cid)
               for i, (r, c, calls, cid) in enumerate(turns)])


@pytest.fixture
def conversation() -> Conversation:
    return claims_conversation()
