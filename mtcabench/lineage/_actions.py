"""Action claims (rules ``lineage-v4``): an answer saying an action is done that no call did.

An agent acts only through its tools: a reservation is cancelled by a successful
``cancel_reservation`` call, an order's address changed by ``modify_pending_order_address``,
roaming enabled by ``enable_roaming`` (or, in telecom, the user's own ``toggle_roaming``).
So "Your new reservation has been successfully booked" in a turn before which no call of
``book_reservation`` succeeded (none was made, or each one's result was an error) states an
action that did not happen, and this is decidable exactly from the conversation's calls and
results, whatever the agent:

1. the sentence claims the action as done: the agent's first person ("I've cancelled", "I
   cancelled"), a passive perfect ("has been cancelled", "have been successfully updated"),
   "is now booked", or "successfully cancelled", with a verb and an object word of one of the
   domain's actions (``ACTIONS``: an explicit verb -> tool map per domain);
2. it is no plan, offer, question, negation or report: a hypothetical word before it in its
   sentence (if, once, will, can, shall, let me, ...; the record claims' list), a question
   mark, a negation (not, no, never, cannot), a passive whose actor is another ("has been
   cancelled by the airline"), a state found ("has already been cancelled"), or what the
   claim context of the membership rule leaves out (a list of conditions, a reported claim)
   is none (``hypothetical-claim``);
3. no call of the action's tools issued before the answer (by any turn: telecom users call
   tools too) has a result that is not an error; a turn that itself issues such a call is not
   judged (it announces what its call does).

The span is the claim's words ("has been successfully booked"). The graph holds what primed
it: where a call was tried, its error result (quoting the error), the call and the call's
sources; where none was, the latest earlier turn that stated the action as done (a user's
"Your new reservation has been booked"; an agent's earlier claim, traced on through it), else
the latest user turn that asked for it (quoting the request word). Without any of these the
claim is counted (``unsupported-value``), not proposed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mtcabench.lineage._claims import _sentence_at, not_a_claim
from mtcabench.lineage._records import _CLAUSE_END, _HYPOTHETICAL, _sentence_start
from mtcabench.lineage._tracing import Covered, ProposedSpan, Tracer
from mtcabench.lineage._values import Value
from mtcabench.model import DependencyType, Edge, Evidence, Role, TargetSpan


@dataclass(frozen=True)
class Action:
    """One action of a domain: the participles that claim it done, the object words its
    sentence must name, the words of a request for it, and the tools that do it."""

    name: str
    verbs: str
    objects: str
    request: str
    tools: frozenset[str]


_CANCEL = r"cancell?ed|canceled"
_CHANGE = r"updated|modified|changed"
_AIRLINE_UPDATES = frozenset({"update_reservation_flights", "update_reservation_baggages",
                              "update_reservation_passengers"})

#: The verb -> tool map, per domain (tau2-bench's and TauBench's tools). An action's tools
#: are every tool that does it: "you are now booked on HAT266" follows a change of flights
#: as well as a booking.
ACTIONS: dict[str, tuple[Action, ...]] = {
    "airline": (
        Action("cancel", _CANCEL, r"reservations?|bookings?|trips?", r"cancel",
               frozenset({"cancel_reservation"})),
        Action("book", r"booked", r"reservations?|bookings?|flights?|trips?", r"book",
               frozenset({"book_reservation", "update_reservation_flights"})),
        Action("change", rf"{_CHANGE}|upgraded|downgraded",
               r"reservations?|bookings?|flights?|cabin|class|baggages?|bags?|passengers?|"
               r"itinerary", r"change|modify|update|upgrade|downgrade",
               _AIRLINE_UPDATES | {"book_reservation"}),
        Action("certificate", r"issued|sent|added|credited", r"certificates?|vouchers?",
               r"certificate|voucher|compensat", frozenset({"send_certificate"})),
    ),
    "retail": (
        Action("cancel", _CANCEL, r"orders?", r"cancel", frozenset({"cancel_pending_order"})),
        Action("return", r"processed|initiated|submitted|requested|placed|created",
               r"returns?", r"return", frozenset({"return_delivered_order_items"})),
        Action("exchange", r"processed|initiated|submitted|requested|placed|created|exchanged",
               r"exchanges?|exchanged", r"exchange",
               frozenset({"exchange_delivered_order_items", "modify_pending_order_items"})),
        Action("address", _CHANGE, r"address(?:es)?", r"address",
               frozenset({"modify_pending_order_address", "modify_user_address"})),
        Action("payment", _CHANGE, r"payment method", r"payment",
               frozenset({"modify_pending_order_payment"})),
        Action("items", _CHANGE, r"items?", r"change|modify|update|exchange|switch",
               frozenset({"modify_pending_order_items", "exchange_delivered_order_items"})),
    ),
    "telecom": (
        Action("roaming", r"enabled|activated|turned on", r"roaming", r"roaming",
               frozenset({"enable_roaming", "toggle_roaming"})),
        Action("resume", r"resumed|reactivated|restored", r"lines?|service", r"resum|reactivat",
               frozenset({"resume_line"})),
        Action("data", r"added|refuell?ed|credited", r"data|GB", r"data|refuel",
               frozenset({"refuel_data"})),
        Action("payment request", r"sent|issued|created", r"payment request", r"pay|bill",
               frozenset({"send_payment_request"})),
    ),
}

_ADV = r"(?:(?:now|just|also|successfully|fully|already)\s+)*"
#: The forms that claim an action as done: the agent's first person, a passive perfect, "is
#: now", "successfully".
_DONE = (r"(?i)\b(?:(?:I|we)(?:['’]ve|\s+have)?\s+{adv}({v})"
         r"|(?:has|have)\s+{adv}been\s+{adv}({v})"
         r"|(?:is|are)\s+now\s+({v})"
         r"|successfully\s+({v}))\b")
#: Negation before the claim in its sentence ("No cancellation has been placed").
_NEGATION = re.compile(r"(?i)\b(?:not|no|never|cannot|unable|n['’]t)\b|n['’]t\b")
#: Words of a plan or an offer that the record claims' list does not hold.
_PLAN = re.compile(r"(?i)\b(?:shall|let me|going to|about to|ready to|need to|before)\b")
#: A passive's actor that is not the agent ("cancelled by the airline").
_OTHER_ACTOR = re.compile(r"(?i)\s*by\s+(?!me\b|us\b)")
_ERROR = re.compile(r"(?i)\s*error\b")


def action_spans(tracer: Tracer, c: int, covered: Covered) -> list[ProposedSpan]:
    """Actions claimed as done in answer turn ``c`` that no successful call did."""
    actions = ACTIONS.get(tracer.conv.domain or "", ())
    content = tracer.turns[c].content
    out: list[ProposedSpan] = []
    for action in actions:
        done = re.compile(_DONE.format(adv=_ADV, v=action.verbs))
        for m in done.finditer(content):
            start, end = m.span()
            if covered.overlaps(start, end) or not _claims(tracer, content, m, action):
                continue
            if any(call.name in action.tools for call in tracer.turns[c].tool_calls):
                continue  # announced with the call that does it
            tried = _calls(tracer, c, action)
            if any(not failed for _, failed in tried):
                continue  # a call did it
            made = _hallucination(tracer, c, start, end, action, tried)
            if made is None:
                tracer.summary.skipped["unsupported-value"] += 1
                continue
            out.append(made)
            covered.add(start, end)
    return out


def _claims(tracer: Tracer, text: str, m: re.Match, action: Action) -> bool:
    """Whether match ``m`` claims ``action`` as done (not a plan, an offer, a question, a
    negation, another's act or a state found); a non-claim is counted."""
    sentence = _sentence_at(text, m.start())
    lo = _sentence_start(text, m.start())
    if not _names_object(text, m, lo, action):
        return False  # another action's words ("has been added" of a bag, not a certificate)
    before = text[lo:m.start()]
    passive = not re.match(r"(?i)(?:I|we)\b", m.group())
    hypothesis = (_HYPOTHETICAL.search(before) or _PLAN.search(before) or "?" in sentence
                  or _NEGATION.search(before) or _NEGATION.search(m.group())
                  or (passive and ("already" in m.group().lower()
                                   or _OTHER_ACTOR.match(text, m.end())))
                  or (tracer.rules.claim_context and not_a_claim(text, m.start())))
    if hypothesis:
        tracer.summary.skipped["hypothetical-claim"] += 1
        return False
    return True


#: How far from the claim its object may stand: "I've cancelled your reservation", "Your
#: new reservation has been successfully booked".
_REACH = 48


def _names_object(text: str, m: re.Match, lo: int, action: Action) -> bool:
    """Whether the claim's object is one of the action's: after an active claim ("I've
    cancelled your order"), before a passive one ("your order has been cancelled"), either
    side of "successfully cancelled", within ``_REACH`` characters of its clause. "We've now
    initiated an exchange on this order, we won't be able to process ... a return" claims
    the exchange, not the return."""
    objects = re.compile(rf"(?i)\b(?:{action.objects})\b")
    words = m.group().lower()
    after_end = _CLAUSE_END.search(text, m.end())
    after = text[m.end():min(m.end() + _REACH, after_end.start() if after_end else len(text))]
    before = text[max(lo, m.start() - _REACH):m.start()]
    active = re.match(r"(?:i|we)\b", words) is not None
    passive = not active and not words.startswith("successfully")
    return bool((not passive and objects.search(after))
                or (not active and objects.search(before)))


def _calls(tracer: Tracer, c: int, action: Action) -> list[tuple[int, bool]]:
    """(result turn, whether its result is an error) of every call of the action's tools
    whose result comes before turn ``c``, in order."""
    issued = {call.id: call.name for turn in tracer.turns[:c] for call in turn.tool_calls}
    out = []
    for t in range(c):
        turn = tracer.turns[t]
        if turn.role is Role.TOOL and issued.get(turn.tool_call_id or "") in action.tools:
            out.append((t, bool(_ERROR.match(turn.content))))
    return out


def _primer(tracer: Tracer, c: int, action: Action) -> tuple[int, int, int] | None:
    """(turn, start, end) of the latest earlier turn stating the action as done (a user, or
    the agent's own earlier answer)."""
    done = re.compile(_DONE.format(adv=_ADV, v=action.verbs))
    for t in range(c - 1, -1, -1):
        turn = tracer.turns[t]
        if turn.role not in (Role.USER, Role.ASSISTANT) or not turn.content:
            continue
        for m in done.finditer(turn.content):
            sentence = _sentence_at(turn.content, m.start())
            lo = _sentence_start(turn.content, m.start())
            if (_names_object(turn.content, m, lo, action)
                    and not _NEGATION.search(turn.content[lo:m.start()]) and "?" not in sentence):
                return t, *m.span()
    return None


def _request(tracer: Tracer, c: int, action: Action) -> tuple[int, int, int] | None:
    """(turn, start, end) of the request word in the latest user turn asking for it."""
    for t in range(c - 1, -1, -1):
        turn = tracer.turns[t]
        if turn.role is Role.USER and turn.content:
            m = re.search(rf"(?i)\b(?:{action.request})\w*", turn.content)
            if m and re.search(rf"(?i)\b(?:{action.objects})\b", turn.content):
                return t, *m.span()
    return None


def _hallucination(tracer: Tracer, c: int, start: int, end: int, action: Action,
                   tried: list[tuple[int, bool]]) -> ProposedSpan | None:
    content = tracer.turns[c].content
    if tried:  # every call failed: the latest error is what the claim contradicts
        failed = tried[-1][0]
        edges, unsourced = tracer.trace(c, [(failed, "")])
        if edges is None:  # larger than MAX_GRAPH_TURNS (counted by trace)
            return None
        tracer.count_unsourced(unsourced)
        text = tracer.turns[failed].text
        line = text.split("\n", 1)[0].rstrip()
        edges[(c, failed)] = Edge(child=c, parent=failed,
                                  evidence=Evidence(quote=line, start=0, end=len(line)))
        note = (f"action claim: the answer states {action.name} done where the only calls of "
                f"{', '.join(sorted(action.tools))} failed (turn {failed}: {line[:60]!r})")
    else:
        edges, child, primers = {}, c, []
        while (found := _primer(tracer, child, action)) is not None:
            t, s, e = found
            edges[(child, t)] = Edge(child=child, parent=t, evidence=Evidence(
                quote=tracer.turns[t].text[s:e], start=s, end=e))
            primers.append(t)
            if tracer.turns[t].role is not Role.ASSISTANT:
                break
            child = t  # the agent's own earlier claim: what primed it?
        if not primers or tracer.turns[primers[-1]].role is Role.ASSISTANT:
            asked = _request(tracer, child, action)
            if asked is None:
                if not primers:
                    return None
            else:
                t, s, e = asked
                edges[(child, t)] = Edge(child=child, parent=t, evidence=Evidence(
                    quote=tracer.turns[t].text[s:e], start=s, end=e))
                primers.append(t)
        note = (f"action claim: the answer states {action.name} done where no call of "
                f"{', '.join(sorted(action.tools))} was made; primed by turn "
                f"{', '.join(map(str, primers))}")
    span = TargetSpan(turn=c, start=start, end=end, text=content[start:end])
    value = Value(action.name, "action", (span.text,))
    return ProposedSpan(span, value, tracer.graph(c, edges), DependencyType.HALLUCINATION, note)
