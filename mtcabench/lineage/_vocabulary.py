"""The vocabulary of one conversation: which values each turn introduces, each call's arguments
and what a call's result may echo, and (rules v2) each turn's normalised mentions.

:class:`Vocabulary` is the first step of tracing; ``_tracing.Tracer`` builds the parent rule
and the graphs on it.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal, InvalidOperation
from typing import Any

from mtcabench.lineage._config import LineageConfig, LineageSummary
from mtcabench.lineage._normalise import (
    Mention,
    MentionIndex,
    count_key,
    mentions,
    value_of,
)
from mtcabench.lineage._values import (
    _FREE_TOKEN,
    _ORDINAL,
    Value,
    _bounded,
    _number_forms,
    exclusion,
    json_leaves,
    make_value,
    tool_json,
)
from mtcabench.model import Conversation, Role, Turn

#: A next-day time as TauBench writes it in a tool result (``03:00:00+1``).
_NEXT_DAY_TIME = re.compile(r"([01]\d|2[0-3]):[0-5]\d:[0-5]\d\+1")
#: The policy's "current time is 2024-05-15 ...": the year of dates written without one.
_YEAR = re.compile(r"\b(\d{4})-\d{2}-\d{2}\b")


class Vocabulary:
    """The values of one conversation and where each became known."""

    def __init__(self, conv: Conversation, config: LineageConfig, summary: LineageSummary):
        self.conv = conv
        self.turns = conv.turns
        self.config = config
        self.rules = config.rule_set
        self.domain = conv.domain
        self.summary = summary
        self.values: dict[str, Value] = {}
        self.known_from: dict[str, int] = {}  # value key -> first turn that made it a value
        self.call_args: dict[tuple[int, str], list[str]] = {}  # (turn, call id) -> value keys
        self.call_echoes: dict[tuple[int, str], set[str]] = {}  # every argument's canonical text
        self.tool_call: dict[int, tuple[int, str]] = {}  # tool turn -> (call turn, call id)
        #: Values that name a record (a reservation id, a flight number): v2's anchors.
        self.record_ids: set[str] = set()
        self.year = self._reference_year()
        self._mentions: dict[int, MentionIndex] = {}
        self._json_counts: dict[int, list[Mention]] = {}
        self._collect()

    def applies(self, rule: str) -> bool:
        """Whether a rule (a field of RuleSet) runs on this conversation's domain."""
        return self.rules.applies(rule, self.domain)

    def _reference_year(self) -> int | None:
        for turn in self.turns:
            if turn.role is Role.SYSTEM and (m := _YEAR.search(turn.content)):
                return int(m.group(1))
        return None

    def mentions(self, t: int) -> MentionIndex:
        """The normalised mentions in turn ``t``'s whole text (computed once), with the counts
        a JSON tool result states by its structure."""
        found = self._mentions.get(t)
        if found is None:
            found = self._mentions[t] = MentionIndex(
                mentions(self.turns[t].text, self.year) + self._json_counts.get(t, []))
        return found

    # ------------------------------------------------------------------ adding values
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
        if self.rules.normalised and isinstance(leaf, str) and _NEXT_DAY_TIME.fullmatch(leaf):
            leaf = leaf[:8]  # "03:00:00+1": the time is 03:00:00, of the next day
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
                # A user's own calls (tau2-bench's telecom domain) are the user's: their
                # results answer the user turn, a source; the arguments add no values.
                for call in turn.tool_calls:
                    calls[call.id] = turn.index
                self._add_free_text(turn.content, turn.index)
            # System turns: policy prose. They are searched as sources (today's date) but add
            # no values of their own, else every number of the policy would become a span.

    def _collect_tool(self, turn: Turn) -> None:
        if not turn.content.strip():
            self.summary.tool_results_empty += 1
            return
        is_json, data = tool_json(turn.content)
        if not is_json:
            # "Transfer successful", "Error: ...": free text; its typed tokens are values.
            self.summary.tool_results_not_json += 1
            self._add_free_text(turn.content, turn.index)
            return
        if isinstance(data, (int, float)) and not isinstance(data, bool):
            self._add(make_value(data), turn.index, calculator=True)
            return
        domain_values = self.applies("domain_vocabulary")
        for key, leaf in json_leaves(data):
            if domain_values and key is not None and self._add_domain_leaf(key, leaf, turn.index):
                continue
            if key == "city" and self.applies("code_glosses"):
                # An address's city: where an answer names a city it is an airport's city
                # ("from Denver to Houston"), and the user's address is a coincidence.
                continue
            self._add_leaf(leaf, turn.index)
        if self.rules.record_anchor:
            self.record_ids |= _record_ids(data)
            if domain_values:  # an order, an item, a line, a plan, a payment method
                self.record_ids |= _record_ids(data, _DOMAIN_RECORD_KEYS)
        if self.rules.normalised:
            found = _json_count_mentions(turn.content, data)
            self._json_counts[turn.index] = found
            for m in found:
                self._add(Value(m.key, "count", ()), turn.index)

    def _add_domain_leaf(self, key: str, leaf: Any, turn: int) -> bool:
        """Retail's and telecom's leaves (v4): a data amount (``"data_used_gb": 15.1`` is
        "15.1 GB") and a money amount, which is kept whatever its length but becomes a span
        only where written as one ("$4.00" is ``"charge": "4.0"``). True when the leaf is
        fully handled here."""
        number = _numeric(leaf)
        if number is None:
            return False
        name = key.lower()
        # first: a price per GB ("data_refueling_price_per_gb": 2.0) is money, no data
        if _MONEY_KEY.search(name):
            text, forms = _number_forms(number)
            self._add(Value(text, "number", forms), turn, calculator=True)
            return True
        if name.endswith("_gb"):
            text, forms = _number_forms(number)
            units = tuple(f"{form}{sep}GB" for form in forms[:2] for sep in (" ", ""))
            # The record shows the amount as its field ("data_used_gb": 8.7), no unit: that
            # field, as written, is a form too, so the record carries the value it introduced
            raw = leaf if isinstance(leaf, str) else json.dumps(leaf)
            field = re.search(rf'"{re.escape(key)}":\s*"?{re.escape(raw)}"?(?![\w.])',
                              self.turns[turn].content)
            self._add(Value(f"{text} GB", "data", units + ((field.group(),) if field else ())),
                      turn)
            return False  # the bare number stays a value too
        return False

    def _add_free_text(self, text: str, turn: int) -> list[str]:
        keys = []
        if self.applies("domain_vocabulary"):
            # "555-123-2002", "#W8665881": a phone number and an order id a user types are
            # one value each, as the tool results write them (not the numbers inside them);
            # in the medical domains a patient id "PS-84201" or a triage level "ESI-3"
            for m in _DOMAIN_TOKENS.get(self.domain, _DOMAIN_TOKEN).finditer(text):
                keys.append(self._add(make_value(m.group()), turn))
        for m in _FREE_TOKEN.finditer(text):
            if _ORDINAL.fullmatch(m.group()):
                continue  # "May 20th": part of a date in words, not a value of its own
            if _bounded(text, m.start(), m.end(), m.group()):
                keys.append(self._add(make_value(m.group(), from_free_text=True), turn))
        if self.rules.normalised:
            # "May 20th", "11 AM", "two passengers": what a user writes in words
            for mention in mentions(text, self.year):
                if mention.kind != "number":
                    keys.append(self._add(value_of(mention), turn))
        return [k for k in keys if k]


#: Keys of money amounts in retail's and telecom's records (price, charge, total_due, ...).
_MONEY_KEY = re.compile(r"(?:^|_)(?:price|amount|total|balance|charge|refund|fee|cost|due|"
                        r"credit)(?:_|$)")
#: A phone number (telecom) and an order id (retail) in free text, as one token each.
_DOMAIN_TOKEN = re.compile(r"(?<![\w-])(?:\d{3}-\d{3}-\d{4}|#W\d{7})(?![\w-])")
#: A record id or a triage level in the medical domains (tau2's medical_triage, and the runs
#: named medical): upper-case letters, a hyphen, then upper-case letters and digits in one or
#: more hyphenated parts holding a digit ("PT-20451", "PC-20160314-ECW", "ESI-3"); a phone
#: number as in telecom.
_MEDICAL_TOKEN = re.compile(r"(?<![\w-])(?:\d{3}-\d{3}-\d{4}|[A-Z]{1,4}-(?=[A-Z0-9-]*\d)"
                            r"[A-Z0-9]+(?:-[A-Z0-9]+)*)(?![\w-])")
#: The free-text tokens of each domain whose vocabulary has its own (others: _DOMAIN_TOKEN).
_DOMAIN_TOKENS = {"medical": _MEDICAL_TOKEN, "medical_triage": _MEDICAL_TOKEN}


def _numeric(leaf: Any) -> Decimal | None:
    """A JSON leaf's number: a number, or a string that is one ("4.0")."""
    if isinstance(leaf, bool) or leaf is None:
        return None
    if isinstance(leaf, str) and not re.fullmatch(r"-?\d+(?:\.\d+)?", leaf.strip()):
        return None
    try:
        n = Decimal(str(leaf).strip())
    except InvalidOperation:
        return None
    return n if n.is_finite() and n.adjusted() < 12 else None


#: Where a JSON tool result states a count: a passengers list, a total of bags.
_COUNT_FIELD = re.compile(r'"(passengers|total_baggages)":\s*(\[|\d+)')


def _json_count_mentions(text: str, data: Any) -> list[Mention]:
    """The counts a tool result states: the length of each ``passengers`` list (quoted at
    the key) and each ``total_baggages`` number (quoted at the number)."""
    lengths = iter(_passenger_list_lengths(data))
    out: list[Mention] = []
    for m in _COUNT_FIELD.finditer(text):
        if m.group(1) == "passengers":
            if m.group(2) != "[" or (n := next(lengths, None)) is None:
                continue
            out.append(Mention(m.start(1), m.end(1), "count", count_key(n, "passengers")))
        elif m.group(2).isdigit() and len(m.group(2)) <= 9:  # a count, not a 5,000-digit number
            out.append(Mention(m.start(2), m.end(2), "count",
                               count_key(int(m.group(2)), "baggages")))
    return out


def _passenger_list_lengths(data: Any) -> list[int]:
    """Lengths of the ``passengers`` lists, in document order (the order of the text)."""
    out: list[int] = []
    if isinstance(data, dict):
        for k, v in data.items():
            if k == "passengers" and isinstance(v, list):
                out.append(len(v))
            if isinstance(v, (dict, list)):
                out += _passenger_list_lengths(v)
    elif isinstance(data, list):
        for v in data:
            out += _passenger_list_lengths(v)
    return out


#: Keys whose values name a record a tool result describes.
_RECORD_KEYS = ("reservation_id", "flight_number", "payment_id")


#: Keys whose values name a record in retail and telecom (v4).
_DOMAIN_RECORD_KEYS = ("order_id", "item_id", "line_id", "plan_id", "payment_method_id")


def _record_ids(data: Any, record_keys: tuple[str, ...] = _RECORD_KEYS) -> set[str]:
    """Reservation ids, flight numbers and payment methods in a tool result (a profile's
    ``reservations`` list names reservations, its ``payment_methods`` keys payment methods)."""
    out: set[str] = set()
    if isinstance(data, dict):
        for k, v in data.items():
            if k in record_keys and isinstance(v, str):
                out.add(v.strip())
            elif k == "reservations" and isinstance(v, list):
                out |= {x.strip() for x in v if isinstance(x, str)}
            elif k == "payment_methods" and isinstance(v, dict):
                out |= {x.strip() for x in v}
            if isinstance(v, (dict, list)):
                out |= _record_ids(v, record_keys)
    elif isinstance(data, list):
        for v in data:
            out |= _record_ids(v, record_keys)
    return out
