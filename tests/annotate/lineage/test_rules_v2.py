"""Each rule of lineage-v2 on a small hand-built conversation, with what lineage-v1 did."""

from __future__ import annotations

import json

import pytest

from mtcabench.lineage import RULE_SETS, LineageConfig
from mtcabench.model import Conversation, Role, ToolCall, Turn
from tests.support.lineage_checks import propose_checked, span_texts

V1 = LineageConfig(rules="lineage-v1")


def build(*specs, cid="t/2") -> Conversation:
    """Turns from short specs (as in test_rules.py): ("s"|"u"|"a", text),
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


def by_text(cands, turn, text):
    (cand,) = [c for c in cands if c.span.turn == turn and c.span.text == text]
    return cand


# ---------------------------------------------------------------- the edge rule
PROFILE_THEN_RETRIEVAL = [
    POLICY,
    ("u", "My user id is ab_123."),
    ("call", [("c1", "get_user_details", {"user_id": "ab_123"})]),
    ("tool", "c1", {"reservations": ["X9Y8Z7", "K67C4W"]}),
    ("a", "You have two reservations: X9Y8Z7 and K67C4W."),
    ("u", "The first one."),
    ("call", [("c2", "get_reservation_details", {"reservation_id": "X9Y8Z7"})]),
    ("tool", "c2", {"reservation_id": "X9Y8Z7", "origin": "JFK"}),
    ("a", "Reservation X9Y8Z7 flies from JFK."),
]


def test_a_value_retrieved_again_links_to_the_retrieval_then_its_call():
    conv = build(*PROFILE_THEN_RETRIEVAL)
    cands, _ = propose_checked(conv)
    # 8 read X9Y8Z7 from 7, which shows it although its call 6 passed it; 6 took it from
    # the listing 4, which had it from the profile 3, whose call used the user's id.
    chain = {(8, 7, "c"), (7, 6, "s"), (6, 4, "c"), (4, 3, "c"), (3, 2, "s"), (2, 1, "c")}
    cand = by_text(cands, 8, "X9Y8Z7")
    assert edges(cand) == chain and cand.dependency_type.value == "direct"
    # v1 skipped 7 as an echo and linked the answer to the listing: chained, no retrieval.
    v1 = by_text(propose_checked(conv, V1)[0], 8, "X9Y8Z7")
    assert edges(v1) == {(8, 4, "c"), (4, 3, "c"), (3, 2, "s"), (2, 1, "c")}
    assert v1.dependency_type.value == "chained"


def test_a_user_typed_value_echoed_by_the_result_the_answer_lists():
    conv = build(POLICY,
                 ("u", "Please check reservation X9Y8Z7."),
                 ("call", [("c1", "get_reservation_details", {"reservation_id": "X9Y8Z7"})]),
                 ("tool", "c1", {"reservation_id": "X9Y8Z7", "origin": "JFK",
                                 "destination": "SEA"}),
                 ("a", "Reservation X9Y8Z7: JFK to SEA."))
    cands, _ = propose_checked(conv)
    assert edges(by_text(cands, 4, "X9Y8Z7")) == {(4, 3, "c"), (3, 2, "s"), (2, 1, "c")}
    assert edges(by_text(propose_checked(conv, V1)[0], 4, "X9Y8Z7")) == {(4, 1, "c")}


# ---------------------------------------------------------------- the record anchor
TWO_RESERVATIONS = [
    POLICY,
    ("u", "My id is ab_123."),
    ("call", [("c1", "get_user_details", {"user_id": "ab_123"})]),
    ("tool", "c1", {"reservations": ["AAA111", "BBB222"]}),
    ("call", [("c2", "get_reservation_details", {"reservation_id": "AAA111"})]),
    ("tool", "c2", {"reservation_id": "AAA111", "origin": "LAS", "destination": "ATL"}),
    ("call", [("c3", "get_reservation_details", {"reservation_id": "BBB222"})]),
    ("tool", "c3", {"reservation_id": "BBB222", "origin": "LAS", "destination": "ATL"}),
]
AAA = {(5, 4, "s"), (4, 3, "c"), (3, 2, "s"), (2, 1, "c")}  # AAA111's result and its sources


def test_a_clause_naming_a_record_is_read_from_that_record():
    conv = build(*TWO_RESERVATIONS,
                 ("a", "1. Reservation AAA111: LAS to ATL\n2. Reservation BBB222: LAS to ATL"))
    cands, _ = propose_checked(conv)
    # LAS is also in the later result 7, of BBB222: the clause names AAA111, so 5.
    assert edges(by_text(cands, 8, "LAS")) == {(8, 5, "c")} | AAA
    assert edges(by_text(cands, 8, "AAA111")) == {(8, 5, "c")} | AAA
    assert edges(by_text(propose_checked(conv, V1)[0], 8, "LAS")) == {
        (8, 7, "c"), (7, 6, "s"), (6, 3, "c"), (3, 2, "s"), (2, 1, "c")}


def test_a_list_item_heading_names_the_record_of_its_lines():
    conv = build(*TWO_RESERVATIONS,
                 ("a", "1. Reservation AAA111\n   - Route: LAS to ATL\n2. Reservation BBB222"))
    cands, _ = propose_checked(conv)
    assert edges(by_text(cands, 8, "LAS")) == {(8, 5, "c")} | AAA


def test_the_record_travels_with_the_need_into_an_earlier_answer():
    conv = build(*TWO_RESERVATIONS,
                 ("a", "1. Reservation BBB222: LAS to ATL\n2. Reservation AAA111: LAS to ATL"),
                 ("u", "Cancel the second one."),
                 ("a", "Cancelling AAA111 (LAS to ATL)."))
    cands, _ = propose_checked(conv)
    # 8's first LAS belongs to BBB222 (read from 7); 10 needs AAA111's LAS: 8 at AAA111's
    # line, and from there AAA111's result 5.
    assert edges(by_text(cands, 8, "LAS")) == {
        (8, 7, "c"), (7, 6, "s"), (6, 3, "c"), (3, 2, "s"), (2, 1, "c")}
    cand = by_text(cands, 10, "LAS")
    assert edges(cand) == {(10, 8, "c"), (8, 5, "c")} | AAA
    assert cand.dependency_type.value == "chained"
    quote = next(e.evidence for e in cand.graph.edges if e.pair == (10, 8))
    assert quote.start > conv.turns[8].text.index("AAA111")  # AAA111's LAS, not BBB222's


# ---------------------------------------------------------------- city names
def test_a_city_glossing_an_airport_code_is_no_copied_value():
    conv = build(POLICY,
                 ("u", "My id is ab_123."),
                 ("call", [("c1", "get_user_details", {"user_id": "ab_123"})]),
                 ("tool", "c1", {"address": {"city": "Denver"}, "hometown": "Houston"}),
                 ("a", "You fly from Houston (IAH) to Denver, then back to Houston."))
    cands, summary = propose_checked(conv)
    # "Houston (IAH)" glosses the code; an address's city is no value; the second
    # "Houston" (a hometown, no code after it) is a copied value.
    assert span_texts(cands) == [(4, "Houston")] and cands[0].span.start > 40
    assert summary.skipped["code-gloss"] == 1
    assert span_texts(propose_checked(conv, V1)[0]) == [(4, "Houston"), (4, "Denver")]


# ---------------------------------------------------------------- normalised matching
TRIP = [
    POLICY,
    ("u", "I want to fly on May 20th, after 3 PM, for two passengers."),
    ("call", [("c1", "search_direct_flight", {"date": "2024-05-20"})]),
    ("tool", "c1", [{"flight_number": "HAT001", "scheduled_departure_time_est": "19:00:00",
                     "prices": {"economy": 1234.5}}]),
    ("a", "On May 20, 2024 flight HAT001 leaves at 7 PM and costs $1,234.50 for two "
          "passengers."),
]


def test_normalised_values_are_traced_and_quoted_as_written():
    conv = build(*TRIP)
    cands, summary = propose_checked(conv)
    assert span_texts(cands) == [(4, "On May 20, 2024 flight HAT001 leaves at 7 PM and costs "
                                "$1,234.50 for two passengers"), (4, "May 20, 2024"),
                            (4, "HAT001"), (4, "7 PM"), (4, "1,234.50"), (4, "two passengers")]
    search = {(4, 3, "c"), (3, 2, "s"), (2, 1, "c")}  # the call's date: the user's "May 20th"
    assert edges(by_text(cands, 4, "May 20, 2024")) == {(4, 1, "c")}
    assert edges(by_text(cands, 4, "7 PM")) == search
    assert edges(by_text(cands, 4, "two passengers")) == {(4, 1, "c")}
    quotes = {e.pair: e.evidence.quote for e in by_text(cands, 4, "HAT001").graph.edges}
    assert quotes[(2, 1)] == "May 20th" and quotes[(4, 3)] == "HAT001"
    assert summary.skipped["argument-without-source"] == 0
    # v1 reads none of these: "May 20th", "3 PM", "7 PM", "two passengers" are no forms, so
    # the date has no source but the call's own line, and the call's date no source at all
    v1, v1_summary = propose_checked(conv, V1)
    assert span_texts(v1) == [(4, "HAT001"), (4, "1,234.50")]
    assert v1_summary.skipped["no-source"] == 1
    assert v1_summary.skipped["argument-without-source"] == 1


def test_ids_whatever_their_case_and_separators_and_amounts_without_sign():
    conv = build(POLICY,
                 ("u", "My id is ab_123."),
                 ("call", [("c1", "get_user_details", {"user_id": "ab_123"})]),
                 ("tool", "c1", {"payment_methods": {"certificate_7504069": {"amount": 250}},
                                 "payment_history": [{"amount": -6594}]}),
                 ("a", "Use Certificate 7504069: $250. A refund of $6,594 is on its way."))
    cands, _ = propose_checked(conv)
    assert span_texts(cands) == [(4, "Certificate 7504069"), (4, "250"), (4, "6,594")]
    assert {c.graph.edges[0].evidence.quote for c in cands} == {
        "certificate_7504069", "250", "6594"}


# ---------------------------------------------------------------- multi-source clauses
def test_a_clause_joining_independent_sources_is_multi_source():
    cands, _ = propose_checked(build(*TRIP))
    clause = cands[0]
    assert clause.dependency_type.value == "multi-source"
    # the union of its values' graphs: the user (date, count) and the search (flight,
    # time, price, with its call's date from the user)
    assert edges(clause) == {(4, 1, "c"), (4, 3, "c"), (3, 2, "s"), (2, 1, "c")}
    assert "independent sources (turns 1, 3)" in clause.rationale
    assert propose_checked(build(*TRIP), LineageConfig(clause_spans=False))[0][0].span.text == "May 20, 2024"


def test_values_read_from_one_source_make_no_clause_span():
    conv = build(*PROFILE_THEN_RETRIEVAL)
    cands, summary = propose_checked(conv)
    assert [c.span.text for c in cands if c.span.turn == 8] == ["X9Y8Z7", "JFK"]
    assert summary.skipped["clause-one-source"] == 2  # 4 (both from 3) and 8 (both from 7)


def test_sources_are_not_independent_when_one_shows_the_other_value():
    # The user typed the id and the date; the result shows both: the answer read both there.
    conv = build(POLICY,
                 ("u", "Reservation X9Y8Z7, flying May 20th."),
                 ("call", [("c1", "get_reservation_details", {"reservation_id": "X9Y8Z7"})]),
                 ("tool", "c1", {"reservation_id": "X9Y8Z7", "date": "2024-05-20"}),
                 ("a", "Reservation X9Y8Z7 is on 2024-05-20."))
    cands, _ = propose_checked(conv)
    assert [c.dependency_type.value for c in cands] == ["direct", "direct"]


# ---------------------------------------------------------------- membership claims
def claim_conv(answer, *, tier="regular", profile=True, user="Hi, as a Gold member I want "
               "compensation. My id is ab_123."):
    turns = [POLICY, ("u", user)]
    if profile:
        turns += [("call", [("c1", "get_user_details", {"user_id": "ab_123"})]),
                  ("tool", "c1", {"name": "Ab", "membership": tier})]
    return build(*turns, ("a", answer))


def test_a_tier_the_profile_contradicts_is_a_hallucination():
    conv = claim_conv("Since you are a Gold member, I can offer a certificate.")
    cands, _ = propose_checked(conv)
    (cand,) = cands
    assert cand.span.text == "Gold" and cand.dependency_type.value == "hallucination"
    # what primed it: the contradicted profile, its call, the call's source, the claim
    assert edges(cand) == {(4, 3, "c"), (3, 2, "s"), (2, 1, "c"), (4, 1, "c")}
    quotes = {e.pair: e.evidence.quote for e in cand.graph.edges}
    assert quotes[(4, 3)] == "regular" and quotes[(4, 1)] == "Gold"
    assert propose_checked(conv, V1)[0] == [] and propose_checked(conv, LineageConfig(hallucinations=False))[0] == []


@pytest.mark.parametrize("answer, kwargs, counted", [
    ("If you are a Gold member, you may get a certificate.", {}, 1),  # a hypothesis
    ("As a gold member, you would be allowed 3 free bags.", {}, 1),
    ("Since you are a Gold member, I can help.", {"profile": False}, 0),  # nothing to check
    ("Since you are a Gold member, I can help.", {"tier": "gold"}, 0),  # the profile agrees
])
def test_no_hallucination_without_a_contradicted_assertion(answer, kwargs, counted):
    cands, summary = propose_checked(claim_conv(answer, **kwargs))
    assert [c for c in cands if c.dependency_type.value == "hallucination"] == []
    assert summary.skipped["hypothetical-claim"] == counted


def test_a_claim_repeated_from_the_agents_own_claim_chains_through_it():
    conv = build(POLICY, ("u", "I'm a Gold member; my id is ab_123."),
                 ("call", [("c1", "get_user_details", {"user_id": "ab_123"})]),
                 ("tool", "c1", {"membership": "silver"}),
                 ("a", "Since you are a Gold member, I can offer a certificate."),
                 ("u", "Thanks."),
                 ("a", "As a valued Gold member, your certificate is on its way."))
    cands, _ = propose_checked(conv)
    assert edges(by_text(cands, 6, "Gold")) == {(6, 3, "c"), (3, 2, "s"), (2, 1, "c"),
                                                (6, 4, "c"), (4, 1, "c")}


# ---------------------------------------------------------------- versions and settings
def test_rules_versions_and_signatures():
    assert set(RULE_SETS) == {"lineage-v1", "lineage-v2", "lineage-v3", "lineage-v4", "lineage-v5"}
    assert RULE_SETS["lineage-v2"].echoes_carry and not RULE_SETS["lineage-v1"].echoes_carry
    # v3 is v2 with the elapsed-time claims; v4 (the default) gives rules their domains
    assert RULE_SETS["lineage-v3"].elapsed_claims and not RULE_SETS["lineage-v2"].elapsed_claims
    assert LineageConfig().signature() == "lineage-v4"
    assert LineageConfig(rules="lineage-v3").signature() == "lineage-v3"
    assert LineageConfig(rules="lineage-v2").signature() == "lineage-v2"
    assert LineageConfig(rules="lineage-v1").signature() == "lineage-v1"
    assert LineageConfig(clause_spans=False).signature().startswith("lineage-v4+")
    # v1 has no clause spans to turn off: its settings and hash are the ones it always had
    assert LineageConfig(rules="lineage-v1", clause_spans=False).signature() == "lineage-v1"
    assert "clause_spans" not in V1.as_dict() and "rules" not in V1.as_dict()
    with pytest.raises(ValueError, match="rules must be one of lineage-v1, lineage-v2, "
                       "lineage-v3, lineage-v4"):
        LineageConfig(rules="lineage-v9")
