"""An edited value written the way the answer wrote the original: numbers with the answer's
decimals, dates and times in the answer's form (ISO, "May 24", "May 24th", "3:15 PM"), so that
a counterfactual answer reads as the agent would have written the other value
(:mod:`mtcabench.lineage._counterfactual` draws the edits)."""

from __future__ import annotations

import re
from datetime import date, time
from decimal import Decimal
from typing import Any

from mtcabench.lineage._values import _MONTHS


def written_like(original: str, leaf: Any, other: Any) -> str | None:
    """``other`` written the way ``original`` (the answer's text for ``leaf``) is written,
    or None when the answer's form is not one reproduced here."""
    if isinstance(leaf, bool) or isinstance(other, bool):
        return None
    if isinstance(leaf, (int, float)) and isinstance(other, (int, float)):
        return _number_like(original, Decimal(str(other)))
    if not (isinstance(leaf, str) and isinstance(other, str)):
        return None
    if original == leaf:
        return other
    d0, d1 = _iso_date(leaf), _iso_date(other)
    if d0 and d1:
        return _date_like(original, d0, d1)
    t0, t1 = _clock(leaf), _clock(other)
    if t0 and t1:
        return _time_like(original, t0, t1)
    return None


def _number_like(original: str, x: Decimal) -> str | None:
    text = original.replace(",", "")
    if not re.fullmatch(r"\d+(?:\.\d+)?", text) or x < 0:
        return None
    places = len(text.split(".")[1]) if "." in text else 0
    if x != x.quantize(Decimal(1).scaleb(-places)):
        return None  # the other value has more decimals than the answer writes
    out = f"{x:,.{places}f}" if "," in original else f"{x:.{places}f}"
    return out


def _iso_date(text: str) -> date | None:
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None


def _date_like(original: str, d0: date, d1: date) -> str | None:
    for fmt in (_long_date, _short_date, _ordinal_date):
        if fmt(d0) == original:
            return fmt(d1)
    return None


def _long_date(d: date) -> str:
    return f"{_MONTHS[d.month - 1]} {d.day}, {d.year}"


def _short_date(d: date) -> str:
    return f"{_MONTHS[d.month - 1]} {d.day}"


def _ordinal_date(d: date) -> str:
    suffix = "th" if 11 <= d.day <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(d.day % 10, "th")
    return f"{_MONTHS[d.month - 1]} {d.day}{suffix}"


def _clock(text: str) -> time | None:
    m = re.fullmatch(r"(\d{2}):(\d{2}):(\d{2})", text)
    if not m:
        return None
    h, mi, s = map(int, m.groups())
    return time(h, mi, s) if h < 24 and mi < 60 and s < 60 else None


def _time_like(original: str, t0: time, t1: time) -> str | None:
    for fmt in (_hms, _hm, _twelve_padded, _twelve):
        if fmt(t0) == original:
            return fmt(t1)
    return None


def _hms(t: time) -> str:
    return t.strftime("%H:%M:%S")


def _hm(t: time) -> str:
    return t.strftime("%H:%M")


def _twelve_padded(t: time) -> str:
    return f"{(t.hour % 12) or 12:02d}:{t.minute:02d} {'AM' if t.hour < 12 else 'PM'}"


def _twelve(t: time) -> str:
    return f"{(t.hour % 12) or 12}:{t.minute:02d} {'AM' if t.hour < 12 else 'PM'}"


# --------------------------------------------------------------------------- the records
