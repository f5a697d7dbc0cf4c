"""Amount claims (rules ``lineage-v5``): a refund or charge the agent reports that the payment
its own call recorded contradicts.

A call that changes what a record was paid writes the change into the record's
``payment_history``: tau2's and TauBench's ``update_reservation_flights`` appends the fare
difference (``-396`` is a refund of $396), ``update_reservation_baggages`` the bags' fee,
``cancel_reservation`` a negative entry per payment, ``book_reservation`` the new
reservation's payments; retail's ``cancel_pending_order`` and ``modify_pending_order_*``
append ``{"transaction_type": "refund" | "payment", "amount": ...}``. The answer that reports
the call states the amount ("a refund of $198 has been credited back"), and whether that
amount is the one recorded is exactly decidable:

1. the answer turn ``c`` follows successful results of such calls since the agent last spoke
   (its *report*), all on one record; calls on several records (several reservations
   changed at once), or a booking among several calls, are not judged
   (``ambiguous-contradiction``), and a turn that itself issues a call is not;
2. the record's earlier ``payment_history`` (the latest tool result showing the same
   reservation or order before the first of those calls) is a prefix of the last result's:
   the entries after it are what the calls added (a booking adds all of its own). Without an
   earlier record, when it is no prefix, or when the calls added nothing (the amount may
   report an earlier call), nothing is decided;
3. a claim is a sentence (or line) of the answer with one dollar amount that is no rate
   ("$50 per passenger", "each") and the words of one direction: a refund ("refund",
   "refunded", "credited", "reimbursed") or a charge ("charged", "billed", "additional cost",
   "extra charge"); after a booking also a total ("Total price: $255"). A question, a
   condition or plan (if, would, could, can, once, ...), a negation ("no additional charge")
   or a list of conditions makes it none, and another record named before it in the answer
   (or in its sentence) leaves it undecided;
4. the calls' net change is the sum of the added entries (a retail refund counts negative),
   in cents. A refund claim is contradicted unless its amount is, as a refund, the net
   change, one added entry or the sum of the added refund entries; a charge or total claim
   likewise with the charges ("$50 for the bag has been charged" after a change refunded
   $374 and the bag was charged $50 is no hallucination). An amount that is an entry of the
   record from before these calls, or the record's net change since the conversation first
   showed it ("Net refund: $114" after a charge of $396 and a refund of $510), restates
   earlier changes and is not decided; "$0", and a new fare's or order's total after a
   change ("the total price of your updated order is now $1288.65"), are no payment.

The span is the stated amount; its graph is the result whose entries contradict it (quoting
the last added entry's amount), its call and the call's sources, and, where an earlier turn
shows the stated number, the turn the answer read it from (the agent's own quote, a
calculator's answer, the user), traced like a copied value: what primed the claim. The rationale writes the
arithmetic out: the added entries, their sum, and the stated amount against it.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from mtcabench.lineage._claims import not_a_claim
from mtcabench.lineage._tracing import ProposedSpan, Tracer
from mtcabench.lineage._values import Value
from mtcabench.model import DependencyType, Edge, Evidence, Role, TargetSpan

#: The calls that write a record's payments, per domain, and the key naming their record.
PAYMENT_TOOLS: dict[str, tuple[str, frozenset[str], frozenset[str]]] = {
    "airline": ("reservation_id",
                frozenset({"update_reservation_flights", "update_reservation_baggages",
                           "update_reservation_passengers", "cancel_reservation",
                           "book_reservation"}),
                frozenset({"book_reservation"})),
    "retail": ("order_id",
               frozenset({"cancel_pending_order", "modify_pending_order_items",
                          "modify_pending_order_payment"}),
               frozenset()),
}

_AMOUNT = re.compile(r"\$\s?(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?![\d,]*\d)")
#: An amount that is a rate, not what was paid: "$50 per passenger", "$50 each", "$50/bag".
_RATE = re.compile(r"(?i)[*\s]*(?:per\b|each\b|a (?:bag|passenger|person)\b|/)")
_REFUND = re.compile(r"(?i)\b(?:refund(?:s|ed)?|credited|reimburs\w*|paid back)\b")
_CHARGE = re.compile(r"(?i)\b(?:charged?|billed|(?:additional|extra) (?:cost|amount|charge|"
                     r"fee|payment))\b")
_TOTAL = re.compile(r"(?i)\btotal\b")
#: A fare's or an order's total ("The total price of your updated order is now $1288.65").
_FARE_TOTAL = re.compile(r"(?i)\btotal\s+(?:price|fare)\b|\b(?:price|total) of (?:your|the) "
                         r"(?:updated |new )?(?:order|reservation|flights?|itinerary)\b")
#: Words that make a sentence no report of what was done.
_NOT_DONE = re.compile(r"(?i)\b(?:if|unless|would|could|can|may|might|should|once|when|"
                       r"whether|option|estimated?|approximately|no|not|without|never|"
                       r"instead of)\b|n['’]t\b")
#: A claim's sentence or line.
_PIECE = re.compile(r"[^\n]+?(?:[.!?](?=\s|$)|$)", re.M)
_ERROR = re.compile(r"(?i)\s*error\b")


def amount_spans(tracer: Tracer, c: int) -> list[ProposedSpan]:
    """The amounts answer turn ``c`` reports as a refund, charge or total that the payment
    its report's call recorded contradicts."""
    event = _payment_event(tracer, c)
    if event is None:
        return []
    content = tracer.turns[c].content
    out: list[ProposedSpan] = []
    for m in _PIECE.finditer(content):
        claim = _claim(tracer, c, content, m.start(), m.end(), event)
        if claim is None:
            continue
        start, end, amount, direction = claim
        made = _decide(tracer, c, start, end, amount, direction, event)
        if made is not None:
            out.append(made)
    return out


class _Event:
    """One call's change of a record's payments: the result turn, the tool, the record id,
    the added entries ``(payment method, signed amount, quote start, quote end)``."""

    def __init__(self, turn: int, tool: str, record: str, added: list[tuple[str, Decimal]],
                 quote: tuple[int, int], booking: bool, earlier: list[tuple[str, Decimal]],
                 since_first: Decimal | None):
        self.turn, self.tool, self.record, self.added = turn, tool, record, added
        self.quote, self.booking = quote, booking
        #: the record's entries before these calls, and its net change since the conversation
        #: first showed it (what a report may restate: "Net refund: $114" after two changes)
        self.earlier, self.since_first = earlier, since_first

    @property
    def net(self) -> Decimal:
        return sum((a for _, a in self.added), Decimal(0))


def _payment_event(tracer: Tracer, c: int) -> _Event | None:
    domain = tracer.conv.domain or ""
    if domain not in PAYMENT_TOOLS or tracer.turns[c].tool_calls:
        return None
    key, tools, bookings = PAYMENT_TOOLS[domain]
    last_said = max((t for t in range(c) if tracer.turns[t].role is Role.ASSISTANT
                     and tracer.turns[t].content.strip()), default=-1)
    issued = {call.id: call.name for turn in tracer.turns[:c] for call in turn.tool_calls}
    results = []
    for t in range(last_said + 1, c):
        turn = tracer.turns[t]
        name = issued.get(turn.tool_call_id or "")
        if turn.role is Role.TOOL and name in tools and not _ERROR.match(turn.content):
            is_json, data = tracer.tool_data(t)
            if is_json and isinstance(data, dict) and isinstance(data.get("payment_history"),
                                                                 list):
                results.append((t, name, data))
    if not results:
        return None
    records = {data.get(key) for _, _, data in results}
    if len(records) > 1 or (len(results) > 1 and any(n in bookings for _, n, _ in results)):
        tracer.summary.skipped["ambiguous-contradiction"] += 1
        return None  # several records changed at once: which amount is whose is open
    first = results[0][0]
    t, name, data = results[-1]
    record = data.get(key)
    after = _entries(data["payment_history"])
    if not isinstance(record, str) or after is None:
        return None
    before: list[tuple[str, Decimal]] | None = [] if name in bookings else None
    shown = []  # the record's payments as each earlier result showed them, latest first
    if name not in bookings:
        for p in range(first - 1, -1, -1):
            if tracer.turns[p].role is not Role.TOOL:
                continue
            is_json, earlier = tracer.tool_data(p)
            if (is_json and isinstance(earlier, dict) and earlier.get(key) == record
                    and isinstance(earlier.get("payment_history"), list)):
                shown.append(_entries(earlier["payment_history"]))
        before = shown[0] if shown else None
    if before is None or after[:len(before)] != before:
        return None  # no earlier record to tell what the calls added
    added = after[len(before):]
    if not added:
        return None  # the calls paid nothing: a stated amount may report an earlier call
    tool = " and ".join(dict.fromkeys(n for _, n, _ in results))
    quote = _last_amount_quote(tracer.turns[t].text, len(data["payment_history"]))
    if quote is None:
        return None
    since_first = (sum((a for _, a in after), Decimal(0)) - sum((a for _, a in shown[-1]),
                                                                    Decimal(0))
                   if shown and shown[-1] is not None else None)
    return _Event(t, tool, record, added, quote, name in bookings, before, since_first)


def _entries(history: list[Any]) -> list[tuple[str, Decimal]] | None:
    """``(payment method, signed amount in cents)`` of each entry; None when one is not an
    entry (no numeric amount)."""
    out = []
    for e in history:
        if not isinstance(e, dict) or isinstance(e.get("amount"), bool) \
                or not isinstance(e.get("amount"), (int, float)):
            return None
        amount = Decimal(str(e["amount"])).quantize(Decimal("0.01"))
        if e.get("transaction_type") == "refund":
            amount = -abs(amount)
        out.append((str(e.get("payment_id") or e.get("payment_method_id") or ""), amount))
    return out


def _last_amount_quote(text: str, entries: int) -> tuple[int, int] | None:
    """Where the last payment entry's ``"amount": ...`` stands in the result's text."""
    at = text.rfind('"payment_history"')
    found = list(re.finditer(r'"amount":\s*-?[\d.]+(?:[eE]-?\d+)?', text[at:])) if at >= 0 else []
    if len(found) < entries or not entries:
        return None
    m = found[entries - 1]
    return at + m.start(), at + m.end()


def _claim(tracer: Tracer, c: int, text: str, lo: int, hi: int, event: _Event
           ) -> tuple[int, int, Decimal, str] | None:
    """``(start, end, amount, direction)`` of the one reported amount of text[lo:hi]."""
    piece = text[lo:hi]
    amounts = [m for m in _AMOUNT.finditer(piece) if not _RATE.match(piece, m.end())]
    refund, charge = _REFUND.search(piece), _CHARGE.search(piece)
    total = event.booking and _TOTAL.search(piece)
    directions = {d for d, found in (("refund", refund), ("charge", charge or total)) if found}
    if len(directions) != 1 or not amounts:
        return None
    if not event.booking and _FARE_TOTAL.search(piece):
        return None  # the new fare or order total is a price, not what was paid
    if Decimal(amounts[0].group(1).replace(",", "")) == 0:
        return None  # "$0": nothing stated as paid
    if len(amounts) > 1 or "?" in piece or _NOT_DONE.search(piece) \
            or (tracer.rules.claim_context and not_a_claim(text, lo + amounts[0].start())):
        tracer.summary.skipped["hypothetical-claim"] += 1
        return None
    if _names_other_record(tracer, c, lo + amounts[0].start(), event):
        tracer.summary.skipped["ambiguous-contradiction"] += 1
        return None
    m = amounts[0]
    return lo + m.start(), lo + m.end(), Decimal(m.group(1).replace(",", "")), directions.pop()


def _names_other_record(tracer: Tracer, c: int, pos: int, event: _Event) -> bool:
    """Whether answer ``c`` names, before ``pos`` or in the claim's own sentence, a record
    other than the call's: a report of several reservations ("$846 (for KC18K6) + $237 (for
    H8Q05L) ... charged a total of $1,083"), where the amount may belong to another, or to
    all of them."""
    key = PAYMENT_TOOLS[tracer.conv.domain or ""][0]
    records = set()
    for t in range(c):
        if tracer.turns[t].role is Role.TOOL:
            is_json, data = tracer.tool_data(t)
            if is_json and isinstance(data, dict) and isinstance(data.get(key), str):
                records.add(data[key].lstrip("#"))
    if len(records) < 2:
        return False
    text = tracer.turns[c].content
    end = _PIECE.search(text, pos)
    limit = end.end() if end else len(text)
    named = [(m.start(), r) for r in records
             for m in re.finditer(rf"(?<!\w){re.escape(r)}(?!\w)", text[:limit])]
    return bool({r for _, r in named} - {event.record.lstrip("#")})


def _decide(tracer: Tracer, c: int, start: int, end: int, amount: Decimal, direction: str,
            event: _Event) -> ProposedSpan | None:
    if amount in _recorded(event, direction):
        return None  # the amount the call recorded, as a whole or one entry of it
    sign = -1 if direction == "refund" else 1
    if amount in {sign * a for _, a in event.earlier} or (
            event.since_first is not None and amount == sign * event.since_first):
        # an earlier call's amount, or the net of all the changes: a report may restate them
        tracer.summary.skipped["ambiguous-contradiction"] += 1
        return None
    # where the answer read the number it states (the agent's quote, a calculator's answer),
    # if an earlier turn shows it: what primed the claim, traced like a copied value
    read = next((key for s, e, key in tracer.content_matches(c) if s < end and start < e
                 and tracer.read_from(c, key) not in (None, event.turn)), None)
    seeds = [(event.turn, "")] + ([(c, read)] if read is not None else [])
    edges, unsourced = tracer.trace(c, seeds)
    if edges is None:  # larger than MAX_GRAPH_TURNS (counted by trace)
        return None
    tracer.count_unsourced(unsourced)
    q0, q1 = event.quote
    text = tracer.turns[event.turn].text
    edges[(c, event.turn)] = Edge(child=c, parent=event.turn,
                                  evidence=Evidence(quote=text[q0:q1], start=q0, end=q1))
    content = tracer.turns[c].content
    span = TargetSpan(turn=c, start=start, end=end, text=content[start:end])
    note = (f"amount claim: the answer states a {direction} of ${_money(amount)} where the "
            f"{event.tool} result (turn {event.turn}) for {event.record} records "
            f"{_arithmetic(event)}; {_verdict(direction, amount, event)}"
            + (f"; primed by turn {tracer.read_from(c, read)}" if read is not None else ""))
    value = Value(_money(amount), "amount-claim", (span.text,))
    return ProposedSpan(span, value, tracer.graph(c, edges), DependencyType.HALLUCINATION, note)


def _recorded(event: _Event, direction: str) -> set[Decimal]:
    """The amounts of ``direction`` the calls recorded: the net change where it goes that
    way, each added entry that does, and the sum of those entries ("$50 for the bag has been
    charged" after a change refunded and the bag charged)."""
    sign = -1 if direction == "refund" else 1
    entries = [sign * a for _, a in event.added if sign * a > 0]
    out = set(entries) | ({sum(entries, Decimal(0))} if entries else set())
    return out | ({sign * event.net} if sign * event.net > 0 else set())


def _money(x: Decimal) -> str:
    return f"{x:,.2f}".removesuffix(".00")


def _arithmetic(event: _Event) -> str:
    if not event.added:
        return "no new payment entry (net 0)"
    terms = " + ".join(f"({_money(a)} {pid})" if a >= 0 else f"(-{_money(-a)} {pid})"
                       for pid, a in event.added)
    net = event.net
    kind = "a refund of $" + _money(-net) if net < 0 else (
        "a charge of $" + _money(net) if net > 0 else "no change")
    return f"payment_history entries {terms} = {'-' if net < 0 else ''}{_money(abs(net))}: {kind}"


def _verdict(direction: str, amount: Decimal, event: _Event) -> str:
    recorded = sorted(_recorded(event, direction))
    if not recorded:
        return f"no {direction} was recorded: {_money(amount)} ≠ 0"
    tails = [f"{_money(amount)} × {r / amount:.0f} = {_money(r)}" for r in recorded
             if amount and r > amount and (r / amount) == (r / amount).to_integral_value()]
    shown = " nor ".join(f"${_money(r)}" for r in recorded)
    return (f"${_money(amount)} is not {shown}" + (f" ({'; '.join(tails)})" if tails else ""))
