"""lineage-v4 on small hand-built conversations: rules that run only in their domain, the
values of retail and telecom, and the record claims (an order's status, an item's price, a
line's status and data) with the statements that are consistent with the record."""

from __future__ import annotations

import json

import pytest

from mtcabench.lineage import RULE_SETS, LineageConfig
from mtcabench.model import Conversation, Role, ToolCall, Turn
from tests.support.lineage_checks import propose_checked

V3 = LineageConfig(rules="lineage-v3")


def build(*specs, domain="retail", cid="t/4") -> Conversation:
    """Turns from short specs (those of test_rules_v3.py): ("s"|"u"|"a", text),
    ("call", [(id, name, args)]), ("tool", call id, result)."""
    turns = []
    for i, spec in enumerate(specs):
        if spec[0] in ("s", "u", "a"):
            role = {"s": Role.SYSTEM, "u": Role.USER, "a": Role.ASSISTANT}[spec[0]]
            turns.append(Turn(index=i, role=role, content=spec[1]))
        elif spec[0] == "call":
            calls = [ToolCall(id=c, name=n, arguments=a) for c, n, a in spec[1]]
            turns.append(Turn(index=i, role=Role.ASSISTANT, content="", tool_calls=calls))
        else:
            result = spec[2] if isinstance(spec[2], str) else json.dumps(spec[2])
            turns.append(Turn(index=i, role=Role.TOOL, content=result, tool_call_id=spec[1]))
    return Conversation(id=cid, source="test", domain=domain, turns=turns)


def hallucinations(cands):
    return [c for c in cands if c.dependency_type.value == "hallucination"]


def edges(cand):
    return {(e.child, e.parent) for e in cand.graph.edges}


ORDER = {"order_id": "#W4284542", "user_id": "ivan_khan_7475",
         "items": [{"name": "Air Purifier", "product_id": "3821016478", "item_id": "9534205511",
                    "price": 473.43, "options": {"size": "large"}}],
         "status": "pending", "payment_history": [{"amount": 473.43}]}


def order_conv(answer, order=ORDER, *, domain="retail", more=()):
    return build(("u", "Where is my order #W4284542?"),
                 ("call", [("c1", "get_order_details", {"order_id": "#W4284542"})]),
                 ("tool", "c1", order), *more, ("a", answer), domain=domain)


# ---------------------------------------------------------------- retail: order claims
def test_an_order_status_the_record_contradicts_is_a_hallucination():
    cands, summary = propose_checked(order_conv("Your order #W4284542 is currently delivered."))
    (cand,) = hallucinations(cands)
    assert cand.span.text == "delivered" and cand.span.turn == 3
    # the record (quoting its status), its call, the user's order id
    assert edges(cand) == {(3, 2), (2, 1), (1, 0)}
    quote = next(e.evidence.quote for e in cand.graph.edges if e.pair == (3, 2))
    assert quote == "pending"
    assert summary.as_dict()["by_kind"]["order-status"] == 1
    # lineage-v3 had no such rule
    assert hallucinations(propose_checked(order_conv("Your order #W4284542 is currently delivered."),
                              V3)[0]) == []


@pytest.mark.parametrize("answer", [
    "Your order #W4284542 is currently pending.",
    "- Order: #W4284542\n- Status: Pending (not yet shipped)",
    "Once #W4284542 is delivered, you can return the purifier.",  # a plan
    "If your order is delivered, I can help with a return.",  # a condition
    "Is your order delivered?",  # a question
])
def test_a_consistent_or_hypothetical_status_is_none(answer):
    cands, _ = propose_checked(order_conv(answer))
    assert hallucinations(cands) == []


def test_a_status_the_order_had_before_the_agent_changed_it_is_none():
    returned = dict(ORDER, status="return requested")
    delivered = dict(ORDER, status="delivered")
    conv = build(("u", "Return my order #W4284542."),
                 ("call", [("c1", "get_order_details", {"order_id": "#W4284542"})]),
                 ("tool", "c1", delivered),
                 ("call", [("c2", "return_delivered_order_items", {"order_id": "#W4284542"})]),
                 ("tool", "c2", returned),
                 ("a", "Order status: delivered. I have initiated the return."))
    assert hallucinations(propose_checked(conv)[0]) == []


def test_an_unnamed_order_among_several_is_not_decided():
    other = dict(ORDER, order_id="#W3407479", status="processed")
    conv = order_conv("Updated #W4284542 with the address of #W3407479.\nThe order remains "
                      "in status: processed.", more=(
                          ("call", [("c2", "get_order_details", {"order_id": "#W3407479"})]),
                          ("tool", "c2", other)))
    cands, summary = propose_checked(conv)
    assert hallucinations(cands) == []
    assert summary.skipped["ambiguous-contradiction"] == 1


def test_an_item_price_the_record_contradicts_is_a_hallucination():
    cands, _ = propose_checked(order_conv("The purifier (item 9534205511) is priced at $437.43."))
    (cand,) = hallucinations(cands)
    assert cand.span.text == "437.43"
    assert next(e.evidence.quote for e in cand.graph.edges if e.pair == (3, 2)) == "473.43"


@pytest.mark.parametrize("answer", [
    "The purifier (item 9534205511) is priced at $473.43.",
    "The purifier (item 9534205511) would get a refund of $437.43.",  # not its price
])
def test_a_consistent_price_or_another_amount_is_none(answer):
    assert hallucinations(propose_checked(order_conv(answer))[0]) == []


# ---------------------------------------------------------------- telecom: line claims
LINE = {"line_id": "L1002", "phone_number": "555-123-2002", "status": "Suspended",
        "plan_id": "P1002", "data_used_gb": 8.7}
USAGE = {"line_id": "L1002", "data_used_gb": "8.7", "data_limit_gb": "15.0",
         "cycle_end_date": "2025-02-28"}


def line_conv(answer, *, domain="telecom"):
    return build(("u", "My phone number is 555-123-2002 and I have no service."),
                 ("call", [("c1", "get_details_by_id", {"id": "L1002"})]),
                 ("tool", "c1", LINE),
                 ("call", [("c2", "get_data_usage", {"line_id": "L1002"})]),
                 ("tool", "c2", USAGE),
                 ("a", answer), domain=domain)


@pytest.mark.parametrize(("answer", "span", "quote"), [
    ("Your line (555-123-2002) is currently active.", "active", "Suspended"),
    ("You have used 7.8 GB so far this month.", "7.8", "8.7"),
    ("Your plan has a data limit of 5 GB.", "5", "15.0"),
])
def test_a_line_claim_the_record_contradicts_is_a_hallucination(answer, span, quote):
    cands, _ = propose_checked(line_conv(answer))
    (cand,) = hallucinations(cands)
    assert cand.span.text == span
    parent = max(p for c, p in edges(cand) if c == 5)
    assert next(e.evidence.quote for e in cand.graph.edges if e.pair == (5, parent)) == quote


@pytest.mark.parametrize("answer", [
    "Your line (555-123-2002) is currently suspended.",
    "You have used 8.7 GB of your 15 GB data limit.",
    "If your line is active, try rebooting.",
])
def test_a_consistent_line_claim_is_none(answer):
    assert hallucinations(propose_checked(line_conv(answer))[0]) == []


def test_telecom_values_phone_numbers_and_data_amounts():
    cands, _ = propose_checked(line_conv("Your number 555-123-2002: you have used 8.7 GB, limit 15 GB."))
    by_text = {c.span.text: c for c in cands}
    # the phone number the user typed is one value (not three numbers), read from the
    # latest turn showing it: the line's record
    assert "555-123-2002" in by_text
    assert {"8.7 GB", "15 GB"} <= set(by_text)
    assert edges(by_text["15 GB"]) >= {(5, 4)}
    # lineage-v3 read neither data amount
    assert not {"8.7 GB", "15 GB"} & {c.span.text for c in propose_checked(line_conv(
        "Your number 555-123-2002: you have used 8.7 GB, limit 15 GB."), V3)[0]}


def test_retail_values_short_money_amounts_and_cities():
    profile = {"user_id": "ivan_khan_7475", "address": {"address1": "584 Sunset Drive",
                                                        "city": "Washington", "zip": "20353"},
               "payment_methods": {"gift_card_7245904": {"id": "gift_card_7245904",
                                                         "balance": 17.0}}}
    conv = build(("u", "I am ivan_khan_7475."),
                 ("call", [("c1", "get_user_details", {"user_id": "ivan_khan_7475"})]),
                 ("tool", "c1", profile),
                 ("a", "Your gift card has a balance of $17.00; your address is in Washington."))
    texts = {c.span.text for c in propose_checked(conv)[0]}
    assert {"17.00", "Washington"} <= texts
    # v3 drops the address city (airports' cities) and the two-digit amount
    assert not {"17.00", "Washington"} & {c.span.text for c in propose_checked(conv, V3)[0]}


# ---------------------------------------------------------------- domains
MEMBER = ("Since you are a Gold member, I can offer a certificate.")


def member_conv(domain):
    return build(("u", "I am sara_doe_496, a Gold member."),
                 ("call", [("c1", "get_user_details", {"user_id": "sara_doe_496"})]),
                 ("tool", "c1", {"user_id": "sara_doe_496", "membership": "regular"}),
                 ("a", MEMBER), domain=domain)


@pytest.mark.parametrize(("domain", "fires"), [
    ("airline", True), ("retail", False), ("telecom", False), ("helpdesk", False),
     ("agent-log", False)])
def test_airline_rules_run_only_on_airline_conversations(domain, fires):
    assert bool(hallucinations(propose_checked(member_conv(domain))[0])) is fires
    # lineage-v3 runs them everywhere, as it did
    assert len(hallucinations(propose_checked(member_conv(domain), V3)[0])) == 1


@pytest.mark.parametrize("domain", ["airline", "telecom", "helpdesk"])
def test_retail_rules_run_only_on_retail_conversations(domain):
    conv = order_conv("Your order #W4284542 is currently delivered.", domain=domain)
    assert hallucinations(propose_checked(conv)[0]) == []


def test_telecom_rules_run_only_on_telecom_conversations():
    conv = line_conv("Your line (555-123-2002) is currently active.", domain="retail")
    assert hallucinations(propose_checked(conv)[0]) == []


def test_the_rule_sets_declare_their_domains():
    v4 = RULE_SETS["lineage-v4"]
    assert v4.applies("membership_claims", "airline")
    assert not v4.applies("membership_claims", "retail")
    assert v4.applies("order_claims", "retail") and not v4.applies("order_claims", None)
    assert v4.applies("clause_spans", "retail") and v4.applies("clause_spans", None)
    for old in ("lineage-v1", "lineage-v2", "lineage-v3"):
        assert RULE_SETS[old].domains is None and not RULE_SETS[old].order_claims
    assert LineageConfig().signature() == "lineage-v4"


def test_a_price_per_gb_is_money_not_data():
    # task-[mms_issue]...: "up to 2 GB" is the policy's limit, not the plan's $2.0 per GB
    plan = {"plan_id": "P1002", "data_limit_gb": 15.0, "data_refueling_price_per_gb": 2.0}
    conv = build(("u", "My plan is P1002."),
                 ("call", [("c1", "get_details_by_id", {"id": "P1002"})]),
                 ("tool", "c1", plan),
                 ("a", "You can refuel up to 2 GB at $2.00 per GB; your limit is 15 GB."),
                 domain="telecom")
    by_text = {c.span.text: c for c in propose_checked(conv)[0]}
    assert "2 GB" not in by_text and {"2.00", "15 GB"} <= set(by_text)


# ---------------------------------------------------------------- a claim's context (airline)
POLICY = ("s", "Policy. The current time is 2024-05-15 15:00:00 EST.")


def booking_conv(answer):
    return build(POLICY, ("u", "Cancel my reservation M20IZO, change of plan."),
                 ("call", [("c1", "get_reservation_details", {"reservation_id": "M20IZO"})]),
                 ("tool", "c1", {"reservation_id": "M20IZO", "cabin": "economy",
                                 "created_at": "2024-05-12T09:36:29"}),
                 ("a", answer), domain="airline")


@pytest.mark.parametrize("answer", [
    # tau2 airline, claude-opus-4-6 task-41: the policy's conditions, listed
    "Per our policy, a reservation can only be cancelled if one of the following conditions "
    "is met:\n\n1. The booking was made within the last 24 hours\n2. The flight was cancelled "
    "by the airline",
    "Cancellation is allowed only if:\n- It was booked within the last 24 hours\n- It is business",
    # claude-sonnet-4-5 task-1: the rule stated in a parenthesis
    "- The booking was made more than 24 hours ago (our free cancellation window is within 24 "
    "hours of booking)",
])
def test_a_listed_condition_or_the_rule_stated_is_no_claim(answer):
    cands, summary = propose_checked(booking_conv(answer))
    assert hallucinations(cands) == [] and summary.skipped["hypothetical-claim"] >= 1
    # lineage-v3 proposed each (31 on tau2's airline runs, 7 of them real)
    assert hallucinations(propose_checked(booking_conv(answer), V3)[0])


@pytest.mark.parametrize("answer", [
    # gpt-5.4 task-37: a planned action's reason, listed under a heading that is no condition
    "Planned actions:\n1. Cancel reservation M20IZO\n   - Eligible because it was booked within "
    "the last 24 hours.",
    "I can cancel it because it was booked within the last 24 hours (created 2024-05-12).",
])
def test_a_claim_in_a_listing_of_facts_is_still_one(answer):
    (cand,) = hallucinations(propose_checked(booking_conv(answer))[0])
    assert cand.span.text == "within the last 24 hours"


def test_a_reported_membership_is_no_claim():
    # claude-sonnet-4-5 task-5: the agent reports the user's claim and corrects it
    conv = member_conv("airline")
    conv.turns[-1].content = ("Our system shows you as a regular member, while you've "
                              "indicated you're a Gold member.")
    assert hallucinations(propose_checked(conv)[0]) == []
    assert len(hallucinations(propose_checked(conv, V3)[0])) == 1


def test_the_agents_own_restatement_is_still_a_claim():
    (cand,) = hallucinations(propose_checked(booking_conv(
        "As I said, it was booked within the last 24 hours, so you can cancel."))[0])
    assert cand.span.text == "within the last 24 hours"


# ---------------------------------------------------------------- every domain: action claims
RESERVATION = {"reservation_id": "K1NW8N", "user_id": "mohamed_silva_9265", "cabin": "economy"}


def action_conv(answer, *, calls=(), domain="airline", user="Please cancel reservation K1NW8N."):
    """The user asks; the agent reads the reservation, makes ``calls`` ((name, result)) and
    answers."""
    more = []
    for i, (name, result) in enumerate(calls):
        more += [("call", [(f"c{i + 2}", name, {"reservation_id": "K1NW8N"})]),
                 ("tool", f"c{i + 2}", result)]
    return build(("u", user),
                 ("call", [("c1", "get_reservation_details", {"reservation_id": "K1NW8N"})]),
                 ("tool", "c1", RESERVATION), *more, ("a", answer), domain=domain)


def test_an_action_no_call_did_is_a_hallucination():
    cands, _ = propose_checked(action_conv("Your reservation K1NW8N has been successfully cancelled."))
    (cand,) = hallucinations(cands)
    assert cand.span.text == "has been successfully cancelled"
    assert cand.rationale.startswith("action claim:")
    # primed by the user's request (quoting its word): no call to trace
    assert edges(cand) == {(3, 0)}
    assert next(e.evidence.quote for e in cand.graph.edges) == "cancel"
    # lineage-v3 had no such rule
    assert hallucinations(propose_checked(action_conv("Your reservation K1NW8N has been successfully "
                                          "cancelled."), V3)[0]) == []


def test_an_action_whose_only_call_failed_is_a_hallucination():
    conv = action_conv("I've cancelled your reservation K1NW8N.",
                       calls=[("cancel_reservation", "Error: reservation not found")])
    (cand,) = hallucinations(propose_checked(conv)[0])
    assert cand.span.text == "I've cancelled"
    # the error result (quoting it), its call, and the call's id as the edge rule traces it:
    # the reservation read (2), its call, the user's id
    assert edges(cand) == {(5, 4), (4, 3), (3, 2), (2, 1), (1, 0)}
    assert next(e.evidence.quote for e in cand.graph.edges if e.pair == (5, 4)) == (
        "Error: reservation not found")


def test_a_claim_a_user_primed_links_the_user_turn():
    # whissle task-14: the user writes the agent's confirmation, the agent repeats it
    conv = action_conv("Your new reservation has been successfully booked.",
                       user="Thanks. Your new reservation has been successfully booked.")
    (cand,) = hallucinations(propose_checked(conv)[0])
    assert edges(cand) == {(3, 0)}
    assert next(e.evidence.quote for e in cand.graph.edges) == "has been successfully booked"


@pytest.mark.parametrize("answer", [
    "Your reservation K1NW8N has been cancelled.",  # the call succeeded
    "I can cancel reservation K1NW8N once you confirm.",  # an offer
    "Shall I cancel it? Reply yes and it will be cancelled.",  # a question, a plan
    "Your reservation has not been cancelled.",  # a negation
    "Flight HAT023 has been cancelled by the airline.",  # another actor
    "It looks like reservation K1NW8N has already been cancelled.",  # a state found
    "I've cancelled nothing yet; your baggage has been updated.",  # no object of the verb
])
def test_a_done_plan_negation_or_state_is_none(answer):
    calls = [("cancel_reservation", RESERVATION)] if "has been cancelled." in answer else []
    cands, _ = propose_checked(action_conv(answer, calls=calls))
    assert [c.span.text for c in hallucinations(cands)] == []


def test_the_verb_to_tool_map_is_the_domains():
    # retail: an order's cancellation is cancel_pending_order's, not the airline's tool
    order = {"order_id": "#W4284542", "status": "pending"}
    conv = build(("u", "Cancel order #W4284542 please."),
                 ("call", [("c1", "cancel_reservation", {"order_id": "#W4284542"})]),
                 ("tool", "c1", order),
                 ("a", "Your order #W4284542 has been cancelled."))
    (cand,) = hallucinations(propose_checked(conv)[0])
    assert "cancel_pending_order" in cand.rationale
    # telecom: roaming the user enabled with their own tool is done
    conv = build(("u", "Can you turn roaming on?"),
                 ("call", [("c1", "toggle_roaming", {})]),
                 ("tool", "c1", "Data Roaming is now ON."),
                 ("a", "Roaming has been enabled on your line."), domain="telecom")
    conv.turns[1].role = Role.USER
    assert hallucinations(propose_checked(conv)[0]) == []
    # a domain without a map (or none) gets no action claims
    conv = action_conv("Your reservation K1NW8N has been successfully cancelled.",
                       domain="insurance")
    assert hallucinations(propose_checked(conv)[0]) == []
