"""Record claims (rules ``lineage-v4``): what an answer states of a retail order or a telecom
line against the record a tool returned.

In tau2-bench's retail and telecom runs the agent reads records (an order with its status,
items and prices; a line with its status and data; a plan with its data limit) and restates
them. A restatement that the record contradicts is exactly decidable when the sentence says
which field it states and which record it is about:

* retail (``order_claims``): an order's status ("Order #W4284542 is currently pending",
  "Status: delivered") against the order's ``status`` (its first words: "pending (item
  modified)" is pending); an item's price ("item 9013366374, priced at $219.88", "(item
  2492465580) is $201.95") against the ``price`` of that item id in the latest record
  listing it (an order's items, a product's variants);
* telecom (``line_claims``): a line's status ("your line is suspended", "Status: Active")
  against the line's ``status``; the data used ("you have used 15.1 GB") and the data limit
  ("a data limit of 15 GB", "your 5GB limit") against ``data_used_gb`` and ``data_limit_gb``
  of the latest record giving them.

The record is the one the sentence names (an order id, an item id, a line id or its phone
number, the latest before the claim), else the one the answer named last before it (a
listing's "Order: #W2417020" above "- Status: pending"), else the latest one retrieved. A
sentence with a conditional, a plan or a question before the claim (if, once, after, will,
would, when, until, whether, could, might, unless, can, a question mark) is a hypothesis
(``hypothetical-claim``): "Once #W1845024 is delivered, you can return it". The span is the
stated value; the graph holds the contradicted record (quoting the field's value), its call
and the call's sources.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from mtcabench.lineage._claims import _sentence_at
from mtcabench.lineage._tracing import Covered, ProposedSpan, Tracer
from mtcabench.lineage._values import Value
from mtcabench.model import DependencyType, Edge, Evidence, Role, TargetSpan

#: A word before the claim, in its sentence, that makes it a hypothesis, a plan or a rule.
_HYPOTHETICAL = re.compile(
    r"(?i)\b(?:if|once|after|will|would|when|until|whether|could|might|unless|can|should|"
    r"as soon as)\b")

_ORDER_STATUS = r"pending|processed|delivered|cancell?ed|canceled|return requested|exchange requested"
_ORDER_ID = r"#?W\d{7}"
#: "Status: delivered", "order status is pending", "- **Status:** Pending".
_STATUS_FIELD = r"(?i)\bstatus\b(?:\s+is)?\**\s*[:\-–—]?\s*\**\s*[\"“]?({})\b"
#: "Order #W4284542 is currently pending", "this order is still pending".
_ORDER_IS = re.compile(
    rf"(?i)(?:\border\b(?:\s+\(?{_ORDER_ID}\)?)?|{_ORDER_ID})\s+(?:is|remains)\s+"
    rf"(?:currently\s+|still\s+|now\s+|already\s+)?(?:in\s+)?[\"“]?({_ORDER_STATUS})\b")
_ORDER_STATUS_FIELD = re.compile(_STATUS_FIELD.format(_ORDER_STATUS))
#: An item's price right after the item id in its clause.
_ITEM_PRICE = re.compile(
    r"(?i)(?:priced at|price(?:\s+is)?\s*[:\-–—]?|costs?|is|[—–])\s*\$\s?"
    r"(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?![\d,]*\.?\d)")
_ITEM_ID = re.compile(r"(?<!\d)\d{10}(?!\d)")
#: Words between an item id and an amount that make the amount something else than its price
#: ("item 2757705742 for the IPX4 earbud priced at $232.49" prices the other item).
_NOT_PRICE = re.compile(
    r"(?i)\b(?:difference|refund|refunded|total|balance|charge|charged|pay|paid|credit|"
    r"remaining|save|saving|cheaper|more|less|extra|budget|limit|under|over|original|old|"
    r"current|new|from|was|for|to|with|vs|versus|and|or)\b|[.;!?\n]")

_LINE_STATUS = r"active|suspended"
_LINE_ID = r"L\d{4,}"
_LINE_STATUS_FIELD = re.compile(_STATUS_FIELD.format(_LINE_STATUS))
#: "your line is suspended", "Line L1002 (555-123-2002) is currently Active".
_LINE_IS = re.compile(
    rf"(?i)\bline\b(?:\s+{_LINE_ID})?(?:\s+\([^)]{{0,30}}\))?\s+is\s+"
    rf"(?:currently\s+|still\s+|now\s+)?({_LINE_STATUS})\b")
_GB = r"(\d+(?:\.\d+)?)\s?GB\b"
#: "you have used 15.1 GB", "data usage: 3.2 GB", "usage is 8.7GB".
_DATA_USED = re.compile(rf"(?i)\b(?:used|usage(?:\s+is|\s+of)?\s*:?)\s+(?:about\s+|only\s+)?{_GB}")
#: "a data limit of 15 GB", "limit: 5GB", "your 15GB data limit", "15 GB plan limit".
_DATA_LIMIT = re.compile(
    rf"(?i)\blimit(?:\s+is|\s+of)?\s*:?\s+{_GB}|{_GB}\s+(?:monthly\s+|data\s+|plan\s+)*limit\b")
#: Where a sentence or a clause ends; also a line break written as ``\n`` (agents that write
#: their turns as JSON objects, ``{"message": "...\n- Status: pending"}``).
_SENTENCE_END = re.compile(r"[.!?\n](?!\d)|\\n")
_CLAUSE_END = re.compile(r"[.!?;\n](?!\d)|\\n")
_PHONE = re.compile(r"\(?\d{3}\)?[-. ]?\d{3}-\d{4}")


@dataclass(frozen=True)
class _Claim:
    start: int
    end: int
    field: str  # the record's field the claim states
    stated: str  # as the answer states it, canonical
    kind: str  # the value kind of the span (order-status, item-price, ...)


@dataclass(frozen=True)
class _Record:
    turn: int  # the tool turn that returned it
    rid: str  # its id (order, item, line, plan)
    data: dict


def order_spans(tracer: Tracer, c: int, covered: Covered) -> list[ProposedSpan]:
    """Contradicted order statuses and item prices in answer turn ``c`` (retail)."""
    content = tracer.turns[c].content
    orders = _records(tracer, c, "order_id", lambda d: isinstance(d.get("status"), str))
    items = _records(tracer, c, "item_id", lambda d: _number(d.get("price")) is not None)
    out: list[ProposedSpan] = []
    claims = [(m, "status", "order-status") for p in (_ORDER_STATUS_FIELD, _ORDER_IS)
              for m in p.finditer(content)]
    for m, field, kind in sorted(claims, key=lambda x: x[0].start(1)):
        if not orders or _hypothesis(tracer, content, m.start(1)):
            continue
        history = _named(tracer, content, m.start(1), orders, _ORDER_ID,
                         lambda s: "#" + s.lstrip("#"))
        if history is None:
            continue
        record = history[-1]
        stated = m.group(1).lower().replace("canceled", "cancelled")
        if _had(history, "status", lambda v, s=stated: str(v).lower().split(" (")[0] == s):
            continue
        claim = _Claim(m.start(1), m.end(1), field, stated, kind)
        out += _decided(tracer, c, covered, claim, record, str(record.data["status"]))
    for m in _ITEM_ID.finditer(content):
        history = items.get(m.group())
        if history is None:
            continue
        record = history[-1]
        rest = _clause_after(content, m.end())
        p = _ITEM_PRICE.search(rest)
        if p is None or _NOT_PRICE.search(rest[:p.start()]) or _ITEM_ID.search(rest[:p.start()]):
            continue
        start = m.end() + p.start(1)
        if _hypothesis(tracer, content, start):
            continue
        stated = _number(p.group(1).replace(",", ""))
        if stated is None or _had(history, "price", lambda v, s=stated: _number(v) == s):
            continue
        claim = _Claim(start, m.end() + p.end(1), "price", str(stated), "item-price")
        out += _decided(tracer, c, covered, claim, record, record.data["price"])
    return out


def line_spans(tracer: Tracer, c: int, covered: Covered) -> list[ProposedSpan]:
    """Contradicted line statuses, data used and data limits in answer turn ``c`` (telecom)."""
    content = tracer.turns[c].content
    lines = _records(tracer, c, "line_id", lambda d: True)
    out: list[ProposedSpan] = []
    found: list[tuple[re.Match, str, str]] = [
        (m, f, k) for p, f, k in ((_LINE_STATUS_FIELD, "status", "line-status"),
                                  (_LINE_IS, "status", "line-status"),
                                  (_DATA_USED, "data_used_gb", "data-used"),
                                  (_DATA_LIMIT, "data_limit_gb", "data-limit"))
        for m in p.finditer(content)]
    for m, field, kind in sorted(found, key=lambda x: x[0].start(x[0].lastindex or 1)):
        group = m.lastindex or 1
        start, end = m.span(group)
        if _hypothesis(tracer, content, start):
            continue
        with_field = {rid: [r for r in rs if r.data.get(field) is not None]
                      for rid, rs in lines.items()}
        with_field = {rid: rs for rid, rs in with_field.items() if rs}
        if not with_field:
            continue
        history = _named(tracer, content, start, with_field, _LINE_ID, lambda s: s,
                         phones={str(rs[-1].data.get("phone_number")): rid
                                 for rid, rs in with_field.items()})
        if history is None:
            continue
        record = history[-1]
        actual = record.data[field]
        if field == "status":
            stated = m.group(group).lower()
            if _had(history, field, lambda v, s=stated: str(v).lower() == s):
                continue
        else:
            stated_n = _number(m.group(group))
            if stated_n is None or _had(history, field, lambda v, s=stated_n: _number(v) == s):
                continue
            stated = str(stated_n)
        out += _decided(tracer, c, covered, _Claim(start, end, field, stated, kind), record,
                        actual)
    return out


# ---------------------------------------------------------------- records and their claims
def _records(tracer: Tracer, c: int, id_key: str, keep: Callable[[dict], bool]
             ) -> dict[str, list[_Record]]:
    """id -> the records before turn ``c`` (JSON objects of tool results, at any depth)
    holding ``id_key`` and the fields ``keep`` asks for, oldest first."""
    out: dict[str, list[_Record]] = {}
    for t in range(c):
        if tracer.turns[t].role is not Role.TOOL:
            continue
        is_json, data = tracer.tool_data(t)
        if not is_json:
            continue
        for obj in _objects(data):
            rid = obj.get(id_key)
            if isinstance(rid, str) and keep(obj):
                out.setdefault(rid.strip(), []).append(_Record(t, rid.strip(), obj))
    return out


def _had(records: list[_Record], field: str, same: Callable[[Any], bool]) -> bool:
    """Whether any record the agent read gave the stated value: a status the order had
    before the agent changed it ("delivered", then "return requested") is no contradiction."""
    return any(same(r.data.get(field)) for r in records)


def _objects(data: Any) -> Iterator[dict]:
    if isinstance(data, dict):
        yield data
        for v in data.values():
            yield from _objects(v)
    elif isinstance(data, list):
        for v in data:
            yield from _objects(v)


def _named(tracer: Tracer, text: str, pos: int, records: dict[str, list[_Record]],
           id_pattern: str, canonical: Callable[[str], str],
           phones: dict[str, str] | None = None) -> list[_Record] | None:
    """The records of the one record a claim at ``pos`` is about: the latest one its sentence
    names before it (by id, or a line by its phone number); else the one record the answer
    names before it; else the one record retrieved. Several and none named: ambiguous
    (counted, None): "Updated order #W6750959 ... from order #W3407479. The order remains
    pending." does not say which."""
    def named_in(lo: int) -> list[tuple[int, str]]:
        found = [(m.start(), canonical(m.group()))
                 for m in re.finditer(id_pattern, text[lo:pos]) if canonical(m.group()) in records]
        for m in _PHONE.finditer(text, lo, pos):
            digits = re.sub(r"\D", "", m.group())
            found += [(m.start(), rid) for phone, rid in (phones or {}).items()
                      if re.sub(r"\D", "", phone) == digits]
        return found

    in_sentence = named_in(_sentence_start(text, pos))
    if in_sentence:
        return records[max(in_sentence)[1]]
    before = {rid for _, rid in named_in(0)}
    if len(before) == 1:
        return records[before.pop()]
    if not before and len(records) == 1:
        return next(iter(records.values()))
    tracer.summary.skipped["ambiguous-contradiction"] += 1
    return None


def _sentence_start(text: str, pos: int) -> int:
    return max((m.end() for m in _SENTENCE_END.finditer(text, 0, pos)), default=0)


def _clause_after(text: str, pos: int) -> str:
    """The text after ``pos`` up to the end of its clause (a sentence, a line)."""
    m = _CLAUSE_END.search(text, pos)
    return text[pos:m.start() if m else len(text)]


def _hypothesis(tracer: Tracer, text: str, pos: int) -> bool:
    """Whether the sentence of a claim at ``pos`` makes it a hypothesis (counted)."""
    sentence = _sentence_at(text, pos)
    if _HYPOTHETICAL.search(text, _sentence_start(text, pos), pos) or "?" in sentence:
        tracer.summary.skipped["hypothetical-claim"] += 1
        return True
    return False


def _number(x: Any) -> Decimal | None:
    if isinstance(x, bool) or x is None:
        return None
    try:
        n = Decimal(str(x).strip())
    except InvalidOperation:
        return None
    return n.normalize() if n.is_finite() else None


def _quote(tracer: Tracer, record: _Record, field: str, actual: Any) -> tuple[int, int] | None:
    """Offsets of the record's field value in its tool turn's text: the first ``"field":``
    after the record's id whose value is the record's."""
    text = tracer.turns[record.turn].text
    at = text.find(f'"{record.rid}"')
    pattern = re.compile(rf'"{re.escape(field)}":\s*"?([^",}}\]]*)"?')
    for m in pattern.finditer(text, max(at, 0)):
        if m.group(1) == str(actual) or _number(m.group(1)) == _number(actual) is not None:
            return m.span(1)
        break
    return None


def _decided(tracer: Tracer, c: int, covered: Covered, claim: _Claim, record: _Record,
             actual: Any) -> list[ProposedSpan]:
    """The hallucination span of a contradicted claim, with its graph; [] when it overlaps
    a span already proposed or the record's value cannot be quoted exactly."""
    if covered.overlaps(claim.start, claim.end):
        return []
    pos = _quote(tracer, record, claim.field, actual)
    if pos is None:  # written otherwise in the raw text: nothing exact to quote
        return []
    edges, unsourced = tracer.trace(c, [(record.turn, "")])
    if edges is None:  # larger than MAX_GRAPH_TURNS (counted by trace)
        return []
    tracer.count_unsourced(unsourced)
    text = tracer.turns[record.turn].text
    edges[(c, record.turn)] = Edge(child=c, parent=record.turn, evidence=Evidence(
        quote=text[pos[0]:pos[1]], start=pos[0], end=pos[1]))
    content = tracer.turns[c].content
    span = TargetSpan(turn=c, start=claim.start, end=claim.end,
                      text=content[claim.start:claim.end])
    note = (f"record claim: the answer states {claim.field} {span.text!r} of {record.rid} "
            f"where turn {record.turn} gives {claim.field} = {text[pos[0]:pos[1]]!r}")
    covered.add(claim.start, claim.end)
    value = Value(claim.stated, claim.kind, (span.text,))
    return [ProposedSpan(span, value, tracer.graph(c, edges), DependencyType.HALLUCINATION,
                         note)]
