"""Tokengeist's backward search and the flat baseline, over turn scores from any base scorer.

Both methods only see a function ``shares(node)`` giving, for a node being attributed (the
target span, or an intermediate assistant turn as a whole), a score per preceding turn. The
scores are shares (non-negative, summing to at most 1 over the preceding turns), so that the
threshold means the same thing for every base scorer. This keeps the search independent of
the model and testable on hand-built score tables.

Tokengeist (docs/evaluate.md): breadth-first from the target; at each node keep the top-k
preceding turns whose share is at least ``threshold``; a ``user``/``system`` turn is a leaf;
a ``tool`` result gets the structural edge to the assistant turn that issued its call and the
search continues from that call turn; an ``assistant`` turn is recursed into. ``d_max`` bounds
the number of content edges on a path from the target (the structural edge is bookkeeping,
not a step); a node reached twice is expanded once. Finally edges are pruned with a relative
threshold: an edge survives when its score is at least ``alpha`` times the best score out of
the same node (:func:`mtcabench.graph.prune_relative`), and nodes cut off go with it.

Flat: the target's own scores once, edges from the target to the selected turns, same pruning.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable

from mtcabench.evaluate._settings import SearchSettings
from mtcabench.graph import prune_relative
from mtcabench.model import Conversation, Edge, EdgeKind, ProvenanceGraph, Role

#: The node key of the target span in ``shares`` calls (intermediate nodes are turn indices).
TARGET = "target"


SharesFn = Callable[[Hashable], dict[int, float]]


def select_parents(shares: dict[int, float], before: int, settings: SearchSettings) -> list[tuple[int, float]]:
    """The top-k turns before ``before`` with a share of at least the threshold, best first.

    Ties go to the later turn (the nearer one), so that results do not depend on dict order.
    A share of zero never counts, even with threshold 0.
    """
    eligible = [(t, s) for t, s in shares.items() if t < before and s > 0 and s >= settings.threshold]
    eligible.sort(key=lambda ts: (-ts[1], -ts[0]))
    return eligible[: settings.top_k]


def tokengeist(
    conversation: Conversation, target_turn: int, shares: SharesFn, settings: SearchSettings
) -> ProvenanceGraph:
    """Tokengeist's provenance graph of a target span in ``target_turn`` (pruned)."""
    turns = conversation.turns
    edges: dict[tuple[int, int], Edge] = {}
    nodes = {target_turn}
    queued = {target_turn}
    queue: deque[tuple[Hashable, int, int]] = deque([(TARGET, target_turn, 0)])
    while queue:
        key, turn, depth = queue.popleft()
        if depth >= settings.d_max:
            continue  # stop: depth limit reached, the node stays a leaf
        for parent, score in select_parents(shares(key), turn, settings):
            edges.setdefault((turn, parent), Edge(child=turn, parent=parent, score=score))
            nodes.add(parent)
            role = turns[parent].role
            if role is Role.TOOL:
                call = conversation.call_turn(parent)
                edges.setdefault((parent, call),
                                 Edge(child=parent, parent=call, kind=EdgeKind.STRUCTURAL))
                nodes.add(call)
                nxt = call
            elif role is Role.ASSISTANT:
                nxt = parent
            else:
                continue  # user / system: a source, a leaf
            if nxt not in queued:
                queued.add(nxt)
                queue.append((nxt, nxt, depth + 1))
    graph = ProvenanceGraph(target=target_turn, nodes=sorted(nodes), edges=list(edges.values()))
    return prune_relative(graph, settings.alpha)


def flat(target_turn: int, shares: SharesFn, settings: SearchSettings) -> ProvenanceGraph:
    """The flat baseline: the target linked directly to its selected turns (pruned)."""
    selected = select_parents(shares(TARGET), target_turn, settings)
    edges = [Edge(child=target_turn, parent=p, score=s) for p, s in selected]
    graph = ProvenanceGraph(
        target=target_turn, nodes=sorted({target_turn, *(p for p, _ in selected)}), edges=edges
    )
    return prune_relative(graph, settings.alpha)
