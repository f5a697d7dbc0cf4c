"""Tokengeist's search and the flat baseline on hand-built score tables (no model)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from mtcabench.evaluate import TARGET, SearchSettings, flat, is_open, tokengeist
from mtcabench.evaluate.methods._tokengeist import (
    Part,
    ValueIndex,
    argument_values,
    call_parts,
    content_words,
    named_values,
    node_keys,
    relay_nodes,
    restating,
    select_parents,
    sentence_parts,
)
from mtcabench.graph import check_graph
from mtcabench.model import Conversation, EdgeKind

#: 0 system, 1 user, 2 assistant (call a), 3 tool (a), 4 assistant answer, 5 user,
#: 6 assistant (call b), 7 tool (b), 8 assistant (the target's turn).
CONV = Conversation.model_validate({
    "id": "hand/1", "source": "hand", "domain": "test",
    "turns": [
        {"index": 0, "role": "system", "content": "policy"},
        {"index": 1, "role": "user", "content": "my id is u1"},
        {"index": 2, "role": "assistant", "tool_calls": [{"id": "a", "name": "get", "arguments": {}}]},
        {"index": 3, "role": "tool", "tool_call_id": "a", "content": "{\"x\": 1}"},
        {"index": 4, "role": "assistant", "content": "x is 1"},
        {"index": 5, "role": "user", "content": "and y?"},
        {"index": 6, "role": "assistant", "tool_calls": [{"id": "b", "name": "get_y", "arguments": {}}]},
        {"index": 7, "role": "tool", "tool_call_id": "b", "content": "{\"y\": 2}"},
        {"index": 8, "role": "assistant", "content": "x is 1 and y is 2"},
    ],
})


class Table:
    """A score table: node key -> {turn: share}; records which nodes were asked for."""

    def __init__(self, table):
        self.table, self.calls = table, []

    def __call__(self, key):
        self.calls.append(key)
        return self.table.get(key, {})


NO_PRUNE = SearchSettings(top_k=3, threshold=0.05, d_max=6, alpha=0.0)
#: The calls of turns 2 and 6 (no arguments: the whole call line is the query).
(C2,), (C6,) = call_parts(CONV.turns[2], 0), call_parts(CONV.turns[6], 0)

FULL = {
    TARGET: {7: 0.5, 4: 0.3, 0: 0.1, 5: 0.04, 1: 0.06},
    4: {3: 0.7, 1: 0.3},
    C6: {5: 0.8, 3: 0.2},
    C2: {1: 0.9, 0: 0.1},
}


def pairs(graph, kind=None):
    return {e.pair for e in graph.edges if kind is None or e.kind is kind}


def test_role_dispatch_builds_the_expected_graph():
    table = Table(FULL)
    graph = tokengeist(CONV, 8, table, NO_PRUNE)
    # top-3 of the target: 7 (tool), 4 (assistant), 0 (system); 1 (0.06) is fourth, 5 below threshold
    assert pairs(graph, EdgeKind.CONTENT) == {
        (8, 7), (8, 4), (8, 0), (4, 3), (4, 1), (6, 5), (6, 3), (2, 1), (2, 0)}
    # tool results get their structural edge to the call turn
    assert pairs(graph, EdgeKind.STRUCTURAL) == {(7, 6), (3, 2)}
    # breadth-first, best parent first: the call of turn 6 (via tool 7), then 4, then the
    # call of turn 2 (via tool 3); never a tool, user or system turn, each node once (3 is
    # reached twice)
    assert table.calls == [TARGET, C6, 4, C2]
    assert check_graph(graph, CONV) == []
    scores = {e.pair: e.score for e in graph.edges}
    assert scores[(8, 7)] == 0.5 and scores[(7, 6)] is None


def test_user_and_system_turns_are_leaves():
    table = Table({TARGET: {5: 0.6, 0: 0.4}})
    graph = tokengeist(CONV, 8, table, NO_PRUNE)
    assert pairs(graph) == {(8, 5), (8, 0)}
    assert table.calls == [TARGET]


def test_depth_limit_stops_recursion_but_keeps_structural_edges():
    table = Table(FULL)
    graph = tokengeist(CONV, 8, table, SearchSettings(top_k=3, threshold=0.05, d_max=1, alpha=0))
    assert table.calls == [TARGET]
    assert pairs(graph) == {(8, 7), (7, 6), (8, 4), (8, 0)}
    table = Table(FULL)
    graph = tokengeist(CONV, 8, table, SearchSettings(top_k=3, threshold=0.05, d_max=2, alpha=0))
    assert table.calls == [TARGET, C6, 4]  # call turn 2 sits at depth 2: not expanded
    assert (3, 2) in pairs(graph) and (2, 1) not in pairs(graph)


def test_nothing_above_threshold_gives_a_lone_target():
    table = Table({TARGET: {7: 0.04, 4: 0.03}})
    graph = tokengeist(CONV, 8, table, NO_PRUNE)
    assert graph.edges == [] and graph.nodes == [8]
    assert flat(8, table, NO_PRUNE).edges == []


def test_zero_shares_never_count_even_with_zero_threshold():
    settings = SearchSettings(top_k=3, threshold=0.0, d_max=6, alpha=0)
    assert select_parents({1: 0.0, 5: 0.0}, 8, settings) == []


def test_search_stops_where_a_node_has_no_scores():
    table = Table({TARGET: {4: 1.0}})  # 4 is asked for, answers nothing
    graph = tokengeist(CONV, 8, table, NO_PRUNE)
    assert pairs(graph) == {(8, 4)} and table.calls == [TARGET, 4]


def test_top_k_keeps_best_and_breaks_ties_towards_the_later_turn():
    settings = SearchSettings(top_k=2, threshold=0.05, d_max=6, alpha=0)
    assert select_parents({1: 0.3, 5: 0.3, 4: 0.2, 0: 0.2}, 8, settings) == [(5, 0.3), (1, 0.3)]
    # turns at or after the node are never parents, whatever the table says
    assert select_parents({8: 0.9, 9: 0.9, 1: 0.1}, 8, settings) == [(1, 0.1)]


def test_relative_pruning_drops_weak_edges_and_their_cut_off_subgraph():
    # (the claims' policy rule off: a target without text is an open one)
    settings = SearchSettings(top_k=3, threshold=0.05, d_max=6, alpha=0.7, open_system=None)
    graph = tokengeist(CONV, 8, Table(FULL), settings)
    # out of 8: best 0.5, so 4 (0.3 < 0.35) and 0 (0.1) go, and 4's parents with them;
    # out of 6: best 0.8, so 3 (0.2) goes; the structural edge 7 -> 6 always stays
    assert pairs(graph) == {(8, 7), (7, 6), (6, 5)}
    assert graph.nodes == [5, 6, 7, 8]
    assert check_graph(graph, CONV) == []


def test_flat_links_the_target_only():
    table = Table(FULL)
    graph = flat(8, table, NO_PRUNE)
    assert pairs(graph) == {(8, 7), (8, 4), (8, 0)}
    assert all(e.kind is EdgeKind.CONTENT for e in graph.edges)
    assert table.calls == [TARGET]
    pruned = flat(8, Table(FULL), SearchSettings(top_k=3, threshold=0.05, d_max=6, alpha=0.5))
    assert pairs(pruned) == {(8, 7), (8, 4)}  # 0.3 >= 0.5 * 0.5; 0.1 is not


@pytest.mark.parametrize("kwargs", [dict(top_k=0), dict(threshold=1.5), dict(d_max=0),
                                    dict(alpha=-0.1)])
def test_settings_are_checked(kwargs):
    with pytest.raises(ValueError):
        SearchSettings(**kwargs)


#: 0 system, 1 user (the order id), 2 assistant (a sentence and two calls), 3 tool (call a),
#: 4 tool (call b), 5 assistant (the target's turn).
SAID_AND_CALLED = Conversation.model_validate({
    "id": "hand/2", "source": "hand", "domain": "test",
    "turns": [
        {"index": 0, "role": "system", "content": "Use the tools."},
        {"index": 1, "role": "user", "content": "Order ORD-1, and the weather?"},
        {"index": 2, "role": "assistant", "content": "Sure, one moment.", "tool_calls": [
            {"id": "a", "name": "lookup_order",
             "arguments": {"order_id": "ORD-1", "fields": ["tracking", "eta"]}},
            {"id": "b", "name": "weather", "arguments": {}}]},
        {"index": 3, "role": "tool", "tool_call_id": "a", "content": "{\"tracking\": \"1Z9\"}"},
        {"index": 4, "role": "tool", "tool_call_id": "b", "content": "sunny"},
        {"index": 5, "role": "assistant", "content": "Tracking 1Z9."},
    ],
})


def test_a_call_is_queried_by_its_argument_values_or_its_line():
    turn = SAID_AND_CALLED.turns[2]
    (order, fields), (b,) = call_parts(turn, 0), call_parts(turn, 1)
    assert turn.text[order.start:order.end] == '"ORD-1"'  # the value, not the key
    assert turn.text[fields.start:fields.end] == '["tracking", "eta"]'
    assert turn.text[b.start:b.end] == "weather({})"  # no arguments: the call itself
    assert node_keys(SAID_AND_CALLED, 2) == [Part(2, 0, len("Sure, one moment.")), order,
                                              fields, b]
    assert node_keys(CONV, 4) == [4]  # a turn that calls nothing is asked about as a whole
    # Offsets follow the rendering of non-ASCII keys and values too.
    odd = Conversation.model_validate({"id": "hand/u", "source": "hand", "domain": "test",
        "turns": [{"index": 0, "role": "assistant", "content": "ok", "tool_calls": [
            {"id": "c", "name": "f", "arguments": {"cl\u00e9": "\u00e9t\u00e9", "n": 2.5}}]}]})
    t = odd.turns[0]
    assert [t.text[p.start:p.end] for p in call_parts(t, 0)] == ['"\u00e9t\u00e9"', "2.5"]


def test_a_call_turn_reached_through_a_result_is_traced_by_that_call_only():
    turn = SAID_AND_CALLED.turns[2]
    text = Part(2, 0, len(turn.content))
    order, fields = call_parts(turn, 0)
    table = Table({TARGET: {3: 0.9}, text: {0: 0.8}, order: {1: 0.7, 0: 0.1}})
    graph = tokengeist(SAID_AND_CALLED, 5, table, SearchSettings(top_k=3, threshold=0.05,
                                                                 d_max=6, alpha=0.5))
    # The sentence before the call (drawn to the system prompt) is never asked about: what the
    # tool returned depends on the arguments' values, and those came from the user.
    assert table.calls == [TARGET, order, fields]
    assert pairs(graph) == {(5, 3), (3, 2), (2, 1)}


def test_a_turn_reached_as_content_is_asked_about_every_part_keeping_the_best_score():
    text, a, fields, b = node_keys(SAID_AND_CALLED, 2)
    table = Table({TARGET: {2: 0.9}, text: {1: 0.4, 0: 0.3}, a: {1: 0.8}, b: {1: 0.2}})
    graph = tokengeist(SAID_AND_CALLED, 5, table, NO_PRUNE)
    assert table.calls == [TARGET, text, a, fields, b]
    scores = {e.pair: e.score for e in graph.edges}
    assert scores == {(5, 2): 0.9, (2, 1): 0.8, (2, 0): 0.3}


#: tau2-bench's telecom shape: 0 system, 1 assistant asks, 2 user's own calls (check the
#: phone: a status bar and the network), 3 and 4 their results, 5 user relays, 6 assistant
#: calls a tool with the relayed value, 7 its result, 8 the target's turn.
PHONE = Conversation.model_validate({
    "id": "hand/phone", "source": "hand", "domain": "telecom",
    "turns": [
        {"index": 0, "role": "system", "content": "policy"},
        {"index": 1, "role": "assistant", "content": "Please check your status bar."},
        {"index": 2, "role": "user", "tool_calls": [
            {"id": "u1", "name": "check_status_bar", "arguments": {}},
            {"id": "u2", "name": "check_network", "arguments": {"detail": "full"}}]},
        {"index": 3, "role": "tool", "tool_call_id": "u1", "content": "airplane mode ON"},
        {"index": 4, "role": "tool", "tool_call_id": "u2", "content": "{\"network\": \"none\"}"},
        {"index": 5, "role": "user", "content": "It says airplane mode is ON."},
        {"index": 6, "role": "assistant", "tool_calls": [
            {"id": "a1", "name": "log_issue", "arguments": {"issue": "airplane mode"}}]},
        {"index": 7, "role": "tool", "tool_call_id": "a1", "content": "{\"ticket\": \"T-9\"}"},
        {"index": 8, "role": "assistant", "content": "Airplane mode is ON; ticket T-9."},
    ],
})


def test_a_user_s_call_is_a_leaf_its_result_s_edge_going_to_the_user_turn():
    (u1,), (u2,) = call_parts(PHONE.turns[2], 0), call_parts(PHONE.turns[2], 1)
    (a1,) = call_parts(PHONE.turns[6], 0)
    # every query a search could make: the user's calls would be asked for if it recursed
    table = Table({TARGET: {3: 0.5, 7: 0.4}, a1: {5: 0.9}, u1: {1: 0.9}, u2: {1: 0.9}})
    graph = tokengeist(PHONE, 8, table, NO_PRUNE)
    # the result of the user's call gets its structural edge to the user turn that issued
    # it, and the search stops there (the user is exogenous); the agent's call is recursed
    assert pairs(graph, EdgeKind.STRUCTURAL) == {(3, 2), (7, 6)}
    assert pairs(graph, EdgeKind.CONTENT) == {(8, 3), (8, 7), (6, 5)}
    assert table.calls == [TARGET, a1]  # never a part of the user's call
    assert not any(e.child == 2 for e in graph.edges)  # the user turn is a leaf
    assert check_graph(graph, PHONE) == []


# --------------------------------------------------------------- values decide among candidates

def test_a_call_argument_s_parents_are_chosen_among_the_turns_holding_its_value():
    order, fields = call_parts(SAID_AND_CALLED.turns[2], 0)
    # The policy (0) outscores the user who typed "ORD-1" (1), as attention to a long system
    # prompt often does; only turn 1 holds the value, so only turn 1 is a candidate.
    table = {TARGET: {3: 0.9}, order: {0: 0.6, 1: 0.3}}
    graph = tokengeist(SAID_AND_CALLED, 5, Table(table), NO_PRUNE)
    assert (2, 1) in pairs(graph) and (2, 0) not in pairs(graph)
    off = tokengeist(SAID_AND_CALLED, 5, Table(table),
                     SearchSettings(top_k=3, threshold=0.05, d_max=6, alpha=0.0,
                                    match_values=False))
    assert {(2, 0), (2, 1)} <= pairs(off)  # the switch restores attention alone


def test_the_target_s_parents_are_chosen_among_the_turns_holding_its_text():
    # "1Z9" is in the tracking result (3) only; the assistant's call turn (2) scores higher.
    table = Table({TARGET: {2: 0.5, 3: 0.3, 0: 0.2}})
    graph = tokengeist(SAID_AND_CALLED, 5, table, NO_PRUNE, target_text="1Z9")
    assert {p for c, p in pairs(graph, EdgeKind.CONTENT) if c == 5} == {3}
    assert {p for c, p in flat(5, table, NO_PRUNE, SAID_AND_CALLED, "1z9").pairs()} == {3}
    # Without the conversation flat cannot match, and takes every candidate.
    assert {p for c, p in flat(5, table, NO_PRUNE).pairs()} == {0, 2, 3}


def test_the_model_decides_alone_when_no_holder_is_a_candidate():
    # The holder (3) scores under the threshold: a value that matches by chance, or one the
    # agent composed; the shares decide as without the rule.
    table = Table({TARGET: {2: 0.6, 0: 0.3, 3: 0.01}})
    graph = tokengeist(SAID_AND_CALLED, 5, table, NO_PRUNE, target_text="1Z9")
    assert {p for c, p in pairs(graph, EdgeKind.CONTENT) if c == 5} == {2, 0}
    # No turn holds the text, or it is too short to say anything: the same.
    for text in ("never said", "1Z"):
        graph = tokengeist(SAID_AND_CALLED, 5, Table({TARGET: {2: 0.6, 3: 0.3}}), NO_PRUNE,
                           target_text=text)
        assert {p for c, p in pairs(graph, EdgeKind.CONTENT) if c == 5} == {2, 3}


def test_values_match_whatever_their_case_and_spacing():
    index = ValueIndex(SAID_AND_CALLED, 5)
    assert index.holders(["ord-1"], 5) == {1, 2}  # the user's text and the call's argument
    assert index.holders(["ord-1"], 2) == {1}  # only turns before the query's own
    assert index.holders(["Tracking\n 1z9"], 6) == set()  # turn 5 is not before 5
    assert ValueIndex(SAID_AND_CALLED, 6).holders(["Tracking\n 1z9"], 6) == {5}


def test_argument_values_are_scalars_or_lists_of_them():
    turn = SAID_AND_CALLED.turns[2]
    (order, fields), (weather,) = call_parts(turn, 0), call_parts(turn, 1)
    assert argument_values(SAID_AND_CALLED, order) == ["ORD-1"]
    assert argument_values(SAID_AND_CALLED, fields) == ["tracking", "eta"]
    assert argument_values(SAID_AND_CALLED, weather) == []  # no arguments: the call line
    assert argument_values(SAID_AND_CALLED, Part(2, 0, len(turn.content))) == []  # its text
    nested = Conversation.model_validate({"id": "hand/n", "source": "hand", "domain": "test",
        "turns": [{"index": 0, "role": "assistant", "tool_calls": [
            {"id": "c", "name": "f", "arguments": {"a": {"b": 1}, "ok": True, "n": 42}}]}]})
    a, ok, n = call_parts(nested.turns[0], 0)
    assert [argument_values(nested, p) for p in (a, ok, n)] == [[], [], ["42"]]


def test_an_open_query_has_its_own_relative_threshold_and_top_k_a_held_value_keeps_the_default():
    # The target's text is held by no earlier turn (a claim): with open_alpha 0.1 its weaker
    # sources (the policy 0.1, the user 0.06) survive beside the best (0.5); the default alpha
    # 0.5 keeps only the best.
    # (the claims' policy rule off, measured on its own below)
    shares = {TARGET: {7: 0.5, 0: 0.1, 1: 0.06}, C6: {5: 0.8}}
    default = SearchSettings(top_k=3, threshold=0.05, alpha=0.5, open_system=None)
    claim = replace(default, open_alpha=0.1)
    first_hop = lambda g: {p for c, p in pairs(g) if c == 8}  # noqa: E731
    assert first_hop(tokengeist(CONV, 8, Table(shares), default, "no turn says this")) == {7}
    assert first_hop(tokengeist(CONV, 8, Table(shares), claim, "no turn says this")) == {7, 0, 1}
    assert first_hop(flat(8, Table(shares), claim, CONV, "no turn says this")) == {7, 0, 1}
    narrow = replace(default, open_alpha=0.1, open_top_k=1)
    assert first_hop(tokengeist(CONV, 8, Table(shares), narrow, "no turn says this")) == {7}
    # A value some turn holds ("y": turn 7) is matched as before: the open settings are unused.
    held = tokengeist(CONV, 8, Table(shares), claim, '"y": 2')
    assert held == tokengeist(CONV, 8, Table(shares), default, '"y": 2')


def test_open_settings_are_checked():
    with pytest.raises(ValueError, match="open_alpha"):
        SearchSettings(open_alpha=1.5)
    with pytest.raises(ValueError, match="open_top_k"):
        SearchSettings(open_top_k=0)
    with pytest.raises(ValueError, match="open_system"):
        SearchSettings(open_system=0)


def test_a_claim_keeps_the_policy_past_top_k_and_alpha_a_held_value_does_not():
    # The claim's record (7: 0.6) and the user (5: 0.25) outrank the policy (0: 0.06), which
    # top-k 2 and alpha 0.5 both drop; open_system 0.05 keeps it, as a leaf (system turns have
    # no parents), and changes nothing else in the graph.
    shares = {TARGET: {7: 0.6, 5: 0.25, 0: 0.06, 1: 0.02}, C6: {5: 0.8}}
    default = SearchSettings(top_k=2, threshold=0.05, alpha=0.5, open_system=None)
    policy = replace(default, open_system=0.05)
    assert policy == SearchSettings(top_k=2, threshold=0.05, alpha=0.5)  # the default's rule
    first_hop = lambda g: {p for c, p in pairs(g) if c == 8}  # noqa: E731
    claim = "you are not eligible"
    base = tokengeist(CONV, 8, Table(shares), default, claim)
    ruled = tokengeist(CONV, 8, Table(shares), policy, claim)
    assert first_hop(base) == {7} and first_hop(ruled) == {7, 0}
    assert set(ruled.pairs()) - set(base.pairs()) == {(8, 0)}
    assert next(e.score for e in ruled.edges if e.parent == 0) == pytest.approx(0.06)
    assert first_hop(flat(8, Table(shares), policy, CONV, claim)) == {7, 0}
    # Under the share asked: no edge. A value some turn holds ('"y": 2', turn 7): no edge.
    strict = SearchSettings(top_k=2, threshold=0.05, alpha=0.5, open_system=0.1)
    assert tokengeist(CONV, 8, Table(shares), strict, claim) == base
    held = tokengeist(CONV, 8, Table(shares), policy, '"y": 2')
    assert held == tokengeist(CONV, 8, Table(shares), default, '"y": 2')
    # Selected already (top-k 3, alpha 0): the one edge, not two.
    wide = SearchSettings(top_k=3, threshold=0.05, alpha=0.0, open_system=0.05)
    assert sum(e.parent == 0 for e in tokengeist(CONV, 8, Table(shares), wide, claim).edges) == 1


RELAYED = Conversation.model_validate({
    "id": "hand/relay", "source": "hand", "domain": "test",
    "turns": [
        {"index": 0, "role": "system", "content": "policy"},
        {"index": 1, "role": "user", "content": "cancel my trip and tell me the baggage rule"},
        {"index": 2, "role": "user", "content": "refund the 120 to my card"},
        {"index": 3, "role": "user", "content": "I have 2 bags"},
        {"index": 4, "role": "assistant",
         "content": "Your trip is cancelled and the refund of $120 goes to your card. "
                    "You may check two bags free."},
        {"index": 5, "role": "user", "content": "thanks"},
        {"index": 6, "role": "assistant", "content": "As said, the refund of $120 goes to your "
                                                     "card within a week."},
    ],
})


def test_an_entered_turn_is_asked_about_the_sentence_relayed_not_its_whole_text():
    first, second = sentence_parts(RELAYED, 4)
    text = RELAYED.turns[4].text
    assert text[first.start:first.end].endswith("your card.")
    assert text[second.start:second.end] == "You may check two bags free."
    # The whole turn read both records; its first sentence only the refund.
    shares = {TARGET: {4: 0.9}, 4: {2: 0.5, 3: 0.4}, first: {2: 0.8, 1: 0.1},
              second: {3: 0.9}}
    claim = "the refund of $120 goes to your card within a week"
    settings = SearchSettings(top_k=3, threshold=0.05, alpha=0.0)
    whole = tokengeist(RELAYED, 6, Table(shares), settings, claim)
    assert {p for c, p in pairs(whole) if c == 4} == {2, 3}
    table = Table(shares)
    relayed = tokengeist(RELAYED, 6, table, replace(settings, relay_sentences=True), claim)
    assert {p for c, p in pairs(relayed) if c == 4} == {2, 1}
    assert first in table.calls and 4 not in table.calls and second not in table.calls
    # A text that restates no sentence (fewer than two content words shared): the whole turn.
    assert restating(RELAYED, 4, "thanks a lot") == []
    fallback = tokengeist(RELAYED, 6, Table(shares), replace(settings, relay_sentences=True),
                          "ok")
    assert fallback == tokengeist(RELAYED, 6, Table(shares), settings, "ok")
    # One sentence: the turn's text is the query, there are no sentence parts.
    assert sentence_parts(RELAYED, 6) == []
    assert relay_nodes(RELAYED, 7) == [first, second]


def test_content_words_keep_values_and_drop_the_commonest_words():
    assert content_words("The refund of $120.50 goes to your card on 2024-05-15.") == {
        "refund", "$120.50", "goes", "card", "2024-05-15"}


#: 0 system, 1 user, 2 call (two reservations), 3 tool (HAT045), 4 tool (HAT107), 5 the claim.
RECORDS = Conversation.model_validate({
    "id": "hand/records", "source": "hand", "domain": "test",
    "turns": [
        {"index": 0, "role": "system", "content": "policy"},
        {"index": 1, "role": "user", "content": "is my flight delayed?"},
        {"index": 2, "role": "assistant", "tool_calls": [
            {"id": "a", "name": "get_flight", "arguments": {"id": "R1"}},
            {"id": "b", "name": "get_flight", "arguments": {"id": "R2"}}]},
        {"index": 3, "role": "tool", "tool_call_id": "a", "content": "HAT045 delayed"},
        {"index": 4, "role": "tool", "tool_call_id": "b", "content": "HAT107 on time"},
        {"index": 5, "role": "assistant", "content": "Your flight HAT045 is running late."},
    ],
})


def test_the_values_a_claim_names_decide_among_the_records():
    assert named_values("The refund of $120.50 on 2024-05-17 for HAT045, 2 bags.") == [
        "120.50", "2024-05-17", "HAT045"]
    # The claim names HAT045: the record holding it stays, the other record goes, the user stays.
    shares = {TARGET: {4: 0.5, 3: 0.3, 1: 0.2}}
    claim = "flight HAT045 is running late"
    plain = SearchSettings(top_k=3, threshold=0.05, alpha=0.0, d_max=1, named_values=False)
    named = replace(plain, named_values=True)
    assert SearchSettings().named_values  # on by default
    first_hop = lambda g: {p for c, p in pairs(g) if c == 5}  # noqa: E731
    assert first_hop(tokengeist(RECORDS, 5, Table(shares), plain, claim)) == {4, 3, 1}
    assert first_hop(tokengeist(RECORDS, 5, Table(shares), named, claim)) == {3, 1}
    assert first_hop(flat(5, Table(shares), named, RECORDS, claim)) == {3, 1}
    # No holder among the candidates (under the threshold), or no value named: unchanged.
    weak = {TARGET: {4: 0.6, 3: 0.01, 1: 0.3}}
    assert first_hop(tokengeist(RECORDS, 5, Table(weak), named, claim)) == {4, 1}
    assert first_hop(tokengeist(RECORDS, 5, Table(shares), named, "it is running late")) == {
        4, 3, 1}
    # A held span (its text in an earlier turn) is the value rule's, not this one's.
    held = tokengeist(RECORDS, 5, Table(shares), named, "HAT045")
    assert first_hop(held) == {3}


#: 0 system, 1 user gives the id, 2 assistant restates it, 3 the call, 4 its result, 5 answer.
RESTATED = Conversation.model_validate({
    "id": "hand/restated", "source": "hand", "domain": "test",
    "turns": [
        {"index": 0, "role": "system", "content": "policy"},
        {"index": 1, "role": "user", "content": "my reservation is ABC123"},
        {"index": 2, "role": "assistant", "content": "I will look up reservation ABC123."},
        {"index": 3, "role": "assistant", "tool_calls": [
            {"id": "a", "name": "get_reservation", "arguments": {"id": "ABC123"}}]},
        {"index": 4, "role": "tool", "tool_call_id": "a", "content": "ABC123: JFK to SFO"},
        {"index": 5, "role": "assistant", "content": "It goes from JFK to SFO."},
    ],
})


def test_a_calls_argument_is_credited_to_where_it_came_from_not_to_a_restatement():
    (arg,) = call_parts(RESTATED.turns[3], 0)
    shares = {TARGET: {4: 0.9}, arg: {2: 0.6, 1: 0.3}}
    before = SearchSettings(top_k=1, threshold=0.05, alpha=0.0, value_origin=False)
    origin = replace(before, value_origin=True)
    assert SearchSettings().value_origin  # on by default
    call_parents = lambda g: {p for c, p in pairs(g) if c == 3}  # noqa: E731
    claim = "It goes from JFK to SFO"
    assert call_parents(tokengeist(RESTATED, 5, Table(shares), before, claim)) == {2}
    assert call_parents(tokengeist(RESTATED, 5, Table(shares), origin, claim)) == {1}
    # The origin under the threshold: the restatement stays (the model decides among holders).
    weak = {TARGET: {4: 0.9}, arg: {2: 0.6, 1: 0.01}}
    assert call_parents(tokengeist(RESTATED, 5, Table(weak), origin, claim)) == {2}
    # A value span (its text held by the record): the copy the call copied stays, as before.
    assert call_parents(tokengeist(RESTATED, 5, Table(shares), origin, "JFK to SFO")) == {2}


def test_a_target_is_open_when_no_earlier_turn_holds_its_text():
    # "HAT045" is in the tool result (turn 3): a span copying it is held, not open; the
    # claim's sentence is in no earlier turn; a text in the target's own turn only is open.
    assert not is_open(RECORDS, 5, "HAT045")
    assert is_open(RECORDS, 5, "Your flight HAT045 is running late")
    assert is_open(RECORDS, 3, "HAT107")  # turn 4 comes after turn 3
