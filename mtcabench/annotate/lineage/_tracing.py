"""Tracing one conversation: its values, where each occurs, each need's parent, the graphs.

One class, :class:`Tracer`, in three steps that each build on the one before:

1. the vocabulary: which values each turn introduces (and from which turn each is known),
   each call's arguments and what a call's result may echo;
2. the occurrence index and the *parent rule*: where a value stands in a turn, and the latest
   turn before a child that introduced or restated it (docs/lineage.md says why latest);
3. backward tracing: the edges, evidence and graph behind a value an answer turn needs,
   through assistant restatements and tool calls down to exogenous turns.

Span selection (``_spans``) and the hallucination decision (``_hallucination``) read it.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass
from typing import Any

from mtcabench.annotate.lineage._config import LineageConfig, LineageSummary
from mtcabench.annotate.lineage._values import (
    _FREE_TOKEN,
    _ORDINAL,
    Value,
    _bounded,
    exclusion,
    find_value,
    json_leaves,
    make_value,
)
from mtcabench.model import (
    Conversation,
    DependencyType,
    Edge,
    EdgeKind,
    Evidence,
    ProvenanceGraph,
    Role,
    TargetSpan,
    Turn,
)


@dataclass
class ProposedSpan:
    """A proposed span before it becomes a Candidate (from span selection or the hallucination
    decision)."""

    span: TargetSpan
    value: Value
    graph: ProvenanceGraph
    dtype: DependencyType
    rationale: str


class Tracer:
    """The values of one conversation, where they occur, and the graphs they give."""

    def __init__(self, conv: Conversation, config: LineageConfig, summary: LineageSummary):
        self.conv = conv
        self.turns = conv.turns
        self.config = config
        self.summary = summary
        self.values: dict[str, Value] = {}
        self.known_from: dict[str, int] = {}  # value key -> first turn that made it a value
        self.call_args: dict[tuple[int, str], list[str]] = {}  # (turn, call id) -> value keys
        self.call_echoes: dict[tuple[int, str], set[str]] = {}  # every argument's canonical text
        self.tool_call: dict[int, tuple[int, str]] = {}  # tool turn -> (call turn, call id)
        self._occ: dict[tuple[int, str], tuple[int, int] | None] = {}
        self._parent: dict[tuple[int, str], int | None] = {}
        self._unsourced: set[tuple[int, str]] = set()
        self._collect()

    # ------------------------------------------------------------------ 1. the vocabulary
    def _add(self, value: Value | None, turn: int, *, calculator: bool = False) -> str | None:
        """Make ``value`` known from ``turn`` unless a rule excludes it; its key, or None."""
        if value is None:
            return None
        reason = exclusion(value, self.config)
        if reason == "min-length" and calculator:
            # A calculator's answer is exact whatever its length, but a short number is
            # everywhere: it becomes a span only where the answer writes it as an amount.
            value = Value(value.key, value.kind, value.forms, currency_only=True)
        elif reason:
            self.summary.excluded_values[reason] += 1
            return None
        have = self.values.get(value.key)
        if have is None:
            self.values[value.key] = value
            self.known_from[value.key] = turn
        elif set(value.forms) - set(have.forms) or have.currency_only > value.currency_only:
            # the same text reached twice (as an id and as a number; as a short calculator
            # answer and as a plain value): keep every form, the looser span rule
            self.values[value.key] = Value(have.key, have.kind,
                                           tuple(dict.fromkeys(have.forms + value.forms)),
                                           have.currency_only and value.currency_only)
        return value.key

    def _add_leaf(self, leaf: Any, turn: int) -> list[str]:
        """Values of one JSON leaf: the leaf itself, a datetime's date, prose's typed tokens."""
        value = make_value(leaf)
        if value is None:
            return []
        reason = exclusion(value, self.config) if isinstance(leaf, str) else None
        if reason in ("prose", "max-length"):
            # "152 + 103", a summary naming lena_park_330: the typed tokens are the values
            self.summary.excluded_values[reason] += 1
            return self._add_free_text(leaf, turn)
        keys = [self._add(value, turn)]
        if value.kind == "datetime":  # "2024-05-01T16:18:10" also states the date 2024-05-01
            keys.append(self._add(make_value(value.key[:10]), turn))
        return [k for k in keys if k]

    def _collect(self) -> None:
        calls: dict[str, int] = {}
        for turn in self.turns:
            if turn.role is Role.ASSISTANT:
                for call in turn.tool_calls:
                    calls[call.id] = turn.index
                    leaves = [leaf for _, leaf in
                              json_leaves(call.arguments, keys_with_digits=False)]
                    keys = [k for leaf in leaves for k in self._add_leaf(leaf, turn.index)]
                    self.call_args[(turn.index, call.id)] = list(dict.fromkeys(keys))
                    # every argument, kept or not, for the echo rule ("amount": 55 is an echo)
                    self.call_echoes[(turn.index, call.id)] = {
                        v.key for v in map(make_value, leaves) if v is not None} | set(keys)
            elif turn.role is Role.TOOL:
                self.summary.tool_results += 1
                self.tool_call[turn.index] = (calls[turn.tool_call_id], turn.tool_call_id)
                self._collect_tool(turn)
            elif turn.role is Role.USER:
                self._add_free_text(turn.content, turn.index)
            # System turns: policy prose. They are searched as sources (today's date) but add
            # no values of their own, else every number of the policy would become a span.

    def _collect_tool(self, turn: Turn) -> None:
        if not turn.content.strip():
            self.summary.tool_results_empty += 1
            return
        try:
            data = json.loads(turn.content)
        except (json.JSONDecodeError, ValueError):
            # "Transfer successful", "Error: ...": free text; its typed tokens are values.
            self.summary.tool_results_not_json += 1
            self._add_free_text(turn.content, turn.index)
            return
        if isinstance(data, (int, float)) and not isinstance(data, bool):
            self._add(make_value(data), turn.index, calculator=True)
            return
        for _, leaf in json_leaves(data):
            self._add_leaf(leaf, turn.index)

    def _add_free_text(self, text: str, turn: int) -> list[str]:
        keys = []
        for m in _FREE_TOKEN.finditer(text):
            if _ORDINAL.fullmatch(m.group()):
                continue  # "May 20th": part of a date in words, not a value of its own
            if _bounded(text, m.start(), m.end(), m.group()):
                keys.append(self._add(make_value(m.group(), from_free_text=True), turn))
        return [k for k in keys if k]

    # ------------------------------------------------------------------ 2. occurrences, parents
    def region(self, turn: Turn) -> tuple[int, int]:
        """Where a turn states values: an assistant turn's content, or a whole exogenous turn."""
        return (0, len(turn.content)) if turn.role is Role.ASSISTANT else (0, len(turn.text))

    def occurrence(self, t: int, key: str) -> tuple[int, int] | None:
        """First standalone occurrence of value ``key`` where turn ``t`` states values."""
        memo = self._occ.get((t, key), False)
        if memo is not False:
            return memo
        turn = self.turns[t]
        lo, hi = self.region(turn)
        found = find_value(turn.text, self.values[key], lo, hi)
        self._occ[(t, key)] = found
        return found

    def is_echo(self, t: int, key: str) -> bool:
        """Whether tool result ``t`` holds ``key`` because its own call passed it."""
        return key in self.call_echoes.get(self.tool_call[t], set())

    def parent(self, child: int, key: str) -> int | None:
        """The latest turn before ``child`` that introduced or restated the value (the parent
        rule; an echoing tool result only when nothing else holds it)."""
        memo = self._parent.get((child, key), False)
        if memo is not False:
            return memo
        found: int | None = None
        echo: int | None = None
        for t in range(child - 1, -1, -1):
            if self.occurrence(t, key) is None:
                continue
            if self.turns[t].role is Role.TOOL and self.is_echo(t, key):
                echo = t if echo is None else echo
                continue
            found = t
            break
        result = found if found is not None else echo
        self._parent[(child, key)] = result
        return result

    def turns_holding(self, before: int, key: str) -> int:
        """How many turns before ``before`` hold the value anywhere in their text."""
        value = self.values[key]
        return sum(1 for t in range(before) if find_value(self.turns[t].text, value) is not None)

    # ------------------------------------------------------------------ 3. backward tracing
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
