"""Where a value occurs in text: the first standalone occurrence of any of its forms."""

from __future__ import annotations

import re

from mtcabench.annotate.lineage._values import _DATE, Value

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
