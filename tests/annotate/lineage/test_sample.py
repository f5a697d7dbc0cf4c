"""Lineage rules ``lineage-v4`` (the default) on the bundled sample: every span and graph,
written by hand from the conversations (the v1 expectations are in test_sample_v1.py).

The three conversations (scripts/make_sample.py):
- s1, a chain through a tool call and a summary: 1 user gives sara_doe_496; 2 calls
  get_user_details; 3 returns reservations 4WQ150, VAAOXJ; 4 lists them; 5 "the first one";
  6 calls get_reservation_details(4WQ150); 7 returns the trip (JFK, SEA, HAT136, 2024-05-20,
  151, credit_card_7815826); 8 summarises it; 10 repeats HAT136, $151, credit_card_7815826.
- s2, a multi-source answer: 1 user gives ORD, LAX, 2024-05-22, omar_khan_102; 3 profile
  (gift_card_3576581 holding 340); 5 search result (HAT227, ORD, 08:00:00, business 412); 6
  answers with all of them and $72 = 412 - 340.
- s3, hallucinated values: 1 user asks about HAT045; 2 calls get_flight_status with today's
  date from the system policy (turn 0); 3 says estimated_departure_time_est 17:40:00; 4 states
  18:25:00 and a seat 14C found nowhere; 7 is the non-JSON "Transfer successful".

What v2 changes here, and why: the answer in s1/8 read 4WQ150 from the reservation 7 that
shows it (v1 skipped 7 because its call passed the id, and went to the listing 4), and s2/6
read ORD from the search result 5 (v1: straight to the user's turn 1); both are now answer ->
tool result -> its call -> where the call's argument came from.
"""

from __future__ import annotations

from collections import Counter

import pytest

from mtcabench.lineage import RULES_VERSION, LineageSummary, propose_lineage
from mtcabench.graph import check_graph, depth
from mtcabench.ingest import read_taubench

S1 = "taubench/airline/sample/task-s1/trial-0"
S2 = "taubench/airline/sample/task-s2/trial-0"
S3 = "taubench/airline/sample/task-s3/trial-0"

# Graph pieces, as (child, parent, kind); "s" = structural, "c" = content.
S1_PROFILE = {(3, 2, "s"), (2, 1, "c")}  # profile lookup <- its call <- user's id
S1_RESERVATION = {(7, 6, "s"), (6, 4, "c"), (4, 3, "c")} | S1_PROFILE  # call took 4WQ150 from 4
S2_SEARCH = {(5, 4, "s"), (4, 1, "c")}  # the search took ORD, LAX, 2024-05-22 from the user
S2_PROFILE = {(3, 2, "s"), (2, 1, "c")}

#: (conversation, turn, span text) -> (dependency type, edges). Span offsets are the first
#: occurrence of the text in the turn (checked below against the turn's content).
EXPECTED = {
    (S1, 4, "Sara"): ("direct", {(4, 3, "c")} | S1_PROFILE),
    (S1, 4, "4WQ150"): ("direct", {(4, 3, "c")} | S1_PROFILE),
    (S1, 4, "VAAOXJ"): ("direct", {(4, 3, "c")} | S1_PROFILE),
    # 7 shows 4WQ150 (its call passed it): the summary read it there; the call 6 took it from
    # the listing 4, which had it from the profile 3.
    (S1, 8, "4WQ150"): ("direct", {(8, 7, "c")} | S1_RESERVATION),
    (S1, 8, "JFK"): ("direct", {(8, 7, "c")} | S1_RESERVATION),
    (S1, 8, "SEA"): ("direct", {(8, 7, "c")} | S1_RESERVATION),
    (S1, 8, "HAT136"): ("direct", {(8, 7, "c")} | S1_RESERVATION),
    (S1, 8, "2024-05-20"): ("direct", {(8, 7, "c")} | S1_RESERVATION),
    (S1, 8, "credit_card_7815826"): ("direct", {(8, 7, "c")} | S1_RESERVATION),
    # The answer repeats what the summary (8) said: the chain goes through it to the source.
    (S1, 10, "HAT136"): ("chained", {(10, 8, "c"), (8, 7, "c")} | S1_RESERVATION),
    (S1, 10, "credit_card_7815826"): ("chained", {(10, 8, "c"), (8, 7, "c")} | S1_RESERVATION),
    # The summary did not mention the price: straight to the reservation lookup.
    (S1, 10, "151"): ("direct", {(10, 7, "c")} | S1_RESERVATION),
    (S2, 6, "HAT227"): ("direct", {(6, 5, "c")} | S2_SEARCH),
    # The search result 5 shows ORD: the answer read it there; the search's call took it from
    # the user's request 1.
    (S2, 6, "ORD"): ("direct", {(6, 5, "c")} | S2_SEARCH),
    (S2, 6, "08:00:00"): ("direct", {(6, 5, "c")} | S2_SEARCH),
    (S2, 6, "412"): ("direct", {(6, 5, "c")} | S2_SEARCH),
    (S2, 6, "gift_card_3576581"): ("direct", {(6, 3, "c")} | S2_PROFILE),
    (S2, 6, "340"): ("direct", {(6, 3, "c")} | S2_PROFILE),
    # $72 = $412 - $340: two independent sources.
    (S2, 6, "72"): ("multi-source", {(6, 5, "c"), (6, 3, "c")} | S2_SEARCH | S2_PROFILE),
    (S3, 4, "HAT045"): ("direct", {(4, 1, "c")}),
    # 18:25:00 occurs nowhere earlier; the clause names the key of turn 3's one value
    # 17:40:00. The graph holds what primed it: the status result, its call, and the call's
    # sources (the user's flight number, today's date in the system policy).
    (S3, 4, "18:25:00"): ("hallucination", {(4, 3, "c"), (3, 2, "s"), (2, 1, "c"), (2, 0, "c")}),
}

#: Evidence quotes checked by hand: (conversation, span key) -> {(child, parent): quote}.
QUOTES = {
    (S1, 8, "4WQ150"): {(8, 7): "4WQ150", (6, 4): "4WQ150", (4, 3): "4WQ150",
                        (7, 6): 'get_reservation_details({"reservation_id": "4WQ150"})'},
    (S1, 10, "HAT136"): {(10, 8): "HAT136", (8, 7): "HAT136", (6, 4): "4WQ150",
                         (4, 3): "4WQ150", (2, 1): "sara_doe_496",
                         (3, 2): 'get_user_details({"user_id": "sara_doe_496"})'},
    (S2, 6, "ORD"): {(6, 5): "ORD", (4, 1): "ORD"},
    (S2, 6, "72"): {(6, 5): "412", (6, 3): "340", (4, 1): "ORD"},
    (S3, 4, "18:25:00"): {(4, 3): "17:40:00", (2, 1): "HAT045", (2, 0): "2024-05-15"},
}


@pytest.fixture(scope="module")
def run(sample_path):
    convs = {c.id: c for c in read_taubench(sample_path)}
    summary = LineageSummary()
    cands = list(propose_lineage(convs.values(), summary=summary))
    return convs, cands, summary


def _key(c):
    return (c.conversation_id, c.span.turn, c.span.text)


def test_the_default_rules_are_v4():
    # v3 adds the elapsed-time claims to v2, v4 domains (the sample is airline: v3's rules);
    # the sample holds none, so its spans are v2's
    assert RULES_VERSION == "lineage-v4"


def test_exactly_the_expected_spans(run):
    convs, cands, _ = run
    assert sorted(_key(c) for c in cands) == sorted(EXPECTED)
    for c in cands:
        content = convs[c.conversation_id].turns[c.span.turn].content
        assert c.span.start == content.index(c.span.text)


@pytest.mark.parametrize("key", sorted(EXPECTED), ids=lambda k: f"{k[0][-13:-8]}-{k[1]}-{k[2]}")
def test_graph_and_type(run, key):
    convs, cands, _ = run
    (cand,) = [c for c in cands if _key(c) == key]
    dtype, edges = EXPECTED[key]
    assert cand.dependency_type.value == dtype
    assert {(e.child, e.parent, e.kind.value[0]) for e in cand.graph.edges} == edges
    assert set(cand.graph.nodes) == {cand.span.turn} | {x for e in edges for x in e[:2]}
    assert check_graph(cand.graph, convs[cand.conversation_id], cand.span, record=cand.id) == []
    assert cand.annotator.name == "lineage" and cand.annotator.rules_version == "lineage-v4"


def test_evidence_quotes_by_hand(run):
    convs, cands, _ = run
    for key, quotes in QUOTES.items():
        (cand,) = [c for c in cands if _key(c) == key]
        conv = convs[cand.conversation_id]
        by_pair = {e.pair: e.evidence for e in cand.graph.edges}
        for pair, quote in quotes.items():
            ev = by_pair[pair]
            assert ev.quote == quote
            assert conv.turns[pair[1]].text[ev.start:ev.end] == quote


def test_summary_counts(run):
    _, cands, summary = run
    d = summary.as_dict()
    assert d["rules_version"] == "lineage-v4" and d["settings"]["clause_spans"] is True
    assert d["spans"] == len(cands) == 21
    assert d["by_type"] == {"direct": 17, "chained": 2, "multi-source": 1, "hallucination": 1}
    depths = Counter(depth(c.graph) for c in cands)
    assert d["by_depth"] == {str(k): v for k, v in sorted(depths.items())}
    # 14C (a seat found nowhere, contradicting nothing) is counted, not proposed; no clause of
    # the sample joins two independent sources ("Flight HAT227 leaves ORD at 08:00:00 and a
    # business seat costs $412" is all one search result).
    assert d["skipped"]["unsupported-value"] == 1
    assert d["skipped"]["clause-one-source"] == 5
