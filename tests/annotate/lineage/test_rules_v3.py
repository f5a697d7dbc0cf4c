"""The elapsed-time claims of lineage-v3 on small hand-built conversations (task-25/trial-0's
"it's within 24 hours of booking" and its kin), with what lineage-v2 does with them."""

from __future__ import annotations

import json

import pytest

from mtcabench.lineage import LineageConfig
from mtcabench.model import Conversation, Role, ToolCall, Turn
from tests.support.lineage_checks import propose_checked

V2 = LineageConfig(rules="lineage-v2")


def build(*specs, cid="t/2") -> Conversation:
    """Turns from short specs (those of test_rules_v2.py): ("s"|"u"|"a", text),
    ("call", [(id, name, args)], text), ("tool", call id, result)."""
    turns = []
    for i, spec in enumerate(specs):
        if spec[0] in ("s", "u", "a"):
            role = {"s": Role.SYSTEM, "u": Role.USER, "a": Role.ASSISTANT}[spec[0]]
            turns.append(Turn(index=i, role=role, content=spec[1]))
        elif spec[0] == "call":
            calls = [ToolCall(id=c, name=n, arguments=a) for c, n, a in spec[1]]
            turns.append(Turn(index=i, role=Role.ASSISTANT, content=spec[2] if len(spec) > 2
                              else "", tool_calls=calls))
        else:
            result = spec[2] if isinstance(spec[2], str) else json.dumps(spec[2])
            turns.append(Turn(index=i, role=Role.TOOL, content=result, tool_call_id=spec[1]))
    return Conversation(id=cid, source="test", domain="airline", turns=turns)


def edges(cand):
    return {(e.child, e.parent, e.kind.value[0]) for e in cand.graph.edges}


POLICY = ("s", "Policy. The current time is 2024-05-15 15:00:00 EST.")


def reservation_conv(answer, *, created="2024-05-12T09:36:29", user="Cancel my trip, "
                     "reservation M20IZO, change of plan.", more=()):
    return build(POLICY, ("u", user),
                 ("call", [("c1", "get_reservation_details", {"reservation_id": "M20IZO"})]),
                 ("tool", "c1", {"reservation_id": "M20IZO", "cabin": "economy",
                                 "created_at": created}),
                 *more, ("a", answer))


def hallucinations(cands):
    return [c for c in cands if c.dependency_type.value == "hallucination"]


def test_a_window_the_clock_contradicts_is_a_hallucination():
    conv = reservation_conv("Since the reservation was made on May 12, 2024, and it's within "
                            "24 hours of booking, you are eligible to cancel.")
    cands, summary = propose_checked(conv)
    (cand,) = hallucinations(cands)
    assert cand.span.text == "within 24 hours of booking" and cand.span.turn == 4
    # what primed it: the record (created_at), its call, the call's source, the policy's clock
    assert edges(cand) == {(4, 3, "c"), (3, 2, "s"), (2, 1, "c"), (4, 0, "c")}
    quotes = {e.pair: e.evidence.quote for e in cand.graph.edges}
    assert quotes[(4, 3)] == "2024-05-12T09:36:29" and quotes[(4, 0)] == "2024-05-15 15:00:00"
    assert "77.4 hours apart" in cand.rationale
    assert summary.as_dict()["by_kind"]["elapsed-time"] == 1
    # lineage-v2 has no such rule; with hallucinations off there is none either
    assert hallucinations(propose_checked(conv, V2)[0]) == []
    assert hallucinations(propose_checked(conv, LineageConfig(hallucinations=False))[0]) == []


@pytest.mark.parametrize("answer, created, counted", [
    # the clock agrees: created 10 hours before the policy's current time
    ("It was booked within the last 24 hours, so it can be cancelled.", "2024-05-15T05:00:00", 0),
    # a rule, not a fact of this booking (task-49/trial-1)
    ("The policy is strict for basic economy flights without insurance or within 24 hours of "
     "booking.", "2024-05-12T09:36:29", 0),
    # a question, a condition: hypotheses
    ("Was it made within the last 24 hours?", "2024-05-12T09:36:29", 1),
    ("If it was made within the last 24 hours, it can be cancelled.", "2024-05-12T09:36:29", 1),
    # "more than 24 hours ago", and the clock agrees
    ("It was created more than 24 hours ago.", "2024-05-12T09:36:29", 0),
])
def test_no_hallucination_without_a_contradicted_claim(answer, created, counted):
    cands, summary = propose_checked(reservation_conv(answer, created=created))
    assert hallucinations(cands) == []
    assert summary.skipped["hypothetical-claim"] == counted


def test_a_claim_that_it_is_outside_the_window_is_checked_too():
    conv = reservation_conv("It was created more than 24 hours ago.",
                            created="2024-05-15T05:00:00")
    (cand,) = hallucinations(propose_checked(conv)[0])
    assert cand.span.text == "more than 24 hours ago"


def test_the_users_claim_and_the_agents_own_claim_primed_it():
    # task-41/trial-0: the user says "about 10 hours ago"; the agent's later answer repeats
    # its own claim, and the chain continues through it to the user
    conv = reservation_conv(
        "As I said, it was canceled within 24 hours of booking.",
        user="Reservation M20IZO please.",
        more=[("u", "I just made the reservation about 10 hours ago, cancel it."),
              ("a", "Since your reservation was made within the last 24 hours, you are "
                    "eligible for a refund.")])
    cands, _ = propose_checked(conv)
    first, second = sorted(hallucinations(cands), key=lambda c: c.span.turn)
    assert first.span.turn == 5 and (5, 4, "c") in edges(first)
    assert next(e for e in first.graph.edges if e.pair == (5, 4)).evidence.quote == \
        "about 10 hours ago"
    assert {(6, 5, "c"), (5, 4, "c"), (6, 3, "c"), (6, 0, "c")} <= edges(second)


def test_the_record_the_answer_names_is_the_one_checked():
    # two reservations: the claim under "Reservation K67C4W" is about K67C4W (booked 5 hours
    # before the clock), not about the latest one retrieved (M20IZO, three days before)
    conv = build(POLICY, ("u", "Cancel K67C4W and M20IZO."),
                 ("call", [("c1", "get_reservation_details", {"reservation_id": "K67C4W"})]),
                 ("tool", "c1", {"reservation_id": "K67C4W", "created_at": "2024-05-15T10:00:00"}),
                 ("call", [("c2", "get_reservation_details", {"reservation_id": "M20IZO"})]),
                 ("tool", "c2", {"reservation_id": "M20IZO", "created_at": "2024-05-12T09:36:29"}),
                 ("a", "1. Reservation K67C4W: it was booked within the last 24 hours.\n"
                       "2. Reservation M20IZO: it was booked within the last 24 hours."))
    (cand,) = hallucinations(propose_checked(conv)[0])
    assert cand.span.start > conv.turns[6].content.index("M20IZO")
    assert (6, 5, "c") in edges(cand) and (6, 3, "c") not in edges(cand)
