"""check_graph agrees with an independent definition of every rule, on generated graphs.

Conversations are random sequences of turns (tool results answer an earlier call, call ids
reused so that "the latest call with the id" matters); graphs are either random (any nodes,
any edges, forwards, cycles, duplicates, either kind) or valid DAGs built by the rules and
then mutated a little. For each, the set of rules check_graph reports must be exactly the set
that the definitions below, written from the README's rule table and not from graph.py,
say are broken.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mtcabench.graph import RULES, check_graph
from mtcabench.model import (
    Conversation,
    Edge,
    EdgeKind,
    ProvenanceGraph,
    Role,
    TargetSpan,
    ToolCall,
    Turn,
)

CALL_IDS = ["a", "b", "c"]


@st.composite
def conversations(draw) -> Conversation:
    n = draw(st.integers(1, 10))
    turns: list[Turn] = []
    issued: list[str] = []
    for i in range(n):
        role = draw(st.sampled_from(list(Role)))
        if role is Role.TOOL and not issued:
            role = Role.USER
        text = draw(st.text(alphabet="abc 12", max_size=6))
        if role is Role.ASSISTANT:
            ids = draw(st.lists(st.sampled_from(CALL_IDS), max_size=2, unique=True))
            calls = [ToolCall(id=c, name="f", arguments={"i": i}) for c in ids]
            issued += ids
            turns.append(Turn(index=i, role=role, content=text, tool_calls=calls))
        elif role is Role.TOOL:
            turns.append(Turn(index=i, role=role, content=text,
                              tool_call_id=draw(st.sampled_from(issued))))
        else:
            turns.append(Turn(index=i, role=role, content=text))
    return Conversation(id="p/c", source="t", domain="d", turns=turns)


def call_of(conv: Conversation, t: int) -> int | None:
    """The latest turn before t that issued the call t answers (independent of the model)."""
    turn = conv.turns[t]
    found = [i for i in range(t) if any(c.id == turn.tool_call_id for c in conv.turns[i].tool_calls)]
    return max(found) if found else None


@st.composite
def random_graphs(draw, conv: Conversation) -> ProvenanceGraph:
    n = len(conv.turns)
    idx = st.integers(-1, n)
    edges = draw(st.lists(st.builds(lambda c, p, k: Edge(child=c, parent=p, kind=k), idx, idx,
                                    st.sampled_from(list(EdgeKind))), max_size=8))
    return ProvenanceGraph(target=draw(idx), nodes=draw(st.lists(idx, max_size=8)), edges=edges)


@st.composite
def valid_graphs(draw, conv: Conversation) -> ProvenanceGraph | None:
    """A graph built by the rules (None when the conversation has no assistant turn)."""
    assistants = [t.index for t in conv.turns if t.role is Role.ASSISTANT]
    if not assistants:
        return None
    target = draw(st.sampled_from(assistants))
    nodes, edges, todo = {target}, [], [target]
    while todo:
        node = todo.pop()
        role = conv.turns[node].role
        if role is Role.TOOL:
            call = call_of(conv, node)
            edges.append(Edge(child=node, parent=call, kind=EdgeKind.STRUCTURAL))
            if call not in nodes:
                nodes.add(call)
                todo.append(call)
        elif role is Role.ASSISTANT and node > 0:
            parents = draw(st.lists(st.integers(0, node - 1), max_size=2, unique=True))
            for p in parents:
                edges.append(Edge(child=node, parent=p))
                if p not in nodes:
                    nodes.add(p)
                    todo.append(p)
    return ProvenanceGraph(target=target, nodes=sorted(nodes), edges=edges)


@st.composite
def mutated(draw, conv: Conversation, graph: ProvenanceGraph) -> ProvenanceGraph:
    n = len(conv.turns)
    nodes, edges, target = list(graph.nodes), list(graph.edges), graph.target
    for _ in range(draw(st.integers(0, 2))):
        what = draw(st.sampled_from(["drop-edge", "add-edge", "flip-kind", "add-node",
                                     "drop-node", "target", "duplicate"]))
        if what == "drop-edge" and edges:
            edges.pop(draw(st.integers(0, len(edges) - 1)))
        elif what == "add-edge":
            edges.append(Edge(child=draw(st.integers(-1, n)), parent=draw(st.integers(-1, n)),
                              kind=draw(st.sampled_from(list(EdgeKind)))))
        elif what == "flip-kind" and edges:
            i = draw(st.integers(0, len(edges) - 1))
            other = EdgeKind.CONTENT if edges[i].kind is EdgeKind.STRUCTURAL else EdgeKind.STRUCTURAL
            edges[i] = edges[i].model_copy(update={"kind": other})
        elif what == "add-node":
            nodes.append(draw(st.integers(-1, n)))
        elif what == "drop-node" and nodes:
            nodes.pop(draw(st.integers(0, len(nodes) - 1)))
        elif what == "target":
            target = draw(st.integers(-1, n))
        elif what == "duplicate" and edges:
            edges.append(edges[draw(st.integers(0, len(edges) - 1))])
    return ProvenanceGraph(target=target, nodes=nodes, edges=edges)


@st.composite
def cases(draw):
    conv = draw(conversations())
    valid = draw(valid_graphs(conv))
    if valid is not None and draw(st.booleans()):
        graph = draw(mutated(conv, valid))
    else:
        graph = draw(random_graphs(conv))
    span = None
    choice = draw(st.sampled_from(["none", "right", "random"]))
    n = len(conv.turns)
    if choice == "right" and 0 <= graph.target < n and conv.turns[graph.target].text:
        text = conv.turns[graph.target].text
        start = draw(st.integers(0, len(text) - 1))
        end = draw(st.integers(start + 1, len(text)))
        span = TargetSpan(turn=graph.target, start=start, end=end, text=text[start:end])
    elif choice == "random":
        start = draw(st.integers(0, 8))
        span = TargetSpan(turn=draw(st.integers(0, n + 1)), start=start,
                          end=draw(st.integers(start + 1, 12)), text=draw(st.text("abc 12",
                                                                                  max_size=4)))
    return conv, graph, span


def has_cycle(edges: list[tuple[int, int]]) -> bool:
    """Kahn's algorithm on child -> parent: a cycle is what cannot be peeled off."""
    nodes = {x for e in edges for x in e}
    out = {x: [p for c, p in edges if c == x] for x in nodes}
    indeg = {x: 0 for x in nodes}
    for _, p in edges:
        indeg[p] += 1
    ready = [x for x in nodes if indeg[x] == 0]
    seen = 0
    while ready:
        x = ready.pop()
        seen += 1
        for p in out[x]:
            indeg[p] -= 1
            if indeg[p] == 0:
                ready.append(p)
    return seen < len(nodes)


def broken_rules(conv: Conversation, g: ProvenanceGraph, span: TargetSpan | None) -> set[str]:
    """Every rule of the README's table that ``g`` breaks, defined directly."""
    n = len(conv.turns)
    in_range = set(range(n))
    nodes = set(g.nodes)
    pairs = [(e.child, e.parent) for e in g.edges]
    valid_nodes = nodes & in_range
    broken = set()
    if not nodes <= in_range or g.target not in in_range:
        broken.add("node-exists")
    if any(c not in nodes or p not in nodes for c, p in pairs):
        broken.add("edge-nodes")
    if any(p >= c for c, p in pairs):
        broken.add("edge-backwards")
    if len(set(pairs)) < len(pairs):
        broken.add("duplicate-edge")
    if has_cycle(pairs):
        broken.add("acyclic")
    if g.target not in nodes:
        broken.add("target-in-graph")
    if g.target in in_range and conv.turns[g.target].role is not Role.ASSISTANT:
        broken.add("target-assistant")
    if any(x > g.target for x in nodes):
        broken.add("node-before-target")
    if span is not None:
        if span.turn != g.target or span.turn not in in_range:
            broken.add("span-turn")
        if span.turn in in_range:
            text = conv.turns[span.turn].text
            if span.end > len(text) or text[span.start:span.end] != span.text:
                broken.add("span-text")
    for x in valid_nodes:
        role = conv.turns[x].role
        outgoing = [e for e in g.edges if e.child == x]
        if role is Role.TOOL and not (len(outgoing) == 1 and outgoing[0].kind is EdgeKind.STRUCTURAL
                                      and outgoing[0].parent == call_of(conv, x)):
            broken.add("tool-edge")
        if role in (Role.USER, Role.SYSTEM) and outgoing:
            broken.add("exogenous-leaf")
    for e in g.edges:
        if e.kind is EdgeKind.STRUCTURAL and e.child in valid_nodes and (
                conv.turns[e.child].role is not Role.TOOL or call_of(conv, e.child) != e.parent):
            broken.add("structural-edge")
    if g.target in nodes:
        reached, frontier = {g.target}, [g.target]
        while frontier:
            x = frontier.pop()
            for c, p in pairs:
                if c == x and p not in reached:
                    reached.add(p)
                    frontier.append(p)
        if nodes - reached:
            broken.add("reachable")
    assert broken <= set(RULES)
    return broken


@given(cases())
def test_check_graph_reports_exactly_the_broken_rules(case):
    conv, graph, span = case
    violations = check_graph(graph, conv, span, record="r")
    assert {v.rule for v in violations} == broken_rules(conv, graph, span)
    assert all(v.record == "r" and v.detail for v in violations)


@given(conversations().flatmap(lambda c: st.tuples(st.just(c), valid_graphs(c))))
def test_graphs_built_by_the_rules_are_valid(case):
    conv, graph = case
    if graph is not None:
        assert check_graph(graph, conv) == []
