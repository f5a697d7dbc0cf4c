"""The deterministic claim proposer: what it proposes, what it leaves out, how it types."""

from __future__ import annotations

import pytest

from mtcabench.annotate.claims import claim_kind_of, is_claim, message_region, propose_claims
from mtcabench.model import ClaimKind


def test_the_proposer_proposes_the_claims_and_leaves_out_the_rest(conversation):
    proposed = [(p.span.turn, p.span.text, p.claim_kind) for p in propose_claims(conversation)]
    assert proposed == [
        (6, "There are no nonstop flights on May 20", ClaimKind.ABSENCE),
        (6, "According to our policy, basic economy flights cannot be modified",
         ClaimKind.POLICY),
        (10, "Your reservation ABC123 has been cancelled", ClaimKind.CONFIRMATION),
        (10, "You are eligible for a full refund of $250 since it was booked within 24 hours",
         ClaimKind.ELIGIBILITY),
    ]
    # Every span's text is the turn's text at its offsets (inside the JSON message too).
    for p in propose_claims(conversation):
        assert conversation.turns[p.span.turn].text[p.span.start:p.span.end] == p.span.text


def test_a_json_answer_is_read_inside_its_message():
    content = '{"message": "Done. Your order is \\"pending\\"."}'
    lo, hi = message_region(content)
    assert content[lo:hi] == 'Done. Your order is \\"pending\\".'
    assert message_region("Plain text {not json}") == (0, len("Plain text {not json}"))
    assert message_region('{"other": 1}') == (0, len('{"other": 1}'))


@pytest.mark.parametrize("text", [
    "Would you like me to cancel it",  # a question, its "?" cut by the clause split
    "Could you please provide your user ID",
    "Please confirm the passenger names",
    "Let me check the reservation for you",
    "Let’s start by checking your phone",
    "If you have travel insurance, you can cancel",
    "Thank you for the information, John",
    "Hello! I'm happy to help you today",
    "I'll now check the available flights",
    "Here are the available flights",
    "Status: pending",
    "**Cabin Class**: economy",
    "toggle_airplane_mode(on=False)",
    "Turn airplane mode off and restart the phone",
    "Done.",
])
def test_offers_questions_greetings_and_boilerplate_are_left_out(text):
    assert not is_claim(text)


def test_questions_and_headings_that_only_announce_are_left_out():
    assert is_claim("The flight departs at noon from JFK")
    assert not is_claim("The flight departs at noon from JFK", after="?")
    assert not is_claim("The flights that fit are the following", after=":")
    # A heading that asserts is a claim; a field line is a value unless worked out.
    assert is_claim("You have three pending orders that can be cancelled", after=":")
    assert not is_claim("Flight number: HAT136 on May 20")
    assert is_claim("**Total refund:** $1,515")
    assert is_claim("IFOYYZ: eligible for cancellation because it was booked yesterday")


@pytest.mark.parametrize(("text", "kind"), [
    ("I'm unable to cancel this reservation", ClaimKind.DECISION),
    ("I can’t change a basic economy flight", ClaimKind.DECISION),
    ("Unfortunately, the order cannot be returned", ClaimKind.DECISION),
    ("Your order #W123 has already been delivered", ClaimKind.STATUS),
    ("Your order #W123 has been cancelled", ClaimKind.CONFIRMATION),
    ("This order is still pending", ClaimKind.STATUS),
    ("The total refund will be $1,268", ClaimKind.COMPUTATION),
    ("The booking is for 2 passengers", ClaimKind.COUNT),
    ("The cheapest option is the morning flight", ClaimKind.COMPARISON),
    ("Your reservation is a round trip from LAX to SFO", ClaimKind.SUMMARY),
    ("Changes must be made 24 hours before departure per the rules", ClaimKind.POLICY),
    ("You qualify for a certificate", ClaimKind.ELIGIBILITY),
    ("I couldn't find any order under that name", ClaimKind.ABSENCE),
    ("The weather looks fine today", ClaimKind.OTHER),
])
def test_the_kind_comes_from_the_wording(text, kind):
    assert claim_kind_of(text) is kind


def test_recall_counts_a_claim_found_when_a_proposal_covers_half_of_it(conversation):
    from mtcabench.annotate.claims import proposer_recall
    from mtcabench.graph import resolve_span

    convs = {conversation.id: conversation}
    found = resolve_span(conversation, 6, "no nonstop flights on May 20")  # inside a proposal
    missed = resolve_span(conversation, 6, "Would you like me to cancel")  # a question
    r = proposer_recall(convs, [(conversation.id, found, ClaimKind.ABSENCE),
                                (conversation.id, missed, ClaimKind.DECISION)])
    assert (r.found, r.claims, r.same_kind) == (1, 2, 1)
    assert r.by_kind == {"decision": [0, 1], "absence": [1, 1]}
    assert r.proposed == len(propose_claims(conversation))
