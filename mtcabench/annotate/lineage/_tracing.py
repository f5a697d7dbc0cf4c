"""Tracing one conversation: its values, where each occurs, each need's parent, the graphs.

One class, :class:`Tracer`, in three steps that each build on the one before:

1. the vocabulary (``_vocabulary``): which values each turn introduces (and from which turn
   each is known), each call's arguments and what a call's result may echo;
2. the occurrence index and the *parent rule*: where a value stands in a turn, and the latest
   turn before a child that carries it (v2: any turn that shows it, the one the answer read;
   v1: that introduced or restated it, skipping a tool result that echoes its own call);
3. backward tracing: the edges, evidence and graph behind a value an answer turn needs,
   through assistant restatements and tool calls down to exogenous turns.

Span selection (``_spans``) and the hallucination decision (``_hallucination``) read it.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from mtcabench.annotate.lineage._config import MAX_GRAPH_TURNS, LineageConfig, LineageSummary
from mtcabench.annotate.lineage._index import TurnIndex, before
from mtcabench.annotate.lineage._normalise import locate
from mtcabench.annotate.lineage._values import Value, find_value, tool_json
from mtcabench.annotate.lineage._vocabulary import Vocabulary
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


#: Where a clause ends: a line break, a semicolon, or a sentence end (maybe closed by a quote,
#: a bracket or emphasis) followed by a space.
_CLAUSE_BREAK = re.compile(r"\n|;|(?<=[.!?])\s|(?<=[.!?][\"')*\]])\s")
#: Markup around a clause that is not part of what it says.
_LEAD = re.compile(r"[\s>#*•-]*(?:\d{1,2}\.\s+)?[\s*_]*")
_TRAIL = re.compile(r"[\s*_.,;:!?]*$")
#: A parenthesised airport code right after a name: "Houston (IAH)" glosses the code.
_GLOSSED_CODE = re.compile(r"\s*\(\s*\**[A-Z]{3}\**\s*\)")


def clauses(content: str) -> list[tuple[int, int]]:
    """The clauses of an answer as (start, end): sentences and the lines of a listing, list
    markers, markdown emphasis and closing punctuation cut."""
    out: list[tuple[int, int]] = []
    start = 0
    for m in [*_CLAUSE_BREAK.finditer(content), None]:
        end = m.start() if m else len(content)
        lead = _LEAD.match(content, start, end)
        s = lead.end() if lead else start
        e = s + len(_TRAIL.sub("", content[s:end]))
        if e > s:
            out.append((s, e))
        start = m.end() if m else len(content)
    return out


def _indent(text: str, line_start: int) -> int:
    """How far a line of a listing is indented (its leading spaces)."""
    n = line_start
    while n < len(text) and text[n] == " ":
        n += 1
    return n - line_start


class Covered:
    """The parts of an answer already spanned: disjoint ``(start, end)`` ranges (a range is
    only added where none overlaps it, or again as itself), asked whether a new one overlaps
    any in logarithmic time (an answer may hold thousands of values)."""

    def __init__(self, ranges: Iterable[tuple[int, int]] = ()):
        self._starts: list[int] = []
        self._ends: list[int] = []
        for start, end in ranges:
            self.add(start, end)

    def add(self, start: int, end: int) -> None:
        i = bisect_right(self._starts, start)
        self._starts.insert(i, start)
        self._ends.insert(i, end)

    def overlaps(self, start: int, end: int) -> bool:
        """Whether ``[start, end)`` overlaps a range: the one starting last before ``end``
        is the only candidate, the ranges being disjoint."""
        i = bisect_left(self._starts, end) - 1
        return i >= 0 and self._ends[i] > start


@dataclass
class ProposedSpan:
    """A proposed span before it becomes a Candidate (from span selection or the hallucination
    decision)."""

    span: TargetSpan
    value: Value
    graph: ProvenanceGraph
    dtype: DependencyType
    rationale: str


class Tracer(Vocabulary):
    """The values of one conversation, where they occur, and the graphs they give."""

    def __init__(self, conv: Conversation, config: LineageConfig, summary: LineageSummary):
        super().__init__(conv, config, summary)
        self._occ: dict[tuple[int, str], tuple[int, int] | None] = {}
        self._parent: dict[tuple[int, str], int | None] = {}
        self._unsourced: set[tuple[int, str]] = set()
        self._matches: dict[int, list[tuple[int, int, str]]] = {}
        self._read: dict[tuple, tuple[int | None, tuple[str, ...] | None]] = {}
        self._clauses: dict[int, list[tuple[int, int]]] = {}
        self._index: TurnIndex | None = None
        self._first_match: dict[int, dict[str, int]] = {}
        self._match_starts: dict[int, list[int]] = {}
        self._clause_members: dict[tuple[int, int], list[str]] = {}
        self._lines: dict[int, tuple[list[int], list[tuple[int, int, int | None]]]] = {}
        self._carriers: dict[str, list[int]] = {}
        self._holders: dict[str, list[int]] = {}
        self._tool_data: dict[int, tuple[bool, Any]] = {}

    @property
    def index(self) -> TurnIndex:
        """Which turns may hold a value, and which values a turn may hold (built once)."""
        if self._index is None:
            self._index = TurnIndex(self)
        return self._index

    def carriers(self, key: str) -> list[int]:
        """The turns (ascending) where value ``key`` stands where the turn states values."""
        found = self._carriers.get(key)
        if found is None:
            found = self._carriers[key] = [t for t in self.index.turns_of(self.values[key])
                                           if self.occurrence(t, key) is not None]
        return found

    def holders(self, key: str) -> list[int]:
        """The turns (ascending) that hold value ``key`` anywhere in their text."""
        found = self._holders.get(key)
        if found is None:
            value = self.values[key]
            found = self._holders[key] = [t for t in self.index.turns_of(value)
                                          if self.find(t, value) is not None]
        return found

    def tool_data(self, t: int) -> tuple[bool, Any]:
        """``tool_json`` of turn ``t``'s content (parsed once)."""
        found = self._tool_data.get(t)
        if found is None:
            found = self._tool_data[t] = tool_json(self.turns[t].content)
        return found

    def known_before(self, value: Value, child: int) -> bool:
        """Whether any turn before ``child`` holds ``value`` anywhere in its text."""
        return any(self.find(t, value) is not None
                   for t in before(self.index.turns_of(value), child))

    # ------------------------------------------------------------------ 2. occurrences, parents
    def region(self, turn: Turn) -> tuple[int, int]:
        """Where a turn states values: an assistant turn's content, or a whole exogenous turn."""
        return (0, len(turn.content)) if turn.role is Role.ASSISTANT else (0, len(turn.text))

    def occurrence(self, t: int, key: str) -> tuple[int, int] | None:
        """First standalone occurrence of value ``key`` where turn ``t`` states values."""
        memo = self._occ.get((t, key), False)
        if memo is not False:
            return memo
        found = self.find(t, self.values[key], *self.region(self.turns[t]))
        self._occ[(t, key)] = found
        return found

    def find(self, t: int, value: Value, lo: int = 0, hi: int | None = None
             ) -> tuple[int, int] | None:
        """First standalone occurrence of ``value`` in turn ``t``'s text[lo:hi], by the rules'
        matching (v1: exact forms; v2: also normalised mentions, case and separators)."""
        text = self.turns[t].text
        if self.rules.normalised:
            return locate(text, value, self.mentions(t), lo, hi)
        return find_value(text, value, lo, hi)

    def is_echo(self, t: int, key: str) -> bool:
        """Whether tool result ``t`` holds ``key`` because its own call passed it."""
        return key in self.call_echoes.get(self.tool_call[t], set())

    def parent(self, child: int, key: str) -> int | None:
        """The latest turn before ``child`` that carries the value (the parent rule).

        v2: any turn that shows it, echo or not: the turn the child read it from. v1: the
        latest that introduced or restated it, an echoing tool result only when nothing
        else holds it.
        """
        memo = self._parent.get((child, key), False)
        if memo is not False:
            return memo
        found: int | None = None
        echo: int | None = None
        for t in reversed(before(self.carriers(key), child)):
            if (not self.rules.echoes_carry and self.turns[t].role is Role.TOOL
                    and self.is_echo(t, key)):
                echo = t if echo is None else echo
                continue
            found = t
            break
        result = found if found is not None else echo
        self._parent[(child, key)] = result
        return result

    def content_matches(self, t: int) -> list[tuple[int, int, str]]:
        """``(start, end, key)`` of the values known before turn ``t`` that stand in its
        content: the longest match first at a position, no overlaps ("credit_card_7815826"
        wins over its digits); every occurrence, in order (computed once)."""
        found = self._matches.get(t)
        if found is not None:
            return found
        content = self.turns[t].content
        matches: list[tuple[int, int, str]] = []
        for key in self.index.keys_in(t):
            value = self.values[key]
            if self.known_from[key] >= t:
                continue
            lo = 0
            while (hit := self.find(t, value, lo, len(content))) is not None:
                if not value.currency_only or content[: hit[0]].rstrip(" ").endswith("$"):
                    matches.append((hit[0], hit[1], key))
                lo = hit[0] + 1
        matches.sort(key=lambda m: (m[0], -(m[1] - m[0])))
        found = []
        covered_until = -1
        for start, end, key in matches:
            if start >= covered_until:
                found.append((start, end, key))
                covered_until = end
        if self.rules.code_glosses:
            # "Houston (IAH)": the agent names the airport's city; a profile's address city
            # "Houston" is a coincidence of text, not where the answer read it.
            glosses = [m for m in found if self.values[m[2]].kind == "name"
                       and _GLOSSED_CODE.match(content, m[1])]
            self.summary.skipped["code-gloss"] += len(glosses)
            found = [m for m in found if m not in glosses]
        self._matches[t] = found
        return found

    def _first(self, t: int, key: str) -> int | None:
        """Index in ``content_matches(t)`` of ``key``'s first match (None: it has none)."""
        found = self._first_match.get(t)
        if found is None:
            found = self._first_match[t] = {}
            for i, (_, _, k) in enumerate(self.content_matches(t)):
                found.setdefault(k, i)
        return found.get(key)

    def _keys_within(self, t: int, lo: int, hi: int) -> list[str]:
        """The keys of turn ``t``'s matches that lie within ``[lo, hi)``, in match order."""
        matches = self.content_matches(t)
        starts = self._match_starts.get(t)
        if starts is None:
            starts = self._match_starts[t] = [m[0] for m in matches]
        out = []
        for s, e, k in matches[bisect_left(starts, lo):]:
            if s >= hi:
                break
            if e <= hi:
                out.append(k)
        return out

    def clause_keys(self, t: int, key: str) -> list[str]:
        """The other values in the clause of turn ``t``'s content where ``key`` first stands."""
        first = self._first(t, key)
        if first is None:
            return []
        pos = self.content_matches(t)[first][0]
        spans = self.clauses(t)
        i = bisect_right(spans, (pos, float("inf"))) - 1  # the last clause starting at or before
        if i < 0 or not spans[i][0] <= pos < spans[i][1]:
            return []
        inside = self._clause_members.get((t, i))
        if inside is None:
            inside = self._clause_members[(t, i)] = list(dict.fromkeys(
                self._keys_within(t, *spans[i])))
        return [k for k in inside if k != key]

    def clauses(self, t: int) -> list[tuple[int, int]]:
        """The clauses of turn ``t``'s content (computed once)."""
        found = self._clauses.get(t)
        if found is None:
            found = self._clauses[t] = clauses(self.turns[t].content)
        return found

    def _listing(self, t: int) -> tuple[list[int], list[tuple[int, int, int | None]]]:
        """Turn ``t``'s content as lines: their starts, and per line ``(end, indent, head)``,
        ``head`` the nearest earlier non-blank line indented less (computed once, in one pass
        with a stack, so that a long listing is not walked up once per value)."""
        found = self._lines.get(t)
        if found is not None:
            return found
        content = self.turns[t].content
        starts = [0] + [i + 1 for i, ch in enumerate(content) if ch == "\n"]
        info: list[tuple[int, int, int | None]] = []
        stack: list[int] = []  # non-blank lines, indents increasing
        for n, start in enumerate(starts):
            end = starts[n + 1] - 1 if n + 1 < len(starts) else len(content)
            indent = _indent(content, start)
            blank = not content[start:end].strip()  # no head, and heads no line
            while stack and not blank and info[stack[-1]][1] >= indent:
                stack.pop()
            info.append((end, indent, None if blank or not stack else stack[-1]))
            if not blank:
                stack.append(n)
        found = self._lines[t] = (starts, info)
        return found

    def heading_keys(self, t: int, key: str) -> list[str]:
        """The values of the list items a listing nests ``key``'s line under: "2. Reservation
        ID: PUNERT" heads its indented "- BOS to MIA on 2024-05-22"."""
        first = self._first(t, key)
        if first is None:
            return []
        starts, info = self._listing(t)
        line = bisect_right(starts, self.content_matches(t)[first][0]) - 1
        heads: list[tuple[int, int]] = []
        while info[line][1] > 0 and (line := info[line][2]) is not None:
            heads.append((starts[line], info[line][0]))
        # top to bottom, so in match order, as a listing reads
        return [k for lo, hi in reversed(heads) for k in self._keys_within(t, lo, hi)]

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

    def _carries(self, t: int, key: str) -> bool:
        """Whether turn ``t`` is a place the parent rule may link to for ``key``."""
        if self.occurrence(t, key) is None:
            return False
        return self.rules.echoes_carry or not (self.turns[t].role is Role.TOOL
                                               and self.is_echo(t, key))

    def turns_holding(self, before: int, key: str) -> int:
        """How many turns before ``before`` hold the value anywhere in their text."""
        return bisect_left(self.holders(key), before)

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
            for arg in self.call_args[(call_turn, call_id)]:
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
