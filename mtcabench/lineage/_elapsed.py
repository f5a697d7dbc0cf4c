"""Elapsed-time claims (rules ``lineage-v3``): "within 24 hours of booking" against the clock.

TauBench's airline policy lets any reservation be cancelled within 24 hours of booking, and
the agent often decides that window by itself: "Since the reservation was made on May 12,
2024, and it's within 24 hours of booking, you are eligible to cancel" (task-25/trial-0, turn
8). Two facts of the context decide such a claim exactly: the system turn's current time
("The current time is 2024-05-15 15:00:00 EST.") and the reservation's ``created_at``
(``2024-05-12T09:36:29``) in the tool result the agent read. A claim is proposed when

1. an answer's sentence asserts that the booking is within the 24-hour window ("within (the
   last) 24 hours (of booking)", "within the 24-hour (cancellation) window"), or that it is
   outside it ("more than 24 hours ago", "beyond/outside the 24-hour window"); a sentence
   with a conditional or a request to check (if, would, whether, could, might, unless, only,
   ensure, verify, confirm, a question mark) is a hypothesis, not a claim
   (``hypothetical-claim``);
2. the reservation it is about has a ``created_at`` in an earlier tool result: the latest
   reservation the answer names before the claim, else the latest one the agent retrieved;
3. a system turn states the current time, and the time between the two contradicts the claim.

The span is the claim's words. The graph holds what primed it: the contradicted record
(quoting ``created_at``), its call and the call's sources, the system turn (quoting the
current time), and the latest earlier claim of the same window, a user's ("I booked it
within the last 24 hours") or the agent's own (the chain then continues through it).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

# one sentence rule for every claim
from mtcabench.lineage._claims import _sentence_at, not_a_claim
from mtcabench.lineage._tracing import Covered, ProposedSpan, Tracer
from mtcabench.lineage._values import Value
from mtcabench.model import DependencyType, Edge, Evidence, Role, TargetSpan

WINDOW = timedelta(hours=24)

#: An answer's claim that the booking is inside the window (the window's own words first).
_WITHIN = re.compile(
    r"(?i)\bwithin the 24-hour (?:cancellation |booking |refund )?window"
    r"|\bwithin (?:the )?(?:last |past )?24(?:-| )hours?(?: of (?:the )?booking)?")
#: An answer's claim that it is outside the window.
_OUTSIDE = re.compile(
    r"(?i)\b(?:beyond|outside) (?:of )?the 24-hour (?:cancellation |booking |refund )?window"
    r"|\bmore than 24 hours(?: ago| since (?:the )?booking)?")
#: What the claim must follow in its sentence: a verb of being with the booking (or the
#: cancellation) as subject, "it was booked within", "it's within", "is beyond"; a policy's
#: "flights without insurance or within 24 hours" states a rule, not a fact of this booking.
_SUBJECT = re.compile(r"(?i)(?:\b(?:is|are|was|were|been)|['’]s)(?:\s+[a-z]+){0,2}\s+$")
#: A word that turns the sentence into a hypothesis, a rule or a request, not a claim.
_HYPOTHETICAL = re.compile(
    r"(?i)\b(?:if|would|whether|could|might|unless|only|ensure|verify|confirm|check|"
    r"need to|needs to|can't|cannot|not)\b|\?")
#: A user's statement that the booking is recent: "I booked the flight about 10 hours ago".
_USER_RECENT = re.compile(
    r"(?i)\b(?:booked|made|reserved|created)\b[^.!?\n]{0,40}?\b((?:about |around |only |just )?"
    r"(?:\d{1,2}|an?|one|two|three|a few|few|several) hours? ago)\b")
_NOW = re.compile(r"(?i)current time is (\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2})?)")
_CREATED = re.compile(r'"created_at":\s*"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})"')


def elapsed_spans(tracer: Tracer, c: int, covered: Covered) -> list[ProposedSpan]:
    """Contradicted claims about the 24-hour window in answer turn ``c``."""
    content = tracer.turns[c].content
    now = _current_time(tracer, c)
    out: list[ProposedSpan] = []
    for start, end, inside in _claims_in(tracer, content, count=True):
        if covered.overlaps(start, end) or now is None:
            continue
        if tracer.rules.claim_context and not_a_claim(content, start):
            tracer.summary.skipped["hypothetical-claim"] += 1
            continue
        record = _record_for(tracer, c, content[:start])
        if record is None:
            continue
        turn, created = record
        if (now[2] - created <= WINDOW) == inside:
            continue  # the clock agrees with the claim
        made = _hallucination(tracer, c, start, end, inside, now, turn, created)
        if made is not None:
            out.append(made)
            covered.add(start, end)
    return out


def _claims_in(tracer: Tracer | None, text: str, *, count: bool = False
               ) -> list[tuple[int, int, bool]]:
    """(start, end, inside) of the window claims asserted in a text (not hypotheses)."""
    out = []
    for pattern, inside in ((_WITHIN, True), (_OUTSIDE, False)):
        for m in pattern.finditer(text):
            sentence_start = max(text.rfind(x, 0, m.start()) for x in ".!?\n") + 1
            if not _SUBJECT.search(text, sentence_start, m.start()):
                continue
            if _HYPOTHETICAL.search(_sentence_at(text, m.start())):
                if count and tracer is not None:
                    tracer.summary.skipped["hypothetical-claim"] += 1
                continue
            out.append((m.start(), m.end(), inside))
    return sorted(out)


def _current_time(tracer: Tracer, c: int) -> tuple[int, tuple[int, int], datetime] | None:
    """(system turn, offsets of the time in its text, the time) of the latest statement of
    the current time before turn ``c``."""
    for t in range(c - 1, -1, -1):
        turn = tracer.turns[t]
        if turn.role is not Role.SYSTEM:
            continue
        m = _NOW.search(turn.text)
        if m is None:
            continue
        try:
            when = datetime.fromisoformat(m.group(1).replace(" ", "T"))
        except ValueError:
            continue
        return t, m.span(1), when
    return None


def _records(tracer: Tracer, c: int) -> dict[str, tuple[int, datetime]]:
    """reservation id -> (latest tool turn before ``c`` giving its created_at, that time)."""
    out: dict[str, tuple[int, datetime]] = {}
    for t in range(c):
        if tracer.turns[t].role is not Role.TOOL:
            continue
        is_json, data = tracer.tool_data(t)
        if not (is_json and isinstance(data, dict)):
            continue
        rid, created = data.get("reservation_id"), data.get("created_at")
        if isinstance(rid, str) and isinstance(created, str):
            try:
                out[rid] = (t, datetime.fromisoformat(created))
            except ValueError:
                continue
    return out


def _record_for(tracer: Tracer, c: int, before: str) -> tuple[int, datetime] | None:
    """The record a claim is about: the latest reservation the answer names before the claim
    (a listing's item heading, "Reservation 59XX6W: ..."), else the latest one retrieved."""
    records = _records(tracer, c)
    if not records:
        return None
    named = [(before.rfind(rid), rid) for rid in records if _names(before, rid)]
    if named:
        return records[max(named)[1]]
    return max(records.values(), key=lambda r: r[0])


def _names(text: str, rid: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(rid)}(?![A-Za-z0-9])", text) is not None


def _latest_claim(tracer: Tracer, c: int, inside: bool) -> tuple[int, int, int] | None:
    """(turn, start, end) of the latest earlier claim of the same window: a user's ("within
    the last 24 hours", "I booked it about 10 hours ago"), or the agent's own, in its answer
    or in the arguments of its calls (a ``think`` call's "which is within 24 hours of
    booking")."""
    for t in range(c - 1, -1, -1):
        turn = tracer.turns[t]
        if turn.role is Role.USER:
            found = [(s, e) for s, e, claimed in _claims_in(None, turn.text) if claimed == inside]
            if inside:
                found += [m.span(1) for m in _USER_RECENT.finditer(turn.text)
                          if _hours(m.group(1)) < WINDOW.total_seconds() / 3600]
        elif turn.role is Role.ASSISTANT:
            found = [(s, e) for s, e, claimed in _claims_in(None, turn.text) if claimed == inside]
        else:
            continue
        if found:
            s, e = max(found)
            return t, s, e
    return None


def _hours(words: str) -> float:
    """The hours of "about 10 hours ago" (a few, several: fewer than 24 either way)."""
    m = re.search(r"\d+", words)
    return float(m.group()) if m else 1.0


def _hallucination(tracer: Tracer, c: int, start: int, end: int, inside: bool,
                   now: tuple[int, tuple[int, int], datetime], record: int,
                   created: datetime) -> ProposedSpan | None:
    content = tracer.turns[c].content
    pos = _CREATED.search(tracer.turns[record].text)
    if pos is None:  # written otherwise in the raw text: nothing exact to quote
        return None
    edges, unsourced = tracer.trace(c, [(record, "")])
    if edges is None:  # larger than MAX_GRAPH_TURNS (counted by trace)
        return None
    tracer.count_unsourced(unsourced)
    edges[(c, record)] = Edge(child=c, parent=record, evidence=Evidence(
        quote=pos.group(1), start=pos.start(1), end=pos.end(1)))
    system, (s0, s1), when = now
    edges[(c, system)] = Edge(child=c, parent=system, evidence=Evidence(
        quote=tracer.turns[system].text[s0:s1], start=s0, end=s1))
    primers = []
    child = c
    while (claim := _latest_claim(tracer, child, inside)) is not None:
        t, s, e = claim
        edges.setdefault((child, t), Edge(child=child, parent=t, evidence=Evidence(
            quote=tracer.turns[t].text[s:e], start=s, end=e)))
        primers.append(t)
        if tracer.turns[t].role is not Role.ASSISTANT:
            break
        child = t  # the agent's own earlier claim: where did it get it?
    span = TargetSpan(turn=c, start=start, end=end, text=content[start:end])
    rid = next((k for k, (t, _) in _records(tracer, c).items() if t == record), None)
    hours = (when - created).total_seconds() / 3600
    note = (f"elapsed-time claim: the answer states {span.text!r} where turn {record} gives "
            f"created_at {pos.group(1)} and turn {system} the current time "
            f"{tracer.turns[system].text[s0:s1]} ({hours:.1f} hours apart)"
            + (f"; primed by turn {', '.join(map(str, primers))}" if primers else "")
            + _ground_truth(tracer, rid))
    value = Value(span.text, "elapsed-time", (span.text,))
    return ProposedSpan(span, value, tracer.graph(c, edges), DependencyType.HALLUCINATION, note)


def _expected_actions(metadata: dict) -> list | None:
    """The task's expected actions as ``{name, arguments}``: ``metadata.expected_actions``
    (ingest's), or, in a conversations file ingested before that key, TauBench's
    ``info.task.actions`` (``{name, kwargs}``) that the metadata then held."""
    actions = metadata.get("expected_actions")
    if isinstance(actions, list):
        return actions
    info = metadata.get("info")
    task = info.get("task") if isinstance(info, dict) else None
    old = task.get("actions") if isinstance(task, dict) else None
    if not isinstance(old, list):
        return None
    return [{"name": a.get("name"), "arguments": a.get("kwargs")} for a in old
            if isinstance(a, dict)]


def _ground_truth(tracer: Tracer, rid: str | None) -> str:
    """What the task's ground truth (its expected actions, kept in the conversation's
    metadata) says of the agent's cancellation of the record, for the rationale: a
    confirmation, never a condition of the proposal."""
    actions = _expected_actions(tracer.conv.metadata or {})
    if rid is None or actions is None:
        return ""
    gold = any(isinstance(a, dict) and a.get("name") == "cancel_reservation"
               and isinstance(a.get("arguments"), dict)
               and a["arguments"].get("reservation_id") == rid for a in actions)
    done = [t.index for t in tracer.turns for call in t.tool_calls
            if call.name == "cancel_reservation" and call.arguments.get("reservation_id") == rid]
    if not done:
        return ""
    if gold:
        return f"; the task's actions cancel {rid} too (the agent did, turn {done[0]})"
    return (f"; ground truth: the agent cancelled {rid} (turn {done[0]}), which the task's "
            "actions do not")
