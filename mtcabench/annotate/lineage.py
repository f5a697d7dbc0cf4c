"""Lineage proposals: a deterministic, model-free annotator that traces copied values.

Most claims in an agent's answer carry values copied from earlier turns (a reservation id
from a tool result, a user id the user typed, a price from a search). Their provenance can
be traced exactly by following where each value appears. This module finds such values in
assistant text and builds a provenance graph for each one; docs/lineage.md states every rule
with examples. In short (rules ``lineage-v1``):

* Values: leaves of tool-result JSON and of tool-call arguments (plus dict keys holding a
  digit, such as ``gift_card_3576581``), and typed tokens (ids with a digit, upper-case
  codes, dates, times, numbers) in user text, in non-JSON tool results and in prose leaves
  (``"305 - 250"``). Kept when at least ``min_length`` and at most ``max_length`` characters
  long, not on the stop list, and not a lower-case word (categories such as ``economy``
  are not copied values). System turns add no values but are searched as sources.
* Target spans: the first occurrence of each value in an assistant turn's content, when the
  value was known before that turn.
* Parent of "turn c needs value v": the latest earlier turn that introduced or restated v:
  a user or system turn holding it, a tool result holding it that did not merely echo its
  own call's arguments, or an assistant turn whose *content* holds it (a summary: the chain
  continues from there). A call line repeating a value is not a place it entered. An echoing
  tool result is used only when nothing else holds the value.
* A tool result gets the structural edge to the turn that issued its call; that call's
  argument values are traced in turn, and so on until exogenous turns.
* Derived amounts (``$72`` = ``$412`` - ``$340`` stated earlier in the same answer) and
  exactly decidable contradictions (a time or date that occurs nowhere earlier while the
  latest tool result naming the clause's key gives one different value) are the only
  non-copied spans proposed.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter, deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Any

from mtcabench.graph import check_graph, depth, infer_dependency_type
from mtcabench.model import (
    Annotator,
    Candidate,
    Conversation,
    DependencyType,
    Edge,
    EdgeKind,
    Evidence,
    ProvenanceGraph,
    Role,
    TargetSpan,
    Turn,
    span_id,
)

#: Version of the rule set; written into every record's annotator. Bump on any rule change.
RULES_VERSION = "lineage-v1"

#: Values that are leaves but carry no provenance worth tracing (compared case-insensitively).
DEFAULT_STOP_LIST: frozenset[str] = frozenset(
    {"EST", "UTC", "USA", "N/A", "NA", "None", "null", "True", "False", "Error", "ID", "OK"}
)


@dataclass(frozen=True)
class LineageConfig:
    """The tunable rules of the lineage annotator (defaults are ``lineage-v1``'s)."""

    #: Shortest value kept, in characters of its canonical text (``151``, ``JFK``; not ``12``).
    min_length: int = 3
    #: Longest value kept: longer leaves are prose (summaries, messages), not copied values.
    max_length: int = 40
    #: Values never traced (case-insensitive).
    stop_list: frozenset[str] = DEFAULT_STOP_LIST
    #: Also trace lower-case words and prose leaves (``economy``, ``delayed``); off: too noisy.
    include_words: bool = False
    #: A value found in more earlier turns than this is too ambiguous to propose as a span.
    max_value_turns: int = 8
    #: Propose ``$x`` amounts equal to the sum or difference of two traced amounts.
    derived_amounts: bool = True
    #: Propose exactly decidable contradictions as hallucination candidates.
    hallucinations: bool = True

    def __post_init__(self) -> None:
        if self.min_length < 1:
            raise ValueError(f"min_length must be at least 1, got {self.min_length}")
        if self.max_length < self.min_length:
            raise ValueError(f"max_length {self.max_length} is below min_length {self.min_length}")
        if self.max_value_turns < 1:
            raise ValueError(f"max_value_turns must be at least 1, got {self.max_value_turns}")
        object.__setattr__(self, "stop_list", frozenset(self.stop_list))

    def as_dict(self) -> dict[str, Any]:
        """The settings as plain JSON values (the stop list sorted)."""
        d = {f: getattr(self, f) for f in self.__dataclass_fields__}
        d["stop_list"] = sorted(self.stop_list)
        return d

    def signature(self) -> str:
        """``lineage-v1`` for the default settings, else ``lineage-v1+<8 hex of them>``.

        Written as the annotator's rules_version, so that candidates made with other
        settings never pass for the defaults' (the summary JSON lists the settings).
        """
        if self == LineageConfig():
            return RULES_VERSION
        blob = json.dumps(self.as_dict(), sort_keys=True).encode()
        return f"{RULES_VERSION}+{hashlib.sha256(blob).hexdigest()[:8]}"

    @property
    def stop_folded(self) -> frozenset[str]:
        """The stop list, case-folded (computed once)."""
        folded = self.__dict__.get("_stop_folded")
        if folded is None:
            folded = frozenset(s.casefold() for s in self.stop_list)
            object.__setattr__(self, "_stop_folded", folded)
        return folded


#: Why a leaf was not made a value (counted in the summary).
EXCLUDE_REASONS = ("min-length", "max-length", "stop-list", "word", "prose")
#: Why a found value or token did not become a span (counted in the summary).
SKIP_REASONS = (
    "repeat-in-turn",  # the value already has a span earlier in the same turn
    "frequent-value",  # found in more than max_value_turns earlier turns
    "no-source",  # only the agent's own call lines hold it: no turn introduced it
    "unsupported-value",  # a typed token that occurs nowhere earlier, not decidable
    "ambiguous-derivation",  # an amount equal to more than one sum/difference
    "ambiguous-contradiction",  # the naming tool result gives several values
    "argument-without-source",  # a call argument no earlier turn holds (not a span)
)


@dataclass
class LineageSummary:
    """What a lineage run found and skipped, filled while candidates are yielded."""

    rules_version: str = RULES_VERSION
    settings: dict[str, Any] = field(default_factory=dict)
    conversations: int = 0
    conversations_without_assistant_text: int = 0
    answer_turns: int = 0
    tool_results: int = 0
    tool_results_not_json: int = 0
    tool_results_empty: int = 0
    spans: int = 0
    by_type: Counter = field(default_factory=Counter)
    by_depth: Counter = field(default_factory=Counter)
    by_kind: Counter = field(default_factory=Counter)
    excluded_values: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        return {
            "rules_version": self.rules_version,
            "settings": self.settings,
            "conversations": self.conversations,
            "conversations_without_assistant_text": self.conversations_without_assistant_text,
            "answer_turns": self.answer_turns,
            "tool_results": self.tool_results,
            "tool_results_not_json": self.tool_results_not_json,
            "tool_results_empty": self.tool_results_empty,
            "spans": self.spans,
            "by_type": {t.value: self.by_type.get(t.value, 0) for t in DependencyType},
            "by_depth": {str(d): n for d, n in sorted(self.by_depth.items())},
            "by_kind": dict(sorted(self.by_kind.items())),
            "excluded_values": {r: self.excluded_values.get(r, 0) for r in EXCLUDE_REASONS},
            "skipped": {r: self.skipped.get(r, 0) for r in SKIP_REASONS},
        }

    def lines(self) -> list[str]:
        """The summary as plain text lines (what the CLI and the benchmark print)."""
        d = self.as_dict()
        out = [
            (f"lineage {d['rules_version']}: {d['spans']} spans in {d['conversations']} "
             f"conversations ({d['answer_turns']} assistant text turns; "
             f"{d['conversations_without_assistant_text']} conversations without any)"),
            "spans by type:  " + ", ".join(f"{k} {v}" for k, v in d["by_type"].items()),
            "spans by depth: " + ", ".join(f"{k}: {v}" for k, v in d["by_depth"].items()),
            "spans by value kind: " + ", ".join(f"{k} {v}" for k, v in d["by_kind"].items()),
            (f"tool results: {d['tool_results']} ({d['tool_results_not_json']} not JSON, "
             f"{d['tool_results_empty']} empty)"),
            "values excluded by rule: "
            + ", ".join(f"{k} {v}" for k, v in d["excluded_values"].items()),
            "skipped by rule: " + ", ".join(f"{k} {v}" for k, v in d["skipped"].items()),
        ]
        return out


# --------------------------------------------------------------------------- values

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
#: Time and date tokens in an answer, for the hallucination check (12-hour times included).
_ANSWER_TIME = re.compile(
    r"\b(\d{1,2}):([0-5]\d)(?::([0-5]\d))?(?:\s?([AaPp])(?:\.[Mm]\.|[Mm]))?(?![\w:])"
)
_ANSWER_DATE = re.compile(
    r"\b(\d{4})-(\d{2})-(\d{2})\b|\b(" + "|".join(_MONTHS) + r") (\d{1,2}), (\d{4})\b"
)
_AMOUNT = re.compile(r"\$\s?(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)")
_DATETIME_REST = re.compile(r"T\d{2}:")
_CLOCK24 = re.compile(r"\d{2}:\d{2}(?::\d{2})?")
_HALF_DAY = re.compile(r"\s?[AaPp]\.?[Mm]\b")
_ORDINAL = re.compile(r"\d+(?:st|nd|rd|th)")
_CLAUSE_END = re.compile(r"[.!?;\n](?!\d)")


@dataclass(frozen=True)
class Value:
    """A value and the exact surface forms it may take in text (``19:00:00``, ``07:00 PM``)."""

    key: str  # canonical text
    kind: str  # id, code, name, email, date, datetime, time, number
    forms: tuple[str, ...]
    #: A calculator's short answer ("55.0"): a span only where the answer writes "$55".
    currency_only: bool = False


def _number_forms(num: Decimal) -> tuple[str, tuple[str, ...]]:
    """Canonical text and forms of a number: ``255`` also reads ``255.0``, ``255.00``."""
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


# --------------------------------------------------------------------------- one conversation


@dataclass
class _Span:
    """A proposed span before it becomes a Candidate."""

    span: TargetSpan
    value: Value
    graph: ProvenanceGraph
    dtype: DependencyType
    rationale: str


class _Tracer:
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

    # ---- vocabulary

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

    # ---- occurrences and parents

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
        """The latest turn before ``child`` that introduced or restated the value (see module)."""
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

    # ---- graphs

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

    # ---- spans of one answer turn

    def spans(self, c: int) -> list[_Span]:
        turn = self.turns[c]
        content = turn.content
        matches: list[tuple[int, int, str]] = []
        for key, value in self.values.items():
            if self.known_from[key] >= c:
                continue
            lo = 0
            while (hit := find_value(content, value, lo)) is not None:
                if not value.currency_only or content[: hit[0]].rstrip(" ").endswith("$"):
                    matches.append((hit[0], hit[1], key))
                lo = hit[0] + 1
        # Longest match first at a position; no overlaps ("credit_card_7815826" wins over parts).
        matches.sort(key=lambda m: (m[0], -(m[1] - m[0])))
        chosen: list[tuple[int, int, str]] = []
        covered_until = -1
        for start, end, key in matches:
            if start >= covered_until:
                chosen.append((start, end, key))
                covered_until = end
        out: list[_Span] = []
        done: set[str] = set()
        for start, end, key in chosen:
            if key in done:
                self.summary.skipped["repeat-in-turn"] += 1
                continue
            done.add(key)
            made = self._copied_span(c, start, end, key)
            if made is not None:
                out.append(made)
        covered = [(s, e) for s, e, _ in chosen]
        if self.config.derived_amounts:
            out += self._derived_spans(c, covered, out)
        covered += [(s.span.start, s.span.end) for s in out]
        out += self._unsupported_spans(c, covered)
        out.sort(key=lambda s: s.span.start)
        return out

    def _copied_span(self, c: int, start: int, end: int, key: str) -> _Span | None:
        if self.turns_holding(c, key) > self.config.max_value_turns:
            self.summary.skipped["frequent-value"] += 1
            return None
        if self.parent(c, key) is None:
            self.summary.skipped["no-source"] += 1
            return None
        edges, unsourced = self.trace(c, [(c, key)])
        self._count_unsourced(unsourced)
        graph = self.graph(c, edges)
        value = self.values[key]
        span = TargetSpan(turn=c, start=start, end=end, text=self.turns[c].content[start:end])
        note = f"copied {value.kind} {span.text!r}: {self.chain_note(c, key)}"
        return _Span(span, value, graph, infer_dependency_type(graph, self.conv), note)

    def _derived_spans(
        self, c: int, covered: list[tuple[int, int]], copied: list[_Span]
    ) -> list[_Span]:
        content = self.turns[c].content
        amounts = []  # traced "$x" spans, in order
        for s in copied:
            if s.value.kind == "number" and content[:s.span.start].rstrip(" ").endswith("$"):
                amounts.append(s)
        out: list[_Span] = []
        done: set[Decimal] = set()
        for m in _AMOUNT.finditer(content):
            start, end = m.span(1)
            if any(s < end and start < e for s, e in covered):
                continue
            if not _bounded(content, start, end, m.group(1)):
                continue
            x = Decimal(m.group(1).replace(",", ""))
            if x in done:
                self.summary.skipped["repeat-in-turn"] += 1
                continue
            earlier = [a for a in amounts if a.span.end <= start]
            pairs = {
                (a.value.key, b.value.key, op)
                for i, a in enumerate(earlier)
                for b in earlier[i + 1:]
                for op, ok in (
                    ("+", Decimal(a.value.key) + Decimal(b.value.key) == x),
                    ("-", abs(Decimal(a.value.key) - Decimal(b.value.key)) == x),
                )
                if ok and a.value.key != b.value.key
            }
            if not pairs:
                continue
            if len(pairs) > 1:
                self.summary.skipped["ambiguous-derivation"] += 1
                continue
            ka, kb, op = pairs.pop()
            a = next(s for s in earlier if s.value.key == ka)
            b = next(s for s in earlier if s.value.key == kb)
            if op == "-" and Decimal(ka) < Decimal(kb):
                a, b = b, a
            edges: dict = {}
            for operand in (a, b):
                for e in operand.graph.edges:
                    edges.setdefault(e.pair, e)
            graph = self.graph(c, edges)
            span = TargetSpan(turn=c, start=start, end=end, text=m.group(1))
            value = Value(span.text, "derived-amount", (span.text,))
            note = (f"derived amount {span.text!r} = {a.span.text} {op} {b.span.text}: "
                    f"{a.span.text} from turn {self.parent(c, a.value.key)}, "
                    f"{b.span.text} from turn {self.parent(c, b.value.key)}")
            out.append(_Span(span, value, graph, infer_dependency_type(graph, self.conv), note))
            covered.append((start, end))
            done.add(x)
        return out

    def _unsupported_spans(self, c: int, covered: list[tuple[int, int]]) -> list[_Span]:
        """Hallucination candidates where decidable exactly; other unsupported tokens counted."""
        content = self.turns[c].content
        out: list[_Span] = []
        for start, end, value in self._typed_tokens(content):
            if any(s < end and start < e for s, e in covered):
                continue
            if any(find_value(self.turns[t].text, value) for t in range(c)):
                continue  # the value is known but was not proposed (a rule skipped it)
            decided = self._contradiction(c, start, value) if self.config.hallucinations else None
            if decided is None:
                self.summary.skipped["unsupported-value"] += 1
                continue
            if decided == "ambiguous":
                self.summary.skipped["ambiguous-contradiction"] += 1
                continue
            primer, key, found = decided
            tool = self.turns[primer]
            pos = find_value(tool.text, found)
            if pos is None:  # the value is escaped in the raw text: nothing exact to quote
                self.summary.skipped["unsupported-value"] += 1
                continue
            edges, unsourced = self.trace(c, [(primer, "")])
            self._count_unsourced(unsourced)
            edges[(c, primer)] = Edge(child=c, parent=primer, evidence=Evidence(
                quote=tool.text[pos[0]:pos[1]], start=pos[0], end=pos[1]))
            graph = self.graph(c, edges)
            span = TargetSpan(turn=c, start=start, end=end, text=content[start:end])
            note = (f"contradiction: the answer states {span.text!r} where turn {primer} "
                    f"gives {key} = {found.key!r}, and {span.text!r} occurs nowhere earlier")
            out.append(_Span(span, value, graph, DependencyType.HALLUCINATION, note))
            covered.append((start, end))
        return out

    def _typed_tokens(self, content: str) -> Iterator[tuple[int, int, Value]]:
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
                    and len(token) >= self.config.min_length):
                yield m.start(), m.end(), Value(token, "id", (token,))

    def _contradiction(self, c: int, start: int, value: Value):
        """``(tool turn, key, its value)`` when the answer's clause names a key whose one value
        in the latest tool result naming it differs; "ambiguous" or None otherwise."""
        if value.kind not in ("time", "date"):
            return None
        content = self.turns[c].content
        clause_start = max((m.end() for m in _CLAUSE_END.finditer(content, 0, start)), default=0)
        words = {_singular(w) for w in re.findall(r"[a-z]+", content[clause_start:start].lower())}
        pattern = _TIME if value.kind == "time" else _DATE
        for t in range(c - 1, -1, -1):
            turn = self.turns[t]
            if turn.role is not Role.TOOL:
                continue
            try:
                data = json.loads(turn.content)
            except (json.JSONDecodeError, ValueError):
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


# --------------------------------------------------------------------------- public entry


def lineage_annotator(config: LineageConfig | None = None) -> Annotator:
    """The annotator written into every lineage record (rules version and settings)."""
    return Annotator(name="lineage", rules_version=(config or LineageConfig()).signature())


def propose_conversation(
    conv: Conversation, config: LineageConfig | None = None, summary: LineageSummary | None = None
) -> list[Candidate]:
    """Lineage candidates for one conversation, in turn and span order."""
    config = config or LineageConfig()
    summary = summary if summary is not None else LineageSummary()
    summary.rules_version, summary.settings = config.signature(), config.as_dict()
    summary.conversations += 1
    tracer = _Tracer(conv, config, summary)
    answers = [t.index for t in conv.turns if t.role is Role.ASSISTANT and t.content.strip()]
    if not answers:
        summary.conversations_without_assistant_text += 1
        return []
    annotator = lineage_annotator(config)
    out: list[Candidate] = []
    for c in answers:
        summary.answer_turns += 1
        for s in tracer.spans(c):
            rid = span_id(conv.id, s.span)
            violations = check_graph(s.graph, conv, s.span, record=rid)
            if violations:  # a bug in these rules, never bad input: stop loudly
                raise RuntimeError(
                    "lineage built an invalid graph: " + "; ".join(map(str, violations)))
            summary.spans += 1
            summary.by_type[s.dtype.value] += 1
            summary.by_depth[depth(s.graph)] += 1
            summary.by_kind[s.value.kind] += 1
            out.append(Candidate(
                id=rid,
                conversation_id=conv.id,
                span=s.span,
                dependency_type=s.dtype,
                graph=s.graph,
                annotator=annotator,
                status="ok",
                rationale=s.rationale,
            ))
    return out


def propose_lineage(
    conversations: Iterable[Conversation],
    config: LineageConfig | None = None,
    *,
    summary: LineageSummary | None = None,
) -> Iterator[Candidate]:
    """Lineage candidates (status "ok", annotator "lineage") for every conversation.

    Pass a :class:`LineageSummary` to have it filled with counts by type, depth and rule as
    the candidates are yielded.
    """
    config = config or LineageConfig()
    summary = summary if summary is not None else LineageSummary()
    summary.rules_version, summary.settings = config.signature(), config.as_dict()
    for conv in conversations:
        yield from propose_conversation(conv, config, summary)


__all__ = [
    "DEFAULT_STOP_LIST",
    "RULES_VERSION",
    "LineageConfig",
    "LineageSummary",
    "Value",
    "classify",
    "lineage_annotator",
    "make_value",
    "propose_conversation",
    "propose_lineage",
]
