"""Every graph rule has a passing and a failing case, each failure naming record and rule."""

from __future__ import annotations

import pytest

from mtcabench.graph import (
    RULES,
    check_graph,
    depth,
    edge_prf,
    find_cycle,
    infer_dependency_type,
    prune_relative,
    reachable,
    sources,
    with_structural_edges,
)
from mtcabench.model import (
    Conversation,
    DependencyType,
    Edge,
    EdgeKind,
    ProvenanceGraph,
    Role,
    TargetSpan,
    ToolCall,
    Turn,
)


@pytest.fixture()
def conv() -> Conversation:
    """0 system, 1 user, 2 assistant call, 3 tool, 4 assistant summary, 5 user, 6 answer."""
    return Conversation(
        id="t/c1",
        source="test",
        domain="airline",
        turns=[
            Turn(index=0, role=Role.SYSTEM, content="Policy."),
            Turn(index=1, role=Role.USER, content="My id is ab_12."),
            Turn(index=2, role=Role.ASSISTANT,
                 tool_calls=[ToolCall(id="c1", name="get_user", arguments={"user_id": "ab_12"})]),
            Turn(index=3, role=Role.TOOL, content='{"res": "X9Y8Z7"}', tool_call_id="c1"),
            Turn(index=4, role=Role.ASSISTANT, content="Your reservation is X9Y8Z7."),
            Turn(index=5, role=Role.USER, content="Which one again?"),
            Turn(index=6, role=Role.ASSISTANT, content="It is X9Y8Z7."),
        ],
    )


def good_graph() -> ProvenanceGraph:
    return ProvenanceGraph(
        target=6,
        nodes=[1, 2, 3, 4, 6],
        edges=[
            Edge(child=6, parent=4),
            Edge(child=4, parent=3),
            Edge(child=3, parent=2, kind=EdgeKind.STRUCTURAL),
            Edge(child=2, parent=1),
        ],
    )


SPAN = TargetSpan(turn=6, start=6, end=12, text="X9Y8Z7")


def rules_of(graph, conv, span=SPAN):
    return {v.rule for v in check_graph(graph, conv, span, record="span-1")}


def test_valid_graph_passes_every_rule(conv):
    assert check_graph(good_graph(), conv, SPAN, record="span-1") == []


def test_violation_names_record_and_rule(conv):
    g = good_graph()
    g.edges.append(Edge(child=4, parent=6))
    v = check_graph(g, conv, SPAN, record="span-1")
    text = "\n".join(map(str, v))
    assert "span-1: [edge-backwards]" in text


def mutate(rule: str, conv: Conversation):
    """A graph (and span) breaking ``rule``: one case per rule in RULES."""
    g = good_graph()
    span = SPAN
    if rule == "node-exists":
        g.nodes.append(99)
        g.edges.append(Edge(child=6, parent=99))
    elif rule == "edge-nodes":
        g.edges.append(Edge(child=6, parent=5))  # 5 is not a node
    elif rule == "edge-backwards":
        g.edges.append(Edge(child=2, parent=4))
    elif rule == "duplicate-edge":
        g.edges.append(Edge(child=6, parent=4))
    elif rule == "acyclic":
        g.edges.append(Edge(child=1, parent=2))
    elif rule == "target-in-graph":
        g.nodes.remove(6)
    elif rule == "target-assistant":
        g = ProvenanceGraph(target=5, nodes=[5, 4], edges=[Edge(child=5, parent=4)])
        span = TargetSpan(turn=5, start=0, end=5, text="Which")
    elif rule == "node-before-target":
        g = ProvenanceGraph(target=4, nodes=[3, 2, 4, 6], edges=[
            Edge(child=4, parent=3), Edge(child=3, parent=2, kind=EdgeKind.STRUCTURAL),
            Edge(child=6, parent=4)])
        span = TargetSpan(turn=4, start=20, end=26, text="X9Y8Z7")
    elif rule == "span-turn":
        span = TargetSpan(turn=4, start=20, end=26, text="X9Y8Z7")
    elif rule == "span-text":
        span = TargetSpan(turn=6, start=6, end=12, text="X9Y8Z8")
    elif rule == "tool-edge":
        g.edges = [e for e in g.edges if e.child != 3] + [Edge(child=3, parent=2)]
    elif rule == "structural-edge":
        g.edges.append(Edge(child=4, parent=2, kind=EdgeKind.STRUCTURAL))
    elif rule == "exogenous-leaf":
        g.nodes.append(0)
        g.edges.append(Edge(child=1, parent=0))
    elif rule == "reachable":
        g.nodes.append(5)
    else:  # pragma: no cover - a new rule without a case fails below
        raise AssertionError(f"no failing case for rule {rule}")
    return g, span


@pytest.mark.parametrize("rule", sorted(RULES))
def test_each_rule_fails_on_its_case(rule, conv):
    graph, span = mutate(rule, conv)
    assert rule in rules_of(graph, conv, span)


@pytest.mark.parametrize("rule", sorted(RULES))
def test_each_rule_passes_on_valid_graph(rule, conv):
    assert rule not in rules_of(good_graph(), conv)


def test_cycle_is_reported_with_its_nodes():
    cycle = find_cycle([Edge(child=3, parent=2), Edge(child=2, parent=1), Edge(child=1, parent=3)])
    assert cycle is not None and cycle[0] == cycle[-1] and set(cycle) == {1, 2, 3}
    assert find_cycle([Edge(child=3, parent=2), Edge(child=2, parent=1)]) is None


def test_helpers_sources_depth_reachable(conv):
    g = good_graph()
    assert sources(g, conv) == [1, 3]
    assert depth(g) == 4
    assert reachable(g) == {1, 2, 3, 4, 6}
    assert depth(ProvenanceGraph(target=6, nodes=[6])) == 0


def test_infer_dependency_type(conv):
    assert infer_dependency_type(good_graph(), conv) is DependencyType.CHAINED
    direct = with_structural_edges(
        ProvenanceGraph(target=4, nodes=[4, 3], edges=[Edge(child=4, parent=3)]), conv)
    assert infer_dependency_type(direct, conv) is DependencyType.DIRECT
    multi = ProvenanceGraph(target=4, nodes=[4, 3, 1], edges=[Edge(child=4, parent=3),
                                                              Edge(child=4, parent=1)])
    assert infer_dependency_type(with_structural_edges(multi, conv), conv) is DependencyType.MULTI_SOURCE


def test_with_structural_edges_adds_call_turn(conv):
    g = with_structural_edges(
        ProvenanceGraph(target=4, nodes=[4, 3], edges=[Edge(child=4, parent=3)]), conv)
    assert (3, 2) in g.pairs() and 2 in g.nodes
    assert [e.kind for e in g.edges if e.pair == (3, 2)] == [EdgeKind.STRUCTURAL]
    assert check_graph(g, conv, None, record="x") == []


def test_prune_relative_keeps_edges_within_alpha_of_best():
    g = ProvenanceGraph(target=6, nodes=[6, 4, 1, 3, 2], edges=[
        Edge(child=6, parent=4, score=1.0),
        Edge(child=6, parent=1, score=0.5),
        Edge(child=6, parent=3, score=0.2),
        Edge(child=3, parent=2, kind=EdgeKind.STRUCTURAL),
    ])
    pruned = prune_relative(g, 0.5)
    # 0.2 < 0.5 * 1.0: the edge to 3 goes, and with it the now unreachable 3 -> 2.
    assert pruned.pairs() == {(6, 4), (6, 1)}
    assert sorted(pruned.nodes) == [1, 4, 6]
    assert prune_relative(g, 0.0).pairs() == g.pairs()
    with pytest.raises(ValueError):
        prune_relative(g, 1.5)


def test_edge_prf_conventions():
    assert edge_prf([], []) == (1.0, 1.0, 1.0)
    assert edge_prf([(2, 1)], []) == (0.0, 0.0, 0.0)
    p, r, f = edge_prf([(2, 1), (3, 1), (3, 1)], [(2, 1), (4, 2)])
    assert (p, r) == (0.5, 0.5) and f == pytest.approx(0.5)
