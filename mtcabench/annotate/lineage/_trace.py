"""Backward tracing: the edges, evidence and graph behind a value needed by an answer turn."""

from __future__ import annotations

from collections import deque

from mtcabench.annotate.lineage._config import LineageConfig
from mtcabench.annotate.lineage._occurrences import _Occurrences
from mtcabench.annotate.lineage._summary import LineageSummary
from mtcabench.model import Conversation, Edge, EdgeKind, Evidence, ProvenanceGraph, Role


class _Tracing(_Occurrences):
    """Traces needs back through parents and tool calls into provenance graphs."""

    def __init__(self, conv: Conversation, config: LineageConfig, summary: LineageSummary):
        self._unsourced: set[tuple[int, str]] = set()
        super().__init__(conv, config, summary)

    def _evidence(self, parent: int, key: str) -> Evidence:
        turn = self.turns[parent]
        start, end = self.occurrence(parent, key)
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

    def trace(self, target: int, seeds: list[tuple[int, str]]) -> tuple[dict, list[str]]:
        """Edges found by tracing ``(turn, value)`` needs backwards from the target.

        Returns the edges by (child, parent) and notes for arguments without a source.
        """
        edges: dict[tuple[int, int], Edge] = {}
        queue: deque[tuple[int, str]] = deque(seeds)
        seen: set[tuple[int, str]] = set()
        expanded: set[int] = set()
        unsourced: list[str] = []

        def add(edge: Edge) -> None:
            edges.setdefault(edge.pair, edge)  # one edge per pair; the first evidence is kept

        def expand_tool(t: int) -> None:
            if t in expanded:
                return
            expanded.add(t)
            call_turn, call_id = self.tool_call[t]
            add(Edge(child=t, parent=call_turn, kind=EdgeKind.STRUCTURAL,
                     evidence=self._call_evidence(call_turn, call_id)))
            for arg in self.call_args[(call_turn, call_id)]:
                queue.append((call_turn, arg))

        while queue:
            child, key = queue.popleft()
            if (child, key) in seen:
                continue
            seen.add((child, key))
            if self.turns[child].role is Role.TOOL:  # seed of a hallucination: the primer
                expand_tool(child)
                continue
            p = self.parent(child, key)
            if p is None:
                unsourced.append((child, key))
                continue
            add(Edge(child=child, parent=p, evidence=self._evidence(p, key)))
            role = self.turns[p].role
            if role is Role.ASSISTANT:
                queue.append((p, key))
            elif role is Role.TOOL:
                expand_tool(p)
        return edges, unsourced

    def _count_unsourced(self, needs: list[tuple[int, str]]) -> None:
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
        node = target
        while True:
            p = self.parent(node, key)
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
