"""Each lineage rule on a small hand-built conversation: what is traced, skipped and counted."""

from __future__ import annotations

import json

import pytest

from mtcabench.lineage import (
    LineageConfig,
    classify,
    find_value,
    make_value,
)
from mtcabench.model import Conversation, Role, ToolCall, Turn

from tests.support.lineage_checks import propose_checked, span_texts


def build(*specs, cid="t/1") -> Conversation:
    """Turns from short specs: ("s"|"u"|"a", text), ("call", [(id, name, args)], text),
    ("tool", call id, result)."""
    turns = []
    for i, spec in enumerate(specs):
        kind = spec[0]
        if kind in ("s", "u", "a"):
            role = {"s": Role.SYSTEM, "u": Role.USER, "a": Role.ASSISTANT}[kind]
            turns.append(Turn(index=i, role=role, content=spec[1]))
        elif kind == "call":
            calls = [ToolCall(id=c, name=n, arguments=a) for c, n, a in spec[1]]
            content = spec[2] if len(spec) > 2 else ""
            turns.append(Turn(index=i, role=Role.ASSISTANT, content=content, tool_calls=calls))
        else:
            result = spec[2] if isinstance(spec[2], str) else json.dumps(spec[2])
            turns.append(Turn(index=i, role=Role.TOOL, content=result, tool_call_id=spec[1]))
    return Conversation(id=cid, source="test", domain="airline", turns=turns)


def edges(cand):
    return {(e.child, e.parent, e.kind.value[0]) for e in cand.graph.edges}


LOOKUP = [
    ("s", "Policy. Today is 2024-05-15."),
    ("u", "My id is ab_12."),
    ("call", [("c1", "get_user", {"user_id": "ab_12"})]),
    ("tool", "c1", {"reservations": ["X9Y8Z7"], "tier": "gold"}),
]


def test_no_assistant_text_is_counted_not_an_error():
    conv = build(*LOOKUP)
    cands, summary = propose_checked(conv)
    assert cands == []
    assert summary.conversations_without_assistant_text == 1 and summary.conversations == 1


def test_non_json_tool_result_contributes_its_typed_tokens():
    conv = build(*LOOKUP,
                 ("call", [("c2", "book", {"flight": "HAT290"})]),
                 ("tool", "c2", "Error: not enough seats on flight HAT290, try HAT291"),
                 ("call", [("c3", "transfer", {"summary": "user asks to move to HAT555"})]),
                 ("tool", "c3", "Transfer successful"),
                 ("a", "Flight HAT291 may have seats; HAT290 is full; HAT555 is not."))
    cands, summary = propose_checked(conv)
    # HAT555 is only in the agent's own call line: no turn introduced it (no-source).
    assert span_texts(cands) == [(8, "HAT291"), (8, "HAT290")]
    assert edges(cands[0]) == {(8, 5, "c"), (5, 4, "s")}  # "book" took HAT290 from nowhere
    # HAT290 is in 5 only because 4 passed it (an echo), the one turn that holds it
    assert edges(cands[1]) == {(8, 5, "c"), (5, 4, "s")}
    assert summary.tool_results_not_json == 2
    assert summary.skipped["no-source"] == 1
    assert summary.skipped["argument-without-source"] == 1  # HAT290 in the call, counted once


def test_empty_tool_result_is_counted():
    conv = build(*LOOKUP, ("call", [("c2", "think", {"thought": "X9Y8Z7 is the one"})]),
                 ("tool", "c2", ""), ("a", "It is X9Y8Z7."))
    cands, summary = propose_checked(conv)
    assert summary.tool_results_empty == 1
    # think's result says nothing: the answer's value comes from the lookup.
    assert edges(cands[0]) == {(6, 3, "c"), (3, 2, "s"), (2, 1, "c")}


@pytest.mark.parametrize("result", ["NaN", "null", "true", '"HAT777"', "[[1, [2, {}]]]",
                                    '{"x": Infinity}', "{not json", "   "])
def test_odd_tool_results_never_crash(result):
    conv = build(("u", "Flight HAT777?"), ("call", [("c1", "f", {"flight": "HAT777"})]),
                 ("tool", "c1", result), ("a", "HAT777 it is."))
    cands, summary = propose_checked(conv)
    assert span_texts(cands) == [(3, "HAT777")] and summary.tool_results == 1


def test_frequent_value_skipped_by_stated_threshold():
    turns = [("u", f"Is X9Y8Z7 ok? ({i})") for i in range(4)] + [("a", "X9Y8Z7 is fine.")]
    conv = build(*turns)
    cands, summary = propose_checked(conv, LineageConfig(max_value_turns=3))
    assert cands == [] and summary.skipped["frequent-value"] == 1
    cands, _ = propose_checked(conv, LineageConfig(max_value_turns=4))
    assert span_texts(cands) == [(4, "X9Y8Z7")] and edges(cands[0]) == {(4, 3, "c")}


def test_min_length_and_stop_list_are_configurable():
    conv = build(("u", "From JFK, id ab_12."), ("call", [("c1", "f", {"o": "JFK", "u": "ab_12"})]),
                 ("tool", "c1", {"x": 1}), ("a", "From JFK for ab_12."))
    cands, _ = propose_checked(conv)
    assert span_texts(cands) == [(3, "JFK"), (3, "ab_12")]
    cands, summary = propose_checked(conv, LineageConfig(min_length=4))
    assert span_texts(cands) == [(3, "ab_12")] and summary.excluded_values["min-length"] >= 1
    cands, summary = propose_checked(conv, LineageConfig(stop_list=frozenset({"jfk"})))
    assert span_texts(cands) == [(3, "ab_12")] and summary.excluded_values["stop-list"] >= 1
    # other settings never pass for the defaults: the rules version carries their hash
    assert cands[0].annotator.rules_version.startswith("lineage-v4+")
    assert propose_checked(conv)[0][0].annotator.rules_version == "lineage-v4"
    v1 = LineageConfig(rules="lineage-v1", stop_list=frozenset({"jfk"}))
    assert propose_checked(conv, v1)[0][0].annotator.rules_version.startswith("lineage-v1+")
    assert summary.as_dict()["settings"]["stop_list"] == ["jfk"]
    with pytest.raises(ValueError, match="min_length"):
        LineageConfig(min_length=0)
    with pytest.raises(ValueError, match="max_length"):
        LineageConfig(min_length=5, max_length=4)


def test_lower_case_words_only_with_include_words():
    conv = build(*LOOKUP, ("a", "Your tier is gold."))
    cands, summary = propose_checked(conv)
    assert cands == [] and summary.excluded_values["word"] == 1
    cands, _ = propose_checked(conv, LineageConfig(include_words=True))
    assert span_texts(cands) == [(4, "gold")]


@pytest.mark.parametrize("text, leaf, found", [
    ("paid 1515 today", 151, None),
    ("paid 151.5 today", 151, None),
    ("paid 151.00 today", 151, "151.00"),
    ("card credit_card_151 here", 151, None),
    ("departs 06:00 PM", "06:00:00", None),  # 06:00 PM is 18:00:00
    ("departs 06:00 AM", "06:00:00", "06:00 AM"),
    ("departs 07:00 PM", "19:00:00", "07:00 PM"),
    ("departs 7:00 PM", "19:00:00", "7:00 PM"),
    ("departs 06:00:00", "06:00:00", "06:00:00"),
    ("departs 06:00:30", "06:00:00", None),
    ("made on May 1, 2024.", "2024-05-01", "May 1, 2024"),
    ("at 2024-05-01T04:50:18", "2024-05-01", "2024-05-01"),  # the date part of a datetime
    ("total $1,234.00", 1234, "1,234.00"),
])
def test_exact_forms_and_boundaries(text, leaf, found):
    hit = find_value(text, make_value(leaf))
    assert (text[hit[0]:hit[1]] if hit else None) == found


def test_classify_kinds():
    assert [classify(x) for x in ("HAT136", "JFK", "Sara", "economy", "New York",
                                  "19:00:00", "2024-05-20", "a@b.com", "not found here",
                                  "2024-05-01T04:50:18")] == [
        "id", "code", "name", "word", "name", "time", "date", "email", "prose", "datetime"]


def test_calculator_answer_short_but_only_as_amount():
    conv = build(("u", "Price 305, paid 250."),
                 ("call", [("c1", "calculate", {"expression": "305 - 250"})]),
                 ("tool", "c1", "55.0"),
                 ("a", "You owe $55. That takes 55 minutes."))
    cands, _ = propose_checked(conv)
    assert span_texts(cands) == [(3, "55")] and cands[0].span.start == len("You owe $")
    # the expression's numbers are traced as the call's argument values
    assert edges(cands[0]) == {(3, 2, "c"), (2, 1, "s"), (1, 0, "c")}


def test_datetime_states_its_date():
    conv = build(("u", "Reservation X9Y8Z7 please."),
                 ("call", [("c1", "get", {"reservation_id": "X9Y8Z7"})]),
                 ("tool", "c1", {"reservation_id": "X9Y8Z7", "created_at": "2024-05-01T04:50:18"}),
                 ("a", "It was created on 2024-05-01, reservation X9Y8Z7."))
    cands, _ = propose_checked(conv)
    assert span_texts(cands) == [(3, "2024-05-01"), (3, "X9Y8Z7")]
    assert edges(cands[0]) == {(3, 2, "c"), (2, 1, "s"), (1, 0, "c")}
    assert cands[0].graph.edges[0].evidence.quote == "2024-05-01"
    # v2: the answer read X9Y8Z7 from the result 2 that shows it, whose call took it from 0;
    # v1 skipped 2 as an echo of its own call's argument
    assert edges(cands[1]) == {(3, 2, "c"), (2, 1, "s"), (1, 0, "c")}
    v1, _ = propose_checked(conv, LineageConfig(rules="lineage-v1"))
    assert edges(v1[1]) == {(3, 0, "c")}


def test_parallel_calls_link_to_their_own_call_line():
    conv = build(("u", "Check X9Y8Z7 and K67C4W."),
                 ("call", [("c1", "get", {"reservation_id": "X9Y8Z7"}),
                           ("c2", "get", {"reservation_id": "K67C4W"})], "Checking both."),
                 ("tool", "c1", {"flight": "HAT001"}),
                 ("tool", "c2", {"flight": "HAT002"}),
                 ("a", "The second is on HAT002."))
    cands, _ = propose_checked(conv)
    (cand,) = cands
    assert edges(cand) == {(4, 3, "c"), (3, 1, "s"), (1, 0, "c")}
    structural = next(e for e in cand.graph.edges if e.kind.value == "structural")
    assert structural.evidence.quote == 'get({"reservation_id": "K67C4W"})'
    first_line = 'get({"reservation_id": "X9Y8Z7"})'
    assert structural.evidence.start == len("Checking both.\n") + len(first_line) + 1
    child_edge = next(e for e in cand.graph.edges if e.pair == (1, 0))
    assert child_edge.evidence.quote == "K67C4W"  # only the answering call's argument


def test_repeat_in_turn_is_one_span():
    conv = build(*LOOKUP, ("a", "X9Y8Z7, yes X9Y8Z7."))
    cands, summary = propose_checked(conv)
    assert span_texts(cands) == [(4, "X9Y8Z7")] and cands[0].span.start == 0
    assert summary.skipped["repeat-in-turn"] == 1


def test_ambiguous_derivation_is_skipped():
    conv = build(("call", [("c1", "quote", {})]),
                 ("tool", "c1", {"a": 400, "b": 100, "c": 300, "d": 200}),
                 ("a", "Prices $400, $100, $300 and $200; together $500."))
    cands, summary = propose_checked(conv)
    assert span_texts(cands) == [(2, "400"), (2, "100"), (2, "300"), (2, "200")]
    assert summary.skipped["ambiguous-derivation"] == 1


def test_hallucination_needs_the_clause_to_name_one_value():
    status = {"status": "delayed", "estimated_departure_time_est": "17:40:00"}
    listing = [{"flight_number": "HAT001", "scheduled_departure_time_est": "08:00:00"},
               {"flight_number": "HAT002", "scheduled_departure_time_est": "09:00:00"}]
    base = [("u", "Flight HAT045?"), ("call", [("c1", "status", {"flight_number": "HAT045"})])]
    conv = build(*base, ("tool", "c1", status), ("a", "It leaves at 18:25:00."))
    cands, summary = propose_checked(conv)
    assert cands == [] and summary.skipped["unsupported-value"] == 1  # no key named
    conv = build(*base, ("tool", "c1", status), ("a", "The estimated departure time: 6:25 PM."))
    cands, _ = propose_checked(conv)
    assert [(c.span.text, c.dependency_type.value) for c in cands] == [("6:25 PM", "hallucination")]
    assert edges(cands[0]) == {(3, 2, "c"), (2, 1, "s"), (1, 0, "c")}
    conv = build(*base, ("tool", "c1", listing), ("a", "The scheduled departure time is 10:00:00."))
    cands, summary = propose_checked(conv)
    assert cands == [] and summary.skipped["ambiguous-contradiction"] == 1
    conv = build(*base, ("tool", "c1", status), ("a", "The estimated departure time is 18:25:00."))
    assert propose_checked(conv, LineageConfig(hallucinations=False))[0] == []


def test_deterministic_output():
    conv = build(*LOOKUP, ("a", "Reservation X9Y8Z7 for ab_12."))
    a = [c.model_dump() for c in propose_checked(conv)[0]]
    b = [c.model_dump() for c in propose_checked(conv)[0]]
    # X9Y8Z7 (from 3), ab_12 (from 1) and the clause joining the two sources
    assert a == b and len(a) == 3
