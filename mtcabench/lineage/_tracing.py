"""Tracing one conversation: its values, where each occurs, each need's parent, the graphs.

One class, :class:`Tracer`, in three steps that each build on the one before:

1. the vocabulary (``_vocabulary``): which values each turn introduces (and from which turn
   each is known), each call's arguments and what a call's result may echo;
2. the occurrence index and the *parent rule* (``_occurrences``): where a value stands in a
   turn, and the latest turn before a child that carries it (v2: any turn that shows it, the
   one the answer read; v1: that introduced or restated it, skipping a tool result that
   echoes its own call);
3. backward tracing (here): v2's record anchor on the parent rule, then the edges, evidence
   and graph behind a value an answer turn needs, through assistant restatements and tool
   calls down to exogenous turns.

Span selection (``_spans``) and the hallucination decision (``_hallucination``) read it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from mtcabench.lineage._config import MAX_GRAPH_TURNS, LineageConfig, LineageSummary
from mtcabench.lineage._index import before
from mtcabench.lineage._occurrences import Covered, Occurrences, clauses
from mtcabench.lineage._values import Value
from mtcabench.model import (
    Conversation,
    DependencyType,
    Edge,
    EdgeKind,
    Evidence,
    ProvenanceGraph,
    Role,
    TargetSpan,
)

__all__ = ["Covered", "ProposedSpan", "Tracer", "clauses"]

@dataclass
class ProposedSpan:
    """A proposed span before it becomes a Candidate (from span selection or the hallucination
    decision)."""

    span: TargetSpan
    value: Value
    graph: ProvenanceGraph
    dtype: DependencyType
    rationale: str


class Tracer(Occurrences):
    """The values of one conversation, where they occur, and the graphs they give."""

    def __init__(self, conv: Conversation, config: LineageConfig, summary: LineageSummary):
        super().__init__(conv, config, summary)
        self._unsourced: set[tuple[int, str]] = set()
        self._read: dict[tuple, tuple[int | None, tuple[str, ...] | None]] = {}

    # ------------------------------------------------------------------ the record anchor
    def read_from(self, child: int, key: str) -> int | None:
        """The parent of "turn ``child`` needs ``key``" (``step`` without carried anchors)."""
        return self.step(child, key)[0]

    def step(self, child: int, key: str, anchors: tuple[str, ...] | None = None
             ) -> tuple[int | None, tuple[str, ...] | None]:
        """The parent of "turn ``child`` needs ``key``", with v2's record anchor, and the
        anchors the need carries on to that parent.

        An answer's clause that names a record (a reservation, a flight, a payment method),
        itself or in the list item heading it, was read from that record's entry:
        "Reservation XEHM4B: LAS to ATL" takes LAS from the result describing XEHM4B, not
        from a later result of another reservation that also flies from LAS. So when the
        latest carrier of a value does not show the clause's record (for the record itself:
        none of the clause's other values), the parent is the latest earlier carrier that
        does, when there is one. The record travels with the need: an earlier answer that
        listed several reservations is read at the one the need is about. Everywhere else
        it is ``parent``.
        """
        latest = self.parent(child, key)
        if (not self.rules.record_anchor or latest is None
                or self.turns[child].role is not Role.ASSISTANT or not self.turns[child].content):
            return latest, None
        asked = (child, key, anchors)
        memo = self._read.get(asked, False)
        if memo is not False:
            return memo
        if anchors is None:
            anchors = self._anchors(child, key)
        found: tuple[int | None, tuple[str, ...] | None] = (latest, None)
        if anchors:
            for t in reversed(before(self.carriers(key), latest + 1)):
                if self._carries(t, key) and any(self.occurrence(t, a) for a in anchors):
                    found = (t, anchors)
                    break
        self._read[(child, key, anchors)] = self._read[asked] = found
        return found

    def _anchors(self, t: int, key: str) -> tuple[str, ...]:
        """The records that the clause (or the list item heading it) of ``key`` in turn
        ``t`` names; for a record itself, the clause's other values."""
        others = self.clause_keys(t, key)
        if key in self.record_ids:
            return tuple(others)
        return tuple(k for k in dict.fromkeys(others + self.heading_keys(t, key))
                     if k in self.record_ids)

    # ------------------------------------------------------------------ 3. backward tracing
    def _evidence(self, parent: int, key: str, anchors: tuple[str, ...] | None = None
                  ) -> Evidence:
        """The value as written in the parent: its first standalone occurrence, or, for a
        need anchored at a record, its first one after that record's first mention."""
        turn = self.turns[parent]
        start, end = self.occurrence(parent, key)
        if anchors and key not in self.record_ids:
            at = [hit[0] for a in anchors if (hit := self.occurrence(parent, a))]
            _, hi = self.region(turn)
            found = self.find(parent, self.values[key], min(at), hi) if at else None
            if found is not None:
                start, end = found
        return Evidence(quote=turn.text[start:end], start=start, end=end)

    def _call_evidence(self, call_turn: int, call_id: str) -> Evidence:
        turn = self.turns[call_turn]
        offset = len(turn.content) + 1 if turn.content else 0
        for call in turn.tool_calls:
            line = call.render()
            if call.id == call_id:
                return Evidence(quote=line, start=offset, end=offset + len(line))
            offset += len(line) + 1
        raise KeyError(f"{self.conv.id}: turn {call_turn} has no call {call_id}")

    def trace(self, target: int, seeds: list[tuple[int, str]]
              ) -> tuple[dict | None, list[str]]:
        """Edges found by tracing ``(turn, value)`` needs backwards from the target.

        Returns the edges by (child, parent) and notes for arguments without a source; the
        edges are None (and the span is counted as ``large-graph``) when the graph would hold
        more than ``MAX_GRAPH_TURNS`` turns, so that tracing stops there.
        """
        edges: dict[tuple[int, int], Edge] = {}
        nodes: set[int] = {target}
        # (child, value, anchors carried from an answer's clause; None: the child's own)
        queue: deque[tuple[int, str, tuple[str, ...] | None]] = deque(
            (child, key, None) for child, key in seeds)
        seen: set[tuple[int, str, tuple[str, ...] | None]] = set()
        expanded: set[int] = set()
        unsourced: list[str] = []

        def add(edge: Edge) -> None:
            edges.setdefault(edge.pair, edge)  # one edge per pair; the first evidence is kept
            nodes.update(edge.pair)

        def expand_tool(t: int) -> None:
            if t in expanded:
                return
            expanded.add(t)
            call_turn, call_id = self.tool_call[t]
            add(Edge(child=t, parent=call_turn, kind=EdgeKind.STRUCTURAL,
                     evidence=self._call_evidence(call_turn, call_id)))
            # A user's own call ends the trace there: the user turn is a source, a leaf.
            for arg in self.call_args.get((call_turn, call_id), ()):
                queue.append((call_turn, arg, None))

        while queue:
            need = queue.popleft()
            if need in seen:
                continue
            seen.add(need)
            child, key, anchors = need
            if self.turns[child].role is Role.TOOL:  # seed of a hallucination: the primer
                expand_tool(child)
                continue
            p, carried = self.step(child, key, anchors)
            if p is None:
                unsourced.append((child, key))
                continue
            add(Edge(child=child, parent=p, evidence=self._evidence(p, key, carried)))
            role = self.turns[p].role
            if role is Role.ASSISTANT:
                queue.append((p, key, carried))
            elif role is Role.TOOL:
                expand_tool(p)
            if len(nodes) > MAX_GRAPH_TURNS:
                self.summary.skipped["large-graph"] += 1
                return None, unsourced
        return edges, unsourced

    def count_unsourced(self, needs: list[tuple[int, str]]) -> None:
        """Count each call argument without a source once per conversation."""
        for need in needs:
            if need not in self._unsourced:
                self._unsourced.add(need)
                self.summary.skipped["argument-without-source"] += 1

    def graph(self, target: int, edges: dict) -> ProvenanceGraph:
        nodes = {target} | {x for pair in edges for x in pair}
        ordered = sorted(edges.values(), key=lambda e: (-e.child, -e.parent))
        return ProvenanceGraph(target=target, nodes=sorted(nodes), edges=ordered)

    def chain_note(self, target: int, key: str) -> str:
        """``turn 10 <- 8 (assistant) <- 7 (tool get_reservation_details)`` for the value."""
        steps = [f"turn {target}"]
        node, anchors = target, None
        while True:
            p, anchors = self.step(node, key, anchors)
            if p is None:
                break
            turn = self.turns[p]
            label = turn.role.value
            if turn.role is Role.TOOL and turn.name:
                label += f" {turn.name}"
            steps.append(f"{p} ({label})")
            if turn.role is not Role.ASSISTANT:
                break
            node = p
        return " <- ".join(steps)
