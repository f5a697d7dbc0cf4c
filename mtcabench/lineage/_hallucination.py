"""The hallucination decision: typed tokens of an answer that no earlier turn supports.

A time or date in an answer that occurs in no earlier turn is proposed as a hallucination only
when it is exactly decidable: the clause before it names a tool-result key, the latest tool
result with such a key gives exactly one value under it, and that value differs. Any other
unsupported token is counted (``unsupported-value``), never proposed. Under the v2 rules "no
earlier turn" is judged after normalisation (a "6:25 PM" is not unsupported when a result
said ``18:25:00``), and a membership tier the profile contradicts is one too (``_claims``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date

from mtcabench.lineage._actions import action_spans
from mtcabench.lineage._claims import membership_spans
from mtcabench.lineage._elapsed import elapsed_spans
from mtcabench.lineage._normalise import value_of
from mtcabench.lineage._records import line_spans, order_spans
from mtcabench.lineage._tracing import Covered, ProposedSpan, Tracer
from mtcabench.lineage._values import (
    _DATE,
    _FREE_TOKEN,
    _MONTHS,
    _ORDINAL,
    _TIME,
    Value,
    _bounded,
    _date_forms,
    _time_forms,
    classify,
    json_leaves,
    make_value,
)
from mtcabench.model import DependencyType, Edge, Evidence, Role, TargetSpan

#: Time and date tokens in an answer, for the hallucination check (12-hour times included).
_ANSWER_TIME = re.compile(
    r"\b(\d{1,2}):([0-5]\d)(?::([0-5]\d))?(?:\s?([AaPp])(?:\.[Mm]\.|[Mm]))?(?![\w:])"
)
_ANSWER_DATE = re.compile(
    r"\b(\d{4})-(\d{2})-(\d{2})\b|\b(" + "|".join(_MONTHS) + r") (\d{1,2}), (\d{4})\b"
)
#: Where a clause ends (a full stop, not a decimal point): the words naming the key.
_CLAUSE_END = re.compile(r"[.!?;\n](?!\d)")


def unsupported_spans(tracer: Tracer, c: int, covered: Covered
                      ) -> list[ProposedSpan]:
    """Hallucination candidates where decidable exactly; other unsupported tokens counted."""
    content = tracer.turns[c].content
    out: list[ProposedSpan] = []
    if tracer.applies("membership_claims") and tracer.config.hallucinations:
        out += membership_spans(tracer, c, covered)
    if tracer.applies("elapsed_claims") and tracer.config.hallucinations:
        out += elapsed_spans(tracer, c, covered)
    if tracer.applies("order_claims") and tracer.config.hallucinations:
        out += order_spans(tracer, c, covered)
    if tracer.applies("line_claims") and tracer.config.hallucinations:
        out += line_spans(tracer, c, covered)
    if tracer.applies("action_claims") and tracer.config.hallucinations:
        out += action_spans(tracer, c, covered)
    tokens = _typed_tokens_v2(tracer, c) if tracer.rules.normalised else _typed_tokens(
        tracer, content)
    for start, end, value in tokens:
        if covered.overlaps(start, end):
            continue
        if tracer.known_before(value, c):
            continue  # the value is known but was not proposed (a rule skipped it)
        decided = _contradiction(tracer, c, start, value) if tracer.config.hallucinations else None
        if decided is None:
            tracer.summary.skipped["unsupported-value"] += 1
            continue
        if decided == "ambiguous":
            tracer.summary.skipped["ambiguous-contradiction"] += 1
            continue
        primer, key, found = decided
        tool = tracer.turns[primer]
        pos = tracer.find(primer, found)
        if pos is None:  # the value is escaped in the raw text: nothing exact to quote
            tracer.summary.skipped["unsupported-value"] += 1
            continue
        edges, unsourced = tracer.trace(c, [(primer, "")])
        if edges is None:  # larger than MAX_GRAPH_TURNS (counted by trace)
            continue
        tracer.count_unsourced(unsourced)
        edges[(c, primer)] = Edge(child=c, parent=primer, evidence=Evidence(
            quote=tool.text[pos[0]:pos[1]], start=pos[0], end=pos[1]))
        graph = tracer.graph(c, edges)
        span = TargetSpan(turn=c, start=start, end=end, text=content[start:end])
        note = (f"contradiction: the answer states {span.text!r} where turn {primer} "
                f"gives {key} = {found.key!r}, and {span.text!r} occurs nowhere earlier")
        out.append(ProposedSpan(span, value, graph, DependencyType.HALLUCINATION, note))
        covered.add(start, end)
    return out


def _typed_tokens(tracer: Tracer, content: str) -> Iterator[tuple[int, int, Value]]:
    for m in _ANSWER_TIME.finditer(content):
        h, mi, s, half = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0), m.group(4)
        if half:
            if not 1 <= h <= 12:
                continue
            h = h % 12 + (12 if half in "Pp" else 0)
        elif h > 23 or (m.group(3) is None and len(m.group(1)) != 2):
            continue  # "9:30" without AM/PM: not exact enough to judge; "09:30" is 24-hour
        key = f"{h:02d}:{mi:02d}:{s:02d}"
        yield m.start(), m.end(), Value(key, "time", _time_forms(h, mi, s))
    for m in _ANSWER_DATE.finditer(content):
        try:
            if m.group(1):
                y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
            else:
                y, mo, d = int(m.group(6)), _MONTHS.index(m.group(4)) + 1, int(m.group(5))
            date(y, mo, d)
        except ValueError:
            continue
        key = f"{y:04d}-{mo:02d}-{d:02d}"
        yield m.start(), m.end(), Value(key, "date", _date_forms(y, mo, d))
    for m in _FREE_TOKEN.finditer(content):
        token = m.group()
        if (classify(token) == "id" and not re.fullmatch(r"[\d,.:-]+", token)
                and not _ORDINAL.fullmatch(token)
                and _bounded(content, m.start(), m.end(), token)
                and len(token) >= tracer.config.min_length):
            yield m.start(), m.end(), Value(token, "id", (token,))


def _typed_tokens_v2(tracer: Tracer, c: int) -> Iterator[tuple[int, int, Value]]:
    """The v2 reading of an answer's typed tokens: its date and time mentions (any format the
    normalisers read), then the identifiers of ``_typed_tokens``."""
    content = tracer.turns[c].content
    for m in tracer.mentions(c):
        if m.end <= len(content) and m.kind in ("date", "time"):
            yield m.start, m.end, value_of(m)
    for start, end, value in _typed_tokens(tracer, content):
        if value.kind == "id":
            yield start, end, value


def _contradiction(tracer: Tracer, c: int, start: int, value: Value):
    """``(tool turn, key, its value)`` when the answer's clause names a key whose one value
    in the latest tool result naming it differs; "ambiguous" or None otherwise."""
    if value.kind not in ("time", "date"):
        return None
    content = tracer.turns[c].content
    clause_start = max((m.end() for m in _CLAUSE_END.finditer(content, 0, start)), default=0)
    words = {_singular(w) for w in re.findall(r"[a-z]+", content[clause_start:start].lower())}
    pattern = _TIME if value.kind == "time" else _DATE
    for t in range(c - 1, -1, -1):
        turn = tracer.turns[t]
        if turn.role is not Role.TOOL:
            continue
        is_json, data = tracer.tool_data(t)
        if not is_json:
            continue
        named: dict[str, set[str]] = {}
        for k, leaf in json_leaves(data, keys_with_digits=False):
            if not (k and isinstance(leaf, str) and pattern.fullmatch(leaf)):
                continue
            key_words = {_singular(w) for w in k.lower().split("_") if w not in _KEY_NOISE}
            if len(key_words) >= 2 and key_words <= words:
                named.setdefault(k, set()).add(leaf)
        if not named:
            continue
        found = set().union(*named.values())
        if len(found) != 1:
            return "ambiguous"
        leaf = found.pop()
        if leaf == value.key:
            return None
        return t, min(named), make_value(leaf)
    return None


#: Key parts that say nothing about meaning (time zone suffixes).
_KEY_NOISE = {"est", "utc", "pst", "edt"}


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word
