"""Lineage rules ``lineage-v1`` on the real TauBench airline file (200 gpt-4o conversations).

Pinned so that ``--rules lineage-v1`` keeps reproducing the earlier releases (the default rules
have their own expectations in test_taubench.py).

The file is read from where tests/conftest.py finds it (the test fails with a clear message
when it is absent; it is never copied into the repository). Checked here: the summary of
spans by type and depth, every graph against the rules and its evidence against the text,
and ten graphs written out by hand after reading the conversations' turns.
"""

from __future__ import annotations

from collections import Counter

import pytest

from mtcabench.lineage import LineageConfig, LineageSummary, propose_lineage
from mtcabench.graph import check_graph, depth
from mtcabench.ingest import read_taubench

T0 = "taubench/airline/gpt-4o/task-0/trial-0"
T5 = "taubench/airline/gpt-4o/task-5/trial-0"
T10 = "taubench/airline/gpt-4o/task-10/trial-1"

# task-0/trial-0, the turns the graphs below walk through:
#  1 user: New York to Seattle on May 20th     3 user: user ID mia_li_3668
#  6 get_user_details(mia_li_3668) -> 7: Mia, certificate_7504069 amount 250, last_four 7447
#  8 search_direct_flight(JFK, SEA, 2024-05-20) -> 9: HAT069 06:00:00 $121, HAT083 ...
# 10 lists HAT069 and HAT083 "from New York (JFK) to Seattle (SEA)"
# 12 search_onestop_flight(JFK, SEA, 2024-05-20) -> 13: HAT136 19:00:00 $152 + HAT039 $103
# 14 lists HAT136 "Departure: 07:00 PM", $152, HAT039 $103    15 user: "Flight HAT136"
# 16 calculate("152 + 103") -> 17: 255.0   18 "$255", certificate $250, "Remaining $5"
# 20 book_reservation(...) -> 21 "Error: ... total price is 305, but paid 255"
# 24 calculate("305 - 250") -> 25: 55.0    26 "$305", "$250", "Remaining balance: $55"
# 28 book_reservation(...) -> 29 reservation HATHAT (echoes the flights it was given)
# 30 final summary: "Flight HAT136 (JFK to ATL) - Departure: 07:00 PM EST on May 20, 2024"
SEARCH_DIRECT = {(10, 9, "c"), (9, 8, "s")}  # JFK entered only as the search's own echo
SEARCH_ONESTOP = {(14, 13, "c"), (13, 12, "s"), (12, 10, "c")} | SEARCH_DIRECT
PROFILE = {(7, 6, "s"), (6, 3, "c")}
BOOKING = {(21, 20, "s"), (20, 18, "c"), (20, 15, "c"), (20, 14, "c"), (20, 13, "c"),
           (20, 7, "c"), (20, 3, "c"), (18, 7, "c"), (14, 10, "c")} | SEARCH_ONESTOP | PROFILE

#: (conversation, turn, start, span text) -> (type, edges as (child, parent, s|c)).
HAND_CHECKED = {
    # 10 "**Flight HAT069**": the direct search result 9, answering the call in 8 (whose
    # JFK/SEA/2024-05-20 no earlier turn states: the agent turned "New York" into JFK).
    (T0, 10, 101, "HAT069"): ("direct", SEARCH_DIRECT),
    # 14 "New York (JFK)": restates 10, which had it from 9 (9 only echoes its call's JFK,
    # and nothing else holds JFK, so the echo is the source).
    (T0, 14, 53, "JFK"): ("chained", {(14, 10, "c")} | SEARCH_DIRECT),
    # 18 "$255": the calculator result 17; its call 16 ("152 + 103") took both numbers from
    # the listing 14, which had them from the one-stop search 13.
    (T0, 18, 61, "255"): ("direct", {(18, 17, "c"), (17, 16, "s"), (16, 14, "c")} | SEARCH_ONESTOP),
    # 18 "Remaining balance: $5" = $255 - $250: the calculator (17) and the certificate (7).
    (T0, 18, 152, "5"): ("multi-source", {(18, 17, "c"), (18, 7, "c"), (17, 16, "s"),
                                          (16, 14, "c")} | SEARCH_ONESTOP | PROFILE),
    # 26 "$55": the calculator 25; its call 24 ("305 - 250") took 305 from the non-JSON error
    # 21 and 250 from 18; 21 answers the booking call 20, whose arguments came from 18 (250),
    # 15 (HAT136), 14 (JFK, SEA, HAT039), 13 (2024-05-20, an echo only), 7 (Mia, dob,
    # payment ids) and 3 (mia_li_3668).
    (T0, 26, 151, "55"): ("direct", {(26, 25, "c"), (25, 24, "s"), (24, 21, "c"),
                                     (24, 18, "c")} | BOOKING),
    # 30 "Flight HAT136": 29 echoes the booking's own flight; the user chose it in 15.
    (T0, 30, 113, "HAT136"): ("direct", {(30, 15, "c")}),
    # 30 "07:00 PM" is 19:00:00: the booking result has no times; 14 said "07:00 PM".
    (T0, 30, 150, "07:00 PM"): ("chained", {(30, 14, "c")} | SEARCH_ONESTOP),
    # task-5/trial-0: 3 user gives omar_rossi_1241; 4 get_user_details -> 5 lists
    # UM3OG5, 5RJ7UH, FQ8APE, QKRY03; 6 lists them; 7 user picks UM3OG5; 14
    # get_reservation_details(FQ8APE) -> 15 (echoes FQ8APE); 16 "Your reservation FQ8APE".
    (T5, 16, 17, "FQ8APE"): ("chained", {(16, 6, "c"), (6, 5, "c"), (5, 4, "s"), (4, 3, "c")}),
    # 10 "Your reservation UM3OG5": 9 echoes the call's id; the user typed it in 7.
    (T5, 10, 17, "UM3OG5"): ("direct", {(10, 7, "c")}),
    # task-10/trial-1: 1 user names H9ZU1C; 4 get_reservation_details(H9ZU1C) -> 5 with
    # created_at 2024-05-01T04:50:18; 6 "it was created on 2024-05-01".
    (T10, 6, 77, "2024-05-01"): ("direct", {(6, 5, "c"), (5, 4, "s"), (4, 1, "c")}),
}

#: A few evidence quotes checked by hand: span key -> {(child, parent): quote}.
HAND_QUOTES = {
    (T0, 26, 151, "55"): {(26, 25): "55.0", (24, 21): "305", (24, 18): "250",
                          (20, 15): "HAT136", (20, 3): "mia_li_3668",
                          (25, 24): 'calculate({"expression": "305 - 250"})'},
    (T0, 30, 150, "07:00 PM"): {(30, 14): "07:00 PM", (14, 13): "19:00:00"},
    (T10, 6, 77, "2024-05-01"): {(6, 5): "2024-05-01", (4, 1): "H9ZU1C"},
}

#: Pinned for rules lineage-v1 (which never changes: a new rule set is a new version).
EXPECTED_BY_TYPE = {"direct": 2718, "chained": 1048, "multi-source": 9, "hallucination": 0}
EXPECTED_BY_DEPTH = {1: 306, 2: 168, 3: 934, 4: 301, 5: 675, 6: 480, 7: 275, 8: 213, 9: 189,
                     10: 81, 11: 74, 12: 44, 13: 14, 14: 12, 15: 7, 16: 1, 17: 1}


@pytest.fixture(scope="module")
def tau(taubench_airline):
    convs = {c.id: c for c in read_taubench(taubench_airline)}
    summary = LineageSummary()
    cands = list(propose_lineage(convs.values(), LineageConfig(rules="lineage-v1"),
                                 summary=summary))
    return convs, cands, summary


def test_summary_by_type_and_depth(tau):
    convs, cands, summary = tau
    assert len(convs) == 200 and summary.conversations == 200
    assert summary.spans == len(cands)
    assert Counter(c.dependency_type.value for c in cands) == Counter(EXPECTED_BY_TYPE)
    assert summary.as_dict()["by_type"] == EXPECTED_BY_TYPE
    assert dict(Counter(depth(c.graph) for c in cands)) == EXPECTED_BY_DEPTH
    assert dict(summary.by_depth) == EXPECTED_BY_DEPTH
    # The bad inputs of this file are counted, not fatal.
    assert summary.tool_results == 1164
    assert summary.tool_results_not_json == 129  # "Transfer successful", "Error: ..."
    assert summary.tool_results_empty == 92  # think()
    text = "\n".join(summary.lines())
    assert "spans by type:  direct 2718, chained 1048" in text


def test_every_graph_valid_and_quoted(tau):
    convs, cands, _ = tau
    assert len({c.id for c in cands}) == len(cands)
    for c in cands:
        conv = convs[c.conversation_id]
        assert c.status == "ok" and c.annotator.name == "lineage"
        assert check_graph(c.graph, conv, c.span, record=c.id) == []
        assert conv.turns[c.span.turn].content[c.span.start:c.span.end] == c.span.text
        for e in c.graph.edges:
            assert conv.turns[e.parent].text[e.evidence.start:e.evidence.end] == e.evidence.quote


@pytest.mark.parametrize("key", list(HAND_CHECKED), ids=lambda k: f"{k[0][24:]}-{k[1]}-{k[3]}")
def test_hand_checked_graph(tau, key):
    convs, cands, _ = tau
    cid, turn, start, text = key
    assert convs[cid].turns[turn].content[start:start + len(text)] == text
    (cand,) = [c for c in cands if c.conversation_id == cid and c.span.turn == turn
               and c.span.start == start]
    dtype, edges = HAND_CHECKED[key]
    assert cand.span.text == text
    assert cand.dependency_type.value == dtype
    assert {(e.child, e.parent, e.kind.value[0]) for e in cand.graph.edges} == edges
    for pair, quote in HAND_QUOTES.get(key, {}).items():
        assert next(e for e in cand.graph.edges if e.pair == pair).evidence.quote == quote
