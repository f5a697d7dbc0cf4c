"""Normalised matching (rules ``lineage-v2``): the normalisers, and where a value stands in a text.

An agent rarely writes a value the way the tool result gave it: ``2024-05-20`` becomes "May
20th", ``19:00:00`` becomes "7 PM", ``-6594`` (a refund in a payment history) becomes
"$6,594", a list of two passengers becomes "two passengers", ``certificate_7504069`` becomes
"Certificate 7504069". Each normaliser below is one small function that finds such
*mentions* in a text and gives each the canonical key of its kind; two mentions match when
kind and key agree. A mention must stand alone like an exact form (``_values._bounded``): no
match inside a longer word, id or number. Evidence still quotes the parent turn's own text
(the mention as written there). docs/lineage.md has the table of normalisers with examples.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from mtcabench.lineage._values import (
    _MONTHS,
    Value,
    _bounded,
    _date_forms,
    _number_forms,
    _time_forms,
    find_value,
)

#: Kinds whose values are matched through mentions only (their exact forms are mentions too).
MENTION_KINDS = ("date", "time", "number", "count")


@dataclass(frozen=True)
class Mention:
    """A value as written in a text, with the canonical key of its kind."""

    start: int
    end: int
    kind: str  # one of MENTION_KINDS
    key: str  # 2024-05-20, 19:00:00, 6594, "2 passenger"


# ---------------------------------------------------------------- the normalisers
_ISO_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_MONTH = "|".join(_MONTHS)
#: "May 20", "May 20th", "May 20, 2024", "May 20th, 2024" (capitalised: "may" is also a verb)
_MONTH_DAY = re.compile(rf"\b({_MONTH})\s+(\d{{1,2}})(?:st|nd|rd|th)?(?!\d)(?:,?\s+(\d{{4}})\b)?")
#: "20 May", "20th of May 2024"
_DAY_MONTH = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH})\b(?:,?\s+(\d{{4}})\b)?")


def _iso(y: int, mo: int, d: int) -> str | None:
    try:
        return date(y, mo, d).isoformat()
    except ValueError:
        return None


def iso_dates(text: str) -> Iterator[Mention]:
    """``2024-05-20``, also as the date of a datetime (``2024-05-20T15:00:00``)."""
    for m in _ISO_DATE.finditer(text):
        key = _iso(*(int(x) for x in m.groups()))
        after = text[m.end():m.end() + 1]
        if key and (after == "T" or _bounded(text, m.start(), m.end(), m.group())):
            yield Mention(m.start(), m.end(), "date", key)


def dates_in_words(text: str, year: int | None) -> Iterator[Mention]:
    """"May 20th", "May 20, 2024", "20 May": a missing year is the conversation's own year
    (the policy's current date); without one, a date in words without a year is no date."""
    for m, month, day, y in ((m, m.group(1), m.group(2), m.group(3)) for m in _MONTH_DAY.finditer(text)):
        yield from _word_date(m, month, day, y, year)
    for m, month, day, y in ((m, m.group(2), m.group(1), m.group(3)) for m in _DAY_MONTH.finditer(text)):
        yield from _word_date(m, month, day, y, year)


def _word_date(m: re.Match, month: str, day: str, y: str | None, year: int | None
               ) -> Iterator[Mention]:
    y_num = int(y) if y else year
    if y_num is None:
        return
    key = _iso(y_num, _MONTHS.index(month) + 1, int(day))
    if key:
        yield Mention(m.start(), m.end(), "date", key)


#: "19:00:00", "19:00", "03:00:00+1" (a next-day arrival: the time is 03:00:00)
_CLOCK24 = re.compile(r"(?<![\d:])([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d))?(\+1)?(?![\d:])")
#: "7 PM", "7pm", "7:00 PM", "07:00 p.m."
_CLOCK12 = re.compile(
    r"(?<![\d:])(\d{1,2})(?::([0-5]\d))?(?::([0-5]\d))?\s?([AaPp])(?:\.[Mm]\.|[Mm]\b)")
_HALF_DAY_AFTER = re.compile(r"\s?[AaPp]\.?[Mm]\b")


def clock_times(text: str) -> Iterator[Mention]:
    """24-hour times with two-digit hours, and 12-hour times with AM/PM, as ``HH:MM:SS``.

    "9:30" without AM/PM is left out (not exact enough to read), and a 24-hour form followed
    by AM/PM is read as the 12-hour time it is ("06:00 PM" is 18:00:00).
    """
    for m in _CLOCK24.finditer(text):
        if _HALF_DAY_AFTER.match(text, m.end()):
            continue
        h, mi, s = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
        yield Mention(m.start(), m.end(), "time", f"{h:02d}:{mi:02d}:{s:02d}")
    for m in _CLOCK12.finditer(text):
        h, mi, s = int(m.group(1)), int(m.group(2) or 0), int(m.group(3) or 0)
        if not 1 <= h <= 12:
            continue
        h = h % 12 + (12 if m.group(4) in "Pp" else 0)
        yield Mention(m.start(), m.end(), "time", f"{h:02d}:{mi:02d}:{s:02d}")


_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")


def amounts(text: str) -> Iterator[Mention]:
    """Numbers with or without a currency sign and thousands separators, without their sign:
    "$1,234.50", "1234.5" and "1,234.50" are 1234.5; a refund stored as ``-6594`` is the
    "$6,594" the answer writes. The mention is the digits (a ``$`` before them is not)."""
    for m in _NUMBER.finditer(text):
        if _bounded(text, m.start(), m.end(), m.group()):
            key, _ = _number_forms(Decimal(m.group().replace(",", "")))
            yield Mention(m.start(), m.end(), "number", key)


NUMBER_WORDS = {w: i for i, w in enumerate((
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve"))}
#: The things a count counts, singular: what a tool result's list or count field holds.
COUNT_NOUNS = {"passenger": "passenger", "passengers": "passenger", "bag": "bag", "bags": "bag",
               "baggage": "bag", "baggages": "bag", "suitcase": "bag", "suitcases": "bag"}
_COUNT = re.compile(r"(?i)\b(\d{1,2}|" + "|".join(NUMBER_WORDS) + r")\s+(?:checked\s+)?("
                    + "|".join(COUNT_NOUNS) + r")\b")


def counts(text: str) -> Iterator[Mention]:
    """"two passengers", "3 checked bags": a number (digits or a word) right before what it
    counts. Any other word between them makes it no count ("2 free checked bags" is an
    allowance, "$30 per passenger" a rate)."""
    for m in _COUNT.finditer(text):
        word = m.group(1).lower()
        n = int(word) if word.isdigit() else NUMBER_WORDS[word]
        yield Mention(m.start(), m.end(), "count", count_key(n, m.group(2)))


def count_key(n: int, noun: str) -> str:
    return f"{n} {COUNT_NOUNS[noun.lower()]}"


def mentions(text: str, year: int | None) -> list[Mention]:
    """Every mention in a text, in order; where two overlap the longer one wins ("May 20,
    2024" over its "2024", "3 checked bags" over its "3")."""
    found = [*iso_dates(text), *dates_in_words(text, year), *clock_times(text),
             *counts(text), *amounts(text)]
    found.sort(key=lambda m: (m.start, -(m.end - m.start)))
    out: list[Mention] = []
    covered_until = -1
    for m in found:
        if m.start >= covered_until:
            out.append(m)
            covered_until = m.end
    return out


# ---------------------------------------------------------------- values and mentions
def match_key(value: Value) -> tuple[str, str] | None:
    """The (kind, key) a mention of ``value`` has, or None for kinds matched otherwise."""
    if value.kind == "number":
        key, _ = _number_forms(abs(Decimal(value.key)))
        return ("number", key)
    if value.kind in MENTION_KINDS:
        return (value.kind, value.key)
    return None


def value_of(mention: Mention) -> Value:
    """The value a mention in free text introduces (a user's "May 20th", "11 AM")."""
    if mention.kind == "date":
        y, mo, d = (int(x) for x in mention.key.split("-"))
        return Value(mention.key, "date", _date_forms(y, mo, d))
    if mention.kind == "time":
        h, mi, s = (int(x) for x in mention.key.split(":"))
        return Value(mention.key, "time", _time_forms(h, mi, s))
    if mention.kind == "count":
        return Value(mention.key, "count", ())
    key, forms = _number_forms(Decimal(mention.key))
    return Value(key, "number", forms)


_SEPARATORS = re.compile(r"[_\s-]+")
_folded_cache: dict[str, re.Pattern | None] = {}


def folded_pattern(value: Value) -> re.Pattern | None:
    """Case and separators: an id or a name of several parts matches whatever its case and
    whichever of ``_``, ``-`` or spaces join its parts ("Certificate 7504069" is
    ``certificate_7504069``, "hat136" is ``HAT136``). A single word without a digit keeps its
    case: ``SEA`` is not the word "sea", ``MIA`` is not the name "Mia"."""
    if value.kind not in ("id", "code", "name", "email"):
        return None
    if value.key in _folded_cache:
        return _folded_cache[value.key]
    parts = [p for p in _SEPARATORS.split(value.key) if p]
    pattern = None
    if parts and (len(parts) > 1 or any(ch.isdigit() for ch in value.key)):
        pattern = re.compile(r"[_\s-]+".join(map(re.escape, parts)), re.IGNORECASE)
    _folded_cache[value.key] = pattern
    return pattern


def locate(text: str, value: Value, found: MentionIndex, lo: int = 0,
           hi: int | None = None) -> tuple[int, int] | None:
    """The first standalone occurrence of ``value`` in ``text[lo:hi]`` under the v2 rules:
    a mention of its kind and key (``found``: the text's mentions), else its exact forms or
    its folded spelling."""
    hi = len(text) if hi is None else hi
    wanted = match_key(value)
    if wanted is not None:
        return found.first(wanted, lo, hi)
    best = find_value(text, value, lo, hi)
    pattern = folded_pattern(value)
    if pattern is not None:
        for m in pattern.finditer(text, lo, hi):
            if best is not None and m.start() >= best[0]:
                break
            if _bounded(text, m.start(), m.end(), m.group()):
                best = (m.start(), m.end())
                break
    return best


class MentionIndex:
    """A text's mentions, in order, and by (kind, key) for the first one in a range."""

    def __init__(self, found: list[Mention]):
        self.mentions = sorted(found, key=lambda m: m.start)
        self._by_key: dict[tuple[str, str], list[Mention]] = {}
        for m in self.mentions:
            self._by_key.setdefault((m.kind, m.key), []).append(m)

    def __iter__(self):
        return iter(self.mentions)

    def first(self, wanted: tuple[str, str], lo: int, hi: int) -> tuple[int, int] | None:
        for m in self._by_key.get(wanted, ()):
            if m.start >= lo and m.end <= hi:
                return (m.start, m.end)
        return None
