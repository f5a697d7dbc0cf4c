"""Splitting a turn's text into evidence units, the pieces that base scorers score.

A unit is what a person can point at as "where the value came from". Structure first: a
turn whose text is a JSON value (a tool result, usually) is split into its fields, a field
whose value is an object or a list going on into its members (a container's opening bracket,
and the key it is the value of, join its first member, so ``"items": [{"sku": "A-1",`` is one unit and ``"qty": 2`` the
next); the items of a list are units of their own. Then, inside every unit and in plain
text alike, a unit ends after ``.``, ``!`` or ``?`` followed by white space, after a CJK full
stop, exclamation or question mark (``。``, ``！``, ``？``: no space follows them) and at every line
break (tool-call lines, table rows, list items and pretty-printed JSON lines thereby become
units of their own).

Units cover the turn's text without gaps: each runs from its first non-blank character to the
start of the next unit, so that every token of the text belongs to one unit and a dropped
unit (context subsampling, ablation) takes its trailing blank and separator with it.

Units refine *segments*, the sentences and lines alone (:func:`unit_segments`): a turn's score
pools the units of a segment, its units are the evidence.
"""

from __future__ import annotations

import re
from bisect import bisect_right

from mtcabench.io import JSONError, loads

#: A unit ends after ``.``, ``!`` or ``?`` and white space, after a full stop, exclamation or
#: question mark of Chinese and Japanese text (which takes no space after it), and at line
#: breaks. Without the second, a Japanese tool result cut by a context window (no longer JSON,
#: so not split into fields) was one unit per kept piece: its evidence a whole piece, often
#: the turn's tail, where its ASCII twin's held the value's field.
_BOUNDARY = re.compile(r"(?<=[.!?])\s+|(?<=[\u3002\uff01\uff1f\uff0e\uff61])\s*|\n+")
_BLANK = " \t\r\n"
#: Longest text scanned for JSON structure (a bigger tool result is split by lines only: the
#: scan is linear, this only bounds the work spent on one turn).
MAX_JSON_CHARS = 1_000_000


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Character ranges ``[start, end)`` of the evidence units of ``text``, in order, gap-free
    (see the module docstring; the name is historical: units are sentences of plain text)."""
    return _cover(text, sorted(set(json_unit_starts(text)) | set(_segment_starts(text))))


def _segment_starts(text: str) -> list[int]:
    starts, pos = [], 0
    for m in _BOUNDARY.finditer(text):
        starts.append(pos)
        pos = m.end()
    starts.append(pos)
    return starts


def unit_segments(text: str, units: list[tuple[int, int]]) -> list[int]:
    """For each unit of ``text`` (:func:`split_sentences`), the index of its *segment*: the
    sentence or line it lies in, without the JSON structure. A turn is scored by its best
    segment (the units of a segment pooled), so that splitting a tool result into fields makes
    the evidence finer without making a turn of many short fields weigh less against a turn
    of long sentences; the units are the evidence inside the segment."""
    segs = [a for a, _ in _cover(text, _segment_starts(text))]
    return [max(bisect_right(segs, a) - 1, 0) for a, _ in units]


def _cover(text: str, starts: list[int]) -> list[tuple[int, int]]:
    """Gap-free ranges from candidate starts: a start whose piece is blank is dropped (its
    blank joins the unit before), a piece's leading blanks are skipped, the first unit
    starts at 0."""
    kept: list[int] = []
    for i, s in enumerate(starts):
        nxt = starts[i + 1] if i + 1 < len(starts) else len(text)
        piece = text[s:nxt]
        if piece.strip():
            kept.append(s + len(piece) - len(piece.lstrip()))
    if not kept:
        return []
    kept[0] = 0  # leading blanks of the text belong to the first unit
    return list(zip(kept, kept[1:] + [len(text)]))


def json_unit_starts(text: str) -> list[int]:
    """Where the structural units of ``text`` start, when it is one JSON object or list
    (blanks around it allowed); empty otherwise. Each object member and list item starts a
    unit, except the first member or item of a container, which joins its key or opening
    bracket (see the module docstring)."""
    body = text.strip()
    if not body or body[0] not in "{[" or len(text) > MAX_JSON_CHARS:
        return []
    try:
        # The one JSON parser (io.loads): its number policy (NaN is no JSON) and its depth
        # bound, under which the recursive scan below stays (json.loads raised RecursionError).
        loads(body)
    except JSONError:
        return []
    starts: list[int] = []
    try:
        _Scanner(text, starts).value(len(text) - len(text.lstrip(_BLANK)))
    except (IndexError, ValueError):  # a form json accepts and the scanner does not: no units
        return []
    return starts


class _Scanner:
    """Positions of members and items in text already known to be JSON (no validation)."""

    def __init__(self, text: str, starts: list[int]):
        self.text, self.starts = text, starts

    def _skip(self, i: int) -> int:
        while self.text[i] in _BLANK:
            i += 1
        return i

    def value(self, i: int) -> int:
        """Scan the value at ``i``; return the position after it."""
        c = self.text[i]
        if c == "{":
            return self._container(i, "}", members=True)
        if c == "[":
            return self._container(i, "]", members=False)
        if c == '"':
            return self._string(i)
        j = i
        while j < len(self.text) and self.text[j] not in ",]}" + _BLANK:
            j += 1
        if j == i:
            raise ValueError(f"no JSON value at {i}")
        return j

    def _string(self, i: int) -> int:
        j = i + 1
        while self.text[j] != '"':
            j += 2 if self.text[j] == "\\" else 1
        return j + 1

    def _container(self, i: int, close: str, *, members: bool) -> int:
        i = self._skip(i + 1)
        first = True
        while self.text[i] != close:
            # The first member of a container stays with its key or opening bracket.
            if not first:
                self.starts.append(i)
            first = False
            if members:
                i = self._skip(self._string(i))
                if self.text[i] != ":":
                    raise ValueError(f"no ':' at {i}")
                i = self._skip(i + 1)
            i = self._skip(self.value(i))
            if self.text[i] == ",":
                i = self._skip(i + 1)
        return i + 1
