"""Provenance-graph rules and helpers shared by every stage.

The rules, each named and stated in :data:`RULES` (the dataset card lists them), are checked
by :func:`check_graph`, which returns every violation rather than stopping at the first, each
naming the record and the rule. The
helpers compute what the stages and the scorer need: sources, depth, reachability,
structural tool edges, relative-threshold pruning, and edge precision, recall and F1.
"""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass
from collections.abc import Iterable, Mapping

from mtcabench.model import (
    Conversation,
    DependencyType,
    Edge,
    EdgeKind,
    ProvenanceGraph,
    Role,
    TargetSpan,
)

#: Every rule, by name, with what it requires. Names appear in error messages and the docs.
RULES: dict[str, str] = {
    "node-exists": "every node is a turn of the conversation",
    "edge-nodes": "both ends of every edge are nodes of the graph",
    "edge-backwards": "every edge points backwards in time (parent < child)",
    "duplicate-edge": "no (child, parent) pair appears twice",
    "acyclic": "the graph has no cycle",
    "target-in-graph": "the target turn is a node of the graph",
    "target-assistant": "the target turn is an assistant turn",
    "node-before-target": "no node comes after the target turn",
    "span-turn": "the span lies in the target turn",
    "span-text": "the span text equals the turn's text at its offsets",
    "tool-edge": "a tool result has exactly one edge, structural, to the turn that issued its call",
    "structural-edge": "structural edges only link a tool result to the turn that issued its call",
    "exogenous-leaf": "user and system turns have no outgoing edges",
    "reachable": "every node is reachable from the target",
}


@dataclass(frozen=True)
class Violation:
    """One broken rule in one record."""

    record: str
    rule: str
    detail: str

    def __str__(self) -> str:
        return f"{self.record}: [{self.rule}] {self.detail}"


def check_graph(
    graph: ProvenanceGraph,
    conversation: Conversation,
    span: TargetSpan | None = None,
    *,
    record: str = "?",
) -> list[Violation]:
    """All rule violations of ``graph`` (and ``span``) against ``conversation``; [] if valid."""
    out: list[Violation] = []

    def fail(rule: str, detail: str) -> None:
        out.append(Violation(record, rule, detail))

    n_turns = len(conversation.turns)
    nodes = set(graph.nodes)
    for node in sorted(nodes):
        if not 0 <= node < n_turns:
            fail("node-exists", f"node {node} is not a turn (conversation has {n_turns} turns)")
    seen: set[tuple[int, int]] = set()
    for e in graph.edges:
        missing = [x for x in (e.child, e.parent) if x not in nodes]
        if missing:
            fail("edge-nodes", f"edge {e.child}->{e.parent} uses non-node(s) {missing}")
        if e.parent >= e.child:
            fail("edge-backwards", f"edge {e.child}->{e.parent} does not point backwards")
        if e.pair in seen:
            fail("duplicate-edge", f"edge {e.child}->{e.parent} appears more than once")
        seen.add(e.pair)
    cycle = find_cycle(graph.edges)
    if cycle:
        fail("acyclic", "cycle " + " -> ".join(map(str, cycle)))

    target_ok = 0 <= graph.target < n_turns
    if graph.target not in nodes:
        fail("target-in-graph", f"target turn {graph.target} is not a node")
    if not target_ok:
        fail("node-exists", f"target {graph.target} is not a turn")
    elif conversation.turns[graph.target].role is not Role.ASSISTANT:
        role = conversation.turns[graph.target].role.value
        fail("target-assistant", f"target turn {graph.target} is a {role} turn")
    for node in sorted(nodes):
        if node > graph.target:
            fail("node-before-target", f"node {node} comes after target turn {graph.target}")

    if span is not None:
        if span.turn != graph.target:
            fail("span-turn", f"span is in turn {span.turn}, graph target is {graph.target}")
        if 0 <= span.turn < n_turns:
            text = conversation.turns[span.turn].text
            if span.end > len(text) or text[span.start : span.end] != span.text:
                got = text[span.start : span.end]
                fail(
                    "span-text",
                    f"turn {span.turn}[{span.start}:{span.end}] is {got!r}, span says {span.text!r}",
                )
        else:
            fail("span-turn", f"span turn {span.turn} is not a turn")

    # Role-dependent rules need valid node indices; skip nodes already reported.
    valid = {x for x in nodes if 0 <= x < n_turns}
    out_edges: dict[int, list[Edge]] = defaultdict(list)
    for e in graph.edges:
        out_edges[e.child].append(e)
    for node in sorted(valid):
        role = conversation.turns[node].role
        if role is Role.TOOL:
            call = _call_turn_or_none(conversation, node)
            edges = out_edges.get(node, [])
            ok = (
                len(edges) == 1
                and edges[0].parent == call
                and edges[0].kind is EdgeKind.STRUCTURAL
            )
            if not ok:
                found = [f"{e.child}->{e.parent} ({e.kind.value})" for e in edges] or "none"
                fail("tool-edge", f"tool turn {node} needs one structural edge to {call}, has {found}")
        elif role in (Role.USER, Role.SYSTEM) and out_edges.get(node):
            fail("exogenous-leaf", f"{role.value} turn {node} has outgoing edges")
    for e in graph.edges:
        if e.kind is EdgeKind.STRUCTURAL and e.child in valid and (
            conversation.turns[e.child].role is not Role.TOOL
            or _call_turn_or_none(conversation, e.child) != e.parent
        ):
            fail("structural-edge", f"edge {e.child}->{e.parent} is not a tool-result link")

    unreachable = nodes - reachable(graph)
    if graph.target in nodes and unreachable:
        fail("reachable", f"nodes {sorted(unreachable)} are not reachable from the target")
    return out


def _call_turn_or_none(conversation: Conversation, tool_turn: int) -> int | None:
    try:
        return conversation.call_turn(tool_turn)
    except KeyError:
        return None


def find_cycle(edges: Iterable[Edge]) -> list[int] | None:
    """One cycle as a node list (first node repeated at the end), or None."""
    adj: dict[int, list[int]] = defaultdict(list)
    for e in edges:
        adj[e.child].append(e.parent)
    color: dict[int, int] = {}  # 1 = on the stack, 2 = done
    for start in list(adj):
        if color.get(start):
            continue
        stack: list[tuple[int, int]] = [(start, 0)]
        path: list[int] = []
        while stack:
            node, i = stack.pop()
            if i == 0:
                color[node] = 1
                path.append(node)
            nexts = adj.get(node, [])
            if i < len(nexts):
                stack.append((node, i + 1))
                nxt = nexts[i]
                if color.get(nxt) == 1:
                    return path[path.index(nxt) :] + [nxt]
                if not color.get(nxt):
                    stack.append((nxt, 0))
            else:
                color[node] = 2
                path.pop()
    return None


def reachable(graph: ProvenanceGraph) -> set[int]:
    """Nodes reachable from the target by following child -> parent edges (target included)."""
    adj: dict[int, list[int]] = defaultdict(list)
    for e in graph.edges:
        adj[e.child].append(e.parent)
    seen = {graph.target}
    queue = deque([graph.target])
    while queue:
        for parent in adj[queue.popleft()]:
            if parent not in seen:
                seen.add(parent)
                queue.append(parent)
    return seen


def sources(graph: ProvenanceGraph, conversation: Conversation) -> list[int]:
    """Exogenous nodes (system, user, tool turns) of the graph, sorted."""
    n = len(conversation.turns)
    return sorted(x for x in set(graph.nodes) if 0 <= x < n and conversation.turns[x].exogenous)


def depth(graph: ProvenanceGraph) -> int:
    """Length in edges of the longest path from the target (0 for a lone target).

    Edges point backwards, so visiting nodes from the latest turn down gives a topological
    order; callers validate acyclicity first.
    """
    adj: dict[int, list[int]] = defaultdict(list)
    for e in graph.edges:
        adj[e.child].append(e.parent)
    longest: dict[int, int] = {}
    for node in sorted(reachable(graph)):  # parents (earlier turns) first
        longest[node] = max((longest.get(p, 0) + 1 for p in adj[node] if p in longest), default=0)
    return longest.get(graph.target, 0)


def path_hops(graph: ProvenanceGraph) -> tuple[int, int]:
    """``(content, structural)`` hops of the gold path: the longest path from the target
    (its length is :func:`depth`), of those the one with the most content hops.

    A "direct" span at depth 6 (answer -> tool result -> its call -> an earlier result -> its
    call -> the user) has 4 content hops and 2 structural ones: the type says where the value
    came from, the depth how far back, and the hops how much of that is call structure.
    """
    adj: dict[int, list[tuple[int, bool]]] = defaultdict(list)
    for e in graph.edges:
        adj[e.child].append((e.parent, e.kind is EdgeKind.STRUCTURAL))
    best: dict[int, tuple[int, int]] = {}  # node -> (length, content hops) of its best path
    for node in sorted(reachable(graph)):  # parents (earlier turns) first
        best[node] = max(((best[p][0] + 1, best[p][1] + (not structural))
                          for p, structural in adj[node] if p in best), default=(0, 0))
    length, content = best.get(graph.target, (0, 0))
    return content, length - content


def infer_dependency_type(graph: ProvenanceGraph, conversation: Conversation) -> DependencyType:
    """The type a graph's shape suggests (hallucination cannot be seen from shape alone).

    Looks at the target's own parents (its content edges): chained when one of them is an
    assistant turn (the information passed through the agent's own earlier turn); else
    multi-source when two or more are exogenous; else direct. A tool result's structural
    edge to its call turn does not make a span chained: the value still came in one hop.
    """
    parents = {e.parent for e in graph.edges if e.child == graph.target}
    n = len(conversation.turns)
    roles = [conversation.turns[p].role for p in parents if 0 <= p < n]
    if any(r is Role.ASSISTANT for r in roles):
        return DependencyType.CHAINED
    if sum(1 for r in roles if r.exogenous) >= 2:
        return DependencyType.MULTI_SOURCE
    return DependencyType.DIRECT


def with_structural_edges(graph: ProvenanceGraph, conversation: Conversation) -> ProvenanceGraph:
    """Add the structural edge (and call-turn node) for every tool result in the graph.

    Applied until closed, since a call turn added here is an assistant node whose own
    parents the caller may already have listed.
    """
    nodes = set(graph.nodes)
    edges = list(graph.edges)
    have = {e.pair for e in edges}
    for node in sorted(nodes):
        if 0 <= node < len(conversation.turns) and conversation.turns[node].role is Role.TOOL:
            call = _call_turn_or_none(conversation, node)
            if call is None:
                continue
            if (node, call) in have:
                edges = [
                    e.model_copy(update={"kind": EdgeKind.STRUCTURAL}) if e.pair == (node, call) else e
                    for e in edges
                ]
            else:
                edges.append(Edge(child=node, parent=call, kind=EdgeKind.STRUCTURAL))
                have.add((node, call))
            nodes.add(call)
    return ProvenanceGraph(target=graph.target, nodes=sorted(nodes), edges=edges)


def prune_relative(graph: ProvenanceGraph, alpha: float,
                   alphas: Mapping[int, float] | None = None) -> ProvenanceGraph:
    """Keep an edge when its score is at least ``alpha`` times the best score out of its child
    (``alphas[child]`` for a child given its own).

    Edges without a score (structural edges) are always kept. Nodes no longer reachable
    from the target are dropped with their edges.
    """
    alphas = alphas or {}
    for a in (alpha, *alphas.values()):
        if not 0 <= a <= 1:
            raise ValueError(f"alpha must be in [0, 1], got {a}")
    best: dict[int, float] = {}
    for e in graph.edges:
        if e.score is not None:
            best[e.child] = max(best.get(e.child, float("-inf")), e.score)
    kept = [
        e for e in graph.edges
        if e.score is None or e.score >= alphas.get(e.child, alpha) * best[e.child]
    ]
    pruned = ProvenanceGraph(target=graph.target, nodes=graph.nodes, edges=kept)
    alive = reachable(pruned)
    return ProvenanceGraph(
        target=graph.target,
        nodes=sorted(n for n in set(graph.nodes) if n in alive),
        edges=[e for e in kept if e.child in alive and e.parent in alive],
    )


# --------------------------------------------------------------------------- comparing graphs
# The one definition of edge precision, recall and F1, used by the scorer (mtcabench.scoring.
# metrics, which states the conventions and averages) and by the stages that compare two
# graphs (annotator agreement, reviewer agreement). It lives here, in the ground layer, so
# that both can use it without the core module importing the scorer.

Pair = tuple[int, int]


def set_precision(predicted: set, gold: set) -> float:
    """``|P & G| / |P|``; 1 when both are empty, 0 when only P is empty."""
    if not predicted:
        return 1.0 if not gold else 0.0
    return len(predicted & gold) / len(predicted)


def set_recall(predicted: set, gold: set) -> float:
    """``|P & G| / |G|``; 1 when both are empty, 0 when only G is empty."""
    if not gold:
        return 1.0 if not predicted else 0.0
    return len(predicted & gold) / len(gold)


def f1(precision: float, recall: float) -> float:
    """Harmonic mean ``2 P R / (P + R)``; 0 when both are 0."""
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def edge_set(edges: Iterable[Pair]) -> set[Pair]:
    """Distinct ``(child, parent)`` pairs: a duplicated edge counts once."""
    return {(int(c), int(p)) for c, p in edges}


def edge_precision(predicted: Iterable[Pair], gold: Iterable[Pair]) -> float:
    """Share of the distinct predicted edges that are gold edges."""
    return set_precision(edge_set(predicted), edge_set(gold))


def edge_recall(predicted: Iterable[Pair], gold: Iterable[Pair]) -> float:
    """Share of the distinct gold edges that were predicted."""
    return set_recall(edge_set(predicted), edge_set(gold))


def edge_f1(predicted: Iterable[Pair], gold: Iterable[Pair]) -> float:
    """F1 of edge precision and edge recall."""
    return f1(edge_precision(predicted, gold), edge_recall(predicted, gold))


def edge_prf(predicted: Iterable[Pair], gold: Iterable[Pair]) -> tuple[float, float, float]:
    """Edge precision, recall and F1 over distinct ``(child, parent)`` pairs, in one call.

    A convenience for stages comparing two graphs (annotator agreement, reviewer agreement):
    exactly the scorer's metric.
    """
    predicted, gold = list(predicted), list(gold)
    precision, recall = edge_precision(predicted, gold), edge_recall(predicted, gold)
    return precision, recall, f1(precision, recall)


def resolve_span(conversation: Conversation, turn: int, text: str, occurrence: int = 1
                 ) -> TargetSpan:
    """The span of ``text`` (its ``occurrence``-th occurrence, from 1) in an assistant turn's
    content, for spans a person gives by their text; ValueError naming what is wrong."""
    if not 0 <= turn < len(conversation.turns):
        raise ValueError(f"turn {turn} is not a turn of the conversation "
                         f"({len(conversation.turns)} turns)")
    t = conversation.turns[turn]
    if t.role is not Role.ASSISTANT:
        raise ValueError(f"turn {turn} is a {t.role.value} turn; a claim is in an assistant turn")
    start = -1
    for _ in range(occurrence):
        start = t.content.find(text, start + 1)
        if start < 0:
            raise ValueError(f"the text is not in turn {turn}'s content "
                             f"{'' if occurrence == 1 else f'{occurrence} times '}"
                             "(copy it exactly from the sheet)")
    return TargetSpan(turn=turn, start=start, end=start + len(text), text=text)


def graph_from_pairs(conversation: Conversation, target: int, pairs: Iterable[tuple[int, int]]
             ) -> ProvenanceGraph:
    """A graph from hand-written ``[child, parent]`` pairs (a person's gold graph): a tool
    result's edge to the turn that issued its call is structural, every other edge a content
    edge; edges latest first, nodes sorted."""
    edges = []
    for child, parent in dict.fromkeys(tuple(p) for p in pairs):
        structural = (0 <= child < len(conversation.turns)
                      and conversation.turns[child].role is Role.TOOL
                      and conversation.call_turn(child) == parent)
        edges.append(Edge(child=child, parent=parent,
                          kind=EdgeKind.STRUCTURAL if structural else EdgeKind.CONTENT))
    edges.sort(key=lambda e: (-e.child, -e.parent))
    nodes = sorted({target, *(x for e in edges for x in e.pair)})
    return ProvenanceGraph(target=target, nodes=nodes, edges=edges)
