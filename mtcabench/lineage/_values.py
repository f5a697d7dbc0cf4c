"""Values: what a JSON leaf or free-text token is, its surface forms, the exclusion rules, and
where a value stands alone in a text (its first standalone occurrence)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from mtcabench.lineage._config import LineageConfig
from mtcabench.io import JSONError, loads

_TIME = re.compile(r"([01]\d|2[0-3]):([0-5]\d):([0-5]\d)")
_DATE = re.compile(r"(\d{4})-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])")
_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?")
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[A-Za-z]+")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")
_CAPITALISED = re.compile(r"[A-Z0-9][\w'.-]*")

#: Typed tokens taken from free text (user turns, non-JSON tool results), longest first.
_FREE_TOKEN = re.compile(
    r"\d{4}-\d{2}-\d{2}"  # date
    r"|\d{2}:\d{2}:\d{2}"  # time
    r"|[A-Za-z0-9_]*(?:[A-Za-z_]\d|\d[A-Za-z_])[A-Za-z0-9_]*"  # identifier mixing digits
    r"|\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"  # number
    r"|[A-Z]{5,}"  # upper-case code (reservation ids such as VAAOXJ)
)
#: Ordinals ("20th"): part of a date in words, never a value of their own.
_ORDINAL = re.compile(r"\d+(?:st|nd|rd|th)")


@dataclass(frozen=True)
class Value:
    """A value and the exact surface forms it may take in text (``19:00:00``, ``07:00 PM``)."""

    key: str  # canonical text
    kind: str  # id, code, name, email, date, datetime, time, number
    forms: tuple[str, ...]
    #: A calculator's short answer ("55.0"): a span only where the answer writes "$55".
    currency_only: bool = False


#: Numbers with more integer digits than this keep their text as their only form.
MAX_NUMBER_DIGITS = 100


def _number_forms(num: Decimal) -> tuple[str, tuple[str, ...]]:
    """Canonical text and forms of a number: ``255`` also reads ``255.0``, ``255.00``."""
    if num.adjusted() >= MAX_NUMBER_DIGITS:
        # No one copies a number this long by its value; and int() refuses over 4,300 digits.
        text = format(num, "f")
        return text, (text,)
    if num == num.to_integral_value():
        n = int(num)
        forms = [str(n), f"{n}.0", f"{n}.00"]
        if abs(n) >= 1000:
            forms += [f"{n:,}", f"{n:,}.00"]
        return str(n), tuple(forms)
    text = format(num.normalize(), "f")
    forms = [text, f"{num:.2f}"]
    if abs(num) >= 1000:
        forms += [f"{num:,.2f}", f"{num.normalize():,f}"]
    return text, tuple(dict.fromkeys(forms))


def _time_forms(h: int, m: int, s: int) -> tuple[str, ...]:
    """``19:00:00``; when the seconds are zero also ``19:00``, ``07:00 PM``, ``7:00 PM``."""
    forms = [f"{h:02d}:{m:02d}:{s:02d}"]
    if s == 0:
        half = "AM" if h < 12 else "PM"
        h12 = h % 12 or 12
        forms += [f"{h:02d}:{m:02d}", f"{h12:02d}:{m:02d} {half}", f"{h12}:{m:02d} {half}"]
    return tuple(dict.fromkeys(forms))


def _date_forms(y: int, mo: int, d: int) -> tuple[str, ...]:
    return (f"{y:04d}-{mo:02d}-{d:02d}", f"{_MONTHS[mo - 1]} {d}, {y}")


def classify(text: str) -> str:
    """The kind of a string value: time, date, email, id, code, name, word or prose."""
    if _TIME.fullmatch(text):
        return "time"
    if _DATE.fullmatch(text):
        return "date"
    if _EMAIL.fullmatch(text):
        return "email"
    if _DATETIME.fullmatch(text):
        return "datetime"
    if not any(ch.isspace() for ch in text):
        if any(ch.isdigit() for ch in text):
            return "id"
        letters = [ch for ch in text if ch.isalpha()]
        if letters and all(ch.isupper() for ch in letters) and len(letters) >= 2:
            return "code"
        if text[:1].isupper():
            return "name"
        return "word"
    if all(_CAPITALISED.fullmatch(w) for w in text.split()):
        return "name"  # "Sunset Drive", "975 Sunset Drive", "New York"
    return "prose"


def make_value(leaf: Any, *, from_free_text: bool = False) -> Value | None:
    """The Value of a JSON leaf or a free-text token (None for booleans, nulls, containers)."""
    if isinstance(leaf, bool) or leaf is None:
        return None
    if isinstance(leaf, (int, float)):
        try:
            num = Decimal(str(leaf))
        except InvalidOperation:
            return None
        if not num.is_finite():  # NaN, Infinity: Python's json reads them; nothing to copy
            return None
        key, forms = _number_forms(num)
        return Value(key, "number", forms)
    if not isinstance(leaf, str):
        return None
    text = leaf.strip()
    if not text:
        return None
    kind = classify(text)
    if kind == "time":
        h, m, s = (int(x) for x in _TIME.fullmatch(text).groups())
        return Value(text, kind, _time_forms(h, m, s))
    if kind == "date":
        y, mo, d = (int(x) for x in _DATE.fullmatch(text).groups())
        return Value(text, kind, _date_forms(y, mo, d))
    if from_free_text and re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?", text):
        key, forms = _number_forms(Decimal(text.replace(",", "")))
        return Value(key, "number", forms)
    return Value(text, kind, (text,))


def exclusion(value: Value, config: LineageConfig) -> str | None:
    """Which rule keeps a value out of tracing, or None when it is kept."""
    if value.kind in ("word", "prose") and not config.include_words:
        return value.kind
    if len(value.key) > config.max_length:
        return "max-length"
    if len(value.key) < config.min_length:
        return "min-length"
    if value.key.casefold() in config.stop_folded:
        return "stop-list"
    return None


def json_leaves(obj: Any, *, keys_with_digits: bool = True) -> Iterator[tuple[str | None, Any]]:
    """``(key, leaf)`` pairs of a JSON value, depth first in document order.

    Dict keys holding a digit are leaves too: TauBench keys payment methods by their id.
    """
    if isinstance(obj, dict):
        for k, v in obj.items():
            if keys_with_digits and any(ch.isdigit() for ch in k):
                yield None, k
            if isinstance(v, (dict, list)):
                yield from json_leaves(v, keys_with_digits=keys_with_digits)
            else:
                yield k, v
    elif isinstance(obj, list):
        for v in obj:
            if isinstance(v, (dict, list)):
                yield from json_leaves(v, keys_with_digits=keys_with_digits)
            else:
                yield None, v
    else:
        yield None, obj


# ---------------------------------------------------------------- occurrences in text
_DATETIME_REST = re.compile(r"T\d{2}:")
_CLOCK24 = re.compile(r"\d{2}:\d{2}(?::\d{2})?")
_HALF_DAY = re.compile(r"\s?[AaPp]\.?[Mm]\b")


def _bounded(text: str, start: int, end: int, form: str) -> bool:
    """Whether ``text[start:end]`` stands alone: not inside a longer word, id or number."""
    before = text[start - 1] if start > 0 else ""
    after = text[end] if end < len(text) else ""
    if (before.isalnum() or before == "_") and (form[:1].isalnum() or form[:1] == "_"):
        return False
    # an ISO date is the first part of an ISO datetime: "2024-05-01" in "2024-05-01T16:18"
    if ((after.isalnum() or after == "_") and (form[-1:].isalnum() or form[-1:] == "_")
            and not (_DATE.fullmatch(form) and _DATETIME_REST.match(text, end))):
        return False
    # a number or time continues: "151" inside "1.151", "151.5", "06:00" inside "06:00:00"
    if before in ".,:" and start >= 2 and text[start - 2].isdigit():
        return False
    if after in ".,:" and end + 1 < len(text) and text[end + 1].isdigit():
        return False
    # a 24-hour form followed by AM/PM is a different time ("07:00 PM" is not 07:00:00)
    return not (_CLOCK24.fullmatch(form) and _HALF_DAY.match(text, end))


def find_value(
    text: str, value: Value, lo: int = 0, hi: int | None = None
) -> tuple[int, int] | None:
    """The first standalone occurrence of any form of ``value`` in ``text[lo:hi]``."""
    hi = len(text) if hi is None else hi
    best: tuple[int, int] | None = None
    for form in value.forms:
        i = text.find(form, lo, hi)
        while i != -1:
            if _bounded(text, i, i + len(form), form):
                if best is None or i < best[0] or (i == best[0] and i + len(form) > best[1]):
                    best = (i, i + len(form))
                break
            i = text.find(form, i + 1, hi)
    return best


def tool_json(text: str) -> tuple[bool, Any]:
    """``(True, data)`` when a tool result's text is JSON, else ``(False, None)``.

    Parsed with the project's one JSON parser, so a tool result nested too deeply to parse
    is free text like any other non-JSON result, never a RecursionError.
    """
    try:
        return True, loads(text)
    except JSONError:
        return False, None
