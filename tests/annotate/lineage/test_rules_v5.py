"""lineage-v5 on small hand-built conversations: a refund, charge or booking total the answer
reports, against the payment its call recorded in the record's payment_history (issue 45).
The amounts that agree with the record (as a whole or one entry), plans, questions, rates and
reports of several records are no hallucination; lineage-v4 proposes none of these."""

from __future__ import annotations

import pytest

from mtcabench.lineage import RULE_SETS, LineageConfig
from tests.annotate.lineage.test_rules_v4 import build, edges, hallucinations
from tests.support.lineage_checks import propose_checked

V5 = LineageConfig(rules="lineage-v5")
V4 = LineageConfig(rules="lineage-v4")

RES = {"reservation_id": "1N99U6", "user_id": "james_taylor_7043", "cabin": "economy",
       "flights": [{"flight_number": "HAT175", "price": 155}],
       "passengers": [{"first_name": "James"}, {"first_name": "Ana"}],
       "payment_history": [{"payment_id": "gift_card_5634230", "amount": 1134}]}


def updated(*added, tool="update_reservation_flights"):
    return RES | {"payment_history": RES["payment_history"] + [
        {"payment_id": "gift_card_5634230", "amount": a} for a in added]}


def airline_conv(answer, *results, more=()):
    """The user's reservation read (2), then each call and its result, then the answer."""
    specs = [("u", "Please change reservation 1N99U6 to the cheaper flights."),
             ("call", [("c0", "get_reservation_details", {"reservation_id": "1N99U6"})]),
             ("tool", "c0", RES), *more]
    for i, (tool, result) in enumerate(results, 1):
        specs += [("call", [(f"c{i}", tool, {"reservation_id": "1N99U6"})]),
                  ("tool", f"c{i}", result)]
    return build(*specs, ("a", answer), domain="airline", cid="t/5")


def test_a_refund_for_one_passenger_where_the_update_paid_back_two_is_a_hallucination():
    # gpt-oss-120b task-30: "Refund amount: $198" where the update recorded -396
    conv = airline_conv("Your reservation has been updated.\n- **Refund amount:** $198, which "
                        "has been credited back to your gift card.",
                        ("update_reservation_flights", updated(-396)))
    cands, _ = propose_checked(conv, V5)
    (cand,) = hallucinations(cands)
    assert cand.span.text == "$198" and cand.span.turn == 5
    assert cand.rationale == (
        "amount claim: the answer states a refund of $198 where the update_reservation_flights "
        "result (turn 4) for 1N99U6 records payment_history entries (-396 gift_card_5634230) "
        "= -396: a refund of $396; $198 is not $396 (198 × 2 = 396)")
    # the result (quoting the added entry), its call, the reservation read that gave the id,
    # its call, the user's id
    assert edges(cand) == {(5, 4), (4, 3), (3, 2), (2, 1), (1, 0)}
    assert next(e.evidence.quote for e in cand.graph.edges if e.pair == (5, 4)) == \
        '"amount": -396'
    # lineage-v4 has no such rule: the same turn holds no hallucination
    assert hallucinations(propose_checked(conv, V4)[0]) == []


def test_a_charge_where_the_change_was_refunded_is_a_hallucination():
    conv = airline_conv("The additional cost of $120 has been charged to your gift card.",
                        ("update_reservation_flights", updated(-120)))
    (cand,) = hallucinations(propose_checked(conv, V5)[0])
    assert cand.span.text == "$120"
    assert cand.rationale.endswith("a refund of $120; no charge was recorded: 120 ≠ 0")


def test_a_stated_amount_that_is_an_earlier_value_is_still_decided():
    # the fare $155 stands in the reservation read: the charge is no copy of it
    conv = airline_conv("Done! You have been charged $155 for the new flights.",
                        ("update_reservation_flights", updated(310)))
    (cand,) = hallucinations(propose_checked(conv, V5)[0])
    assert cand.span.text == "$155" and "$155 is not $310 (155 × 2 = 310)" in cand.rationale
    # the number the answer repeats (the user's, as gpt-oss-120b task-37's "charge the
    # additional $597") is in its graph: what primed it
    quote = (("u", "Yes, charge the $140 to my gift card."),)
    primed = airline_conv("Done! You have been charged $140 for the new flights.",
                          ("update_reservation_flights", updated(310)), more=quote)
    (cand,) = hallucinations(propose_checked(primed, V5)[0])
    assert cand.rationale.endswith("$140 is not $310; primed by turn 3")
    assert (6, 3) in edges(cand) and (6, 5) in edges(cand)
    # under v4 the same amount is a copied span of the read
    assert [c.span.text for c in propose_checked(conv, V4)[0] if c.span.text == "155"] == ["155"]


def test_a_booking_total_is_checked_against_its_payments():
    booked = RES | {"reservation_id": "ZZ9X8Y", "payment_history": [
        {"payment_id": "certificate_7504069", "amount": 250},
        {"payment_id": "credit_card_4421486", "amount": 5}]}
    conv = airline_conv("Your flight is booked.\n- **Total Price**: $265",
                        ("book_reservation", booked))
    (cand,) = hallucinations(propose_checked(conv, V5)[0])
    assert "(250 certificate_7504069) + (5 credit_card_4421486) = 255" in cand.rationale
    ok = airline_conv("Your flight is booked.\n- **Total Price**: $255",
                      ("book_reservation", booked))
    assert hallucinations(propose_checked(ok, V5)[0]) == []


def test_a_retail_refund_counts_the_refund_entries():
    order = {"order_id": "#W5199551", "user_id": "fatima_johnson_7581", "status": "pending",
             "payment_history": [{"transaction_type": "payment", "amount": 3131.1,
                                  "payment_method_id": "paypal_5364164"}]}
    cancelled = order | {"status": "cancelled", "payment_history": order["payment_history"] + [
        {"transaction_type": "refund", "amount": 3131.1, "payment_method_id": "paypal_5364164"}]}
    specs = [("u", "Cancel order #W5199551 please."),
             ("call", [("c0", "get_order_details", {"order_id": "#W5199551"})]),
             ("tool", "c0", order),
             ("call", [("c1", "cancel_pending_order", {"order_id": "#W5199551"})]),
             ("tool", "c1", cancelled)]
    bad = build(*specs, ("a", "Your order is cancelled; a refund of $3,113.10 is on its way."))
    (cand,) = hallucinations(propose_checked(bad, V5)[0])
    assert "$3,113.10 is not $3,131.10" in cand.rationale
    good = build(*specs, ("a", "Your order is cancelled; a refund of $3,131.10 is on its way."))
    assert hallucinations(propose_checked(good, V5)[0]) == []


@pytest.mark.parametrize("answer,results", [
    # the amount recorded
    ("A refund of $396 has been credited back to your gift card.",
     [("update_reservation_flights", updated(-396))]),
    # one entry of two calls: the flights refunded 374, the bag charged 50
    ("The additional cost of $50 for the checked bag has been charged to your card.",
     [("update_reservation_flights", updated(-374)),
      ("update_reservation_baggages", updated(-374, 50))]),
    # a rate, not what was paid
    ("The upgrade was charged at $155 per passenger.",
     [("update_reservation_flights", updated(310))]),
    # an offer, a question, a negation
    ("If you also change the return, you would get a refund of $20.",
     [("update_reservation_flights", updated(-396))]),
    ("Shall I refund the $20 difference?", [("update_reservation_flights", updated(-396))]),
    ("There is no additional charge of $50 for this change.",
     [("update_reservation_flights", updated(-396))]),
    # two amounts in one sentence: which is the refund is not read
    ("Original fare $537, refund $198.", [("update_reservation_flights", updated(-396))]),
    # the call paid nothing: the amount may report an earlier call
    ("The refund of $198 has been processed.", [("update_reservation_passengers", RES)]),
    # the call failed
    ("The refund of $198 has been processed.",
     [("update_reservation_flights", "Error: flight not available")]),
    # "$0" is nothing paid; a new fare's total is a price, not a payment
    ("- **Additional cost:** $0", [("update_reservation_flights", updated(59))]),
    ("The total price of your updated reservation is now $1,288.65, and the difference has "
     "been refunded.", [("update_reservation_flights", updated(-30))]),
])
def test_consistent_or_undecidable_amounts_are_none(answer, results):
    conv = airline_conv(answer, *results)
    assert hallucinations(propose_checked(conv, V5)[0]) == []


def test_a_report_of_another_reservation_is_not_judged():
    other = RES | {"reservation_id": "4XGCCM", "payment_history": [
        {"payment_id": "credit_card_4074252", "amount": 251}]}
    more = (("call", [("cx", "get_reservation_details", {"reservation_id": "4XGCCM"})]),
            ("tool", "cx", other))
    conv = airline_conv("Reservation 4XGCCM: a refund of $251 will be processed.",
                        ("update_reservation_flights", updated(-396)), more=more)
    assert hallucinations(propose_checked(conv, V5)[0]) == []
    # nor one after another record's name: the amount may be of both ("a total of")
    conv = airline_conv("Reservation 4XGCCM is unchanged.\nReservation 1N99U6: a refund of $198 "
                        "has been credited.", ("update_reservation_flights", updated(-396)),
                        more=more)
    assert hallucinations(propose_checked(conv, V5)[0]) == []
    # the amount before another record's name is judged, in the same answer
    conv = airline_conv("Reservation 1N99U6: a refund of $198 has been credited.\nReservation "
                        "4XGCCM is unchanged.", ("update_reservation_flights", updated(-396)),
                        more=more)
    (cand,) = hallucinations(propose_checked(conv, V5)[0])
    assert cand.span.text == "$198"


def test_v5_is_v4_with_amount_claims_and_not_the_default():
    v4, v5 = RULE_SETS["lineage-v4"], RULE_SETS["lineage-v5"]
    assert v5.amount_claims and not v4.amount_claims
    assert v5.applies("amount_claims", "airline") and v5.applies("amount_claims", "retail")
    assert not v5.applies("amount_claims", "telecom")
    assert dict(v5.domains) == dict(v4.domains) | {"amount_claims": {"airline", "retail"}}
    assert LineageConfig().signature() == "lineage-v4"
    assert V5.signature() == "lineage-v5"


@pytest.mark.parametrize("answer,found", [
    ("- **Net refund:** $114 to your Visa.", False),  # the net since the record was first read
    ("- Cabin upgrade charge: +$396 (credit card)", False),  # the earlier call's charge
    ("- Flight change refund: $510 (credit card)", False),  # this call's refund
    ("- Flight change refund: $600 (credit card)", True),
])
def test_a_report_may_restate_the_earlier_changes_of_its_record(answer, found):
    # claude-sonnet-4-5 task-32: an upgrade charged $396, the agent said so, then a change
    # refunded $510; the report lists both and their net
    more = (("call", [("cu", "update_reservation_flights", {"reservation_id": "1N99U6"})]),
            ("tool", "cu", updated(396)), ("a", "Your cabin is upgraded."))
    conv = airline_conv(answer, ("update_reservation_flights", updated(396, -510)), more=more)
    assert bool(hallucinations(propose_checked(conv, V5)[0])) is found
