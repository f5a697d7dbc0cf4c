"""Where the values of one conversation stand: step 2 of tracing (``_tracing``).

:class:`Occurrences` extends the vocabulary with the occurrence index and the *parent rule*:
where a value stands in a turn (``occurrence``, ``find``), the turns that carry it
(``carriers``, read through the turn index of ``_index`` rather than by scanning every earlier
turn), the latest turn before a child that carries it (``parent``: v2 any turn that shows it,
the one the answer read; v1 the one that introduced or restated it, skipping a tool result
that echoes its own call), and, in an answer's content, the values that stand there, the
clause and the listing heading each stands in (``content_matches``, ``clause_keys``,
``heading_keys``), looked up by bisection so that an answer listing many values stays fast.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from typing import Any

from mtcabench.lineage._config import LineageConfig, LineageSummary
from mtcabench.lineage._index import TurnIndex, before
from mtcabench.lineage._normalise import locate
from mtcabench.lineage._values import Value, find_value, tool_json
from mtcabench.lineage._vocabulary import Vocabulary
from mtcabench.model import Conversation, Role, Turn

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


class Occurrences(Vocabulary):
    """The values of one conversation and where they stand (see the module)."""

    def __init__(self, conv: Conversation, config: LineageConfig, summary: LineageSummary):
        super().__init__(conv, config, summary)
        self._occ: dict[tuple[int, str], tuple[int, int] | None] = {}
        self._parent: dict[tuple[int, str], int | None] = {}
        self._matches: dict[int, list[tuple[int, int, str]]] = {}
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
        if self.applies("code_glosses"):
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

    def _carries(self, t: int, key: str) -> bool:
        """Whether turn ``t`` is a place the parent rule may link to for ``key``."""
        if self.occurrence(t, key) is None:
            return False
        return self.rules.echoes_carry or not (self.turns[t].role is Role.TOOL
                                               and self.is_echo(t, key))

    def turns_holding(self, before: int, key: str) -> int:
        """How many turns before ``before`` hold the value anywhere in their text."""
        return bisect_left(self.holders(key), before)
