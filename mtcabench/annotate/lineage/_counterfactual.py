"""Counterfactual hallucinations: a real answer's value replaced by another entity's value.

Real hallucinations that the context decides exactly are few (docs/lineage.md counts them),
so the benchmark also holds hallucinations whose primed source is known by construction. In
a real answer, a value the answer copied from a tool result (a flight's number or price in a
search result, a passenger's birth date, one of the profile's reservation ids) is replaced by
the value of the *same field* that the same tool result gives for *another entity* (another
flight, passenger, reservation): the answer now states a wrong value, and the turn that
primed it is the tool result that showed it. Each edit gives:

* a conversation: the real one up to the edited answer, that answer's value replaced, with
  the id ``<real id>/counterfactual-<turn>-<offset>`` and ``counterfactual_of`` in its
  metadata (task and trial kept, so that splits by task keep it beside its real run);
* a candidate: the replaced value as a hallucination span, ``origin: counterfactual``, the
  edit (field, original, replacement, source turn and quote) in ``counterfactual``, and the
  gold graph of a primed value: the answer -> the tool result showing the replacement
  (quoting it), that result's call and the call's sources, traced as lineage traces them.

An edit is made only where it is exact: the replacement is a value of that field in the
answer's own source (the tool result the answer read the original from, by the lineage
rules), that result is the latest turn showing the replacement, the replacement occurs
nowhere in the answer already, and it can be written the way the answer wrote the original
(``$1,234``, "May 20, 2024", "07:00 PM"). Which edits are made is a seeded draw per
conversation, spread over fields and answer turns (``per_conversation`` at most).
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date, time
from decimal import Decimal
from typing import Any

from mtcabench.annotate.lineage._config import LineageConfig, LineageSummary
from mtcabench.annotate.lineage._tracing import Tracer
from mtcabench.annotate.lineage._values import make_value
from mtcabench.graph import check_graph
from mtcabench.model import (
    Annotator,
    Candidate,
    Conversation,
    CounterfactualEdit,
    DependencyType,
    Role,
    SpanOrigin,
    TargetSpan,
    span_id,
)

#: The version of these edit rules, written as the annotator's rules_version.
COUNTERFACTUAL_VERSION = "counterfactual-v1"
ANNOTATOR = Annotator(name="counterfactual", rules_version=COUNTERFACTUAL_VERSION)

_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")


@dataclass(frozen=True)
class _Edit:
    """One possible edit: the answer turn and the offsets of its value, the original and the
    replacement as written, the field, the tool result giving both, the replacement's key."""

    turn: int
    start: int
    end: int
    original: str
    replacement: str
    field: str
    source: int
    key: str  # the replacement's value key


def propose_counterfactuals(
    conversations: Iterable[Conversation], *, per_conversation: int = 3, seed: int = 0,
) -> Iterator[tuple[Conversation, Candidate]]:
    """(edited conversation, counterfactual candidate) pairs, at most ``per_conversation``
    for each conversation, drawn with ``seed``."""
    if per_conversation < 1:
        raise ValueError(f"per_conversation must be at least 1, got {per_conversation}")
    for conv in conversations:
        yield from conversation_counterfactuals(conv, per_conversation=per_conversation,
                                                seed=seed)


def conversation_counterfactuals(conv: Conversation, *, per_conversation: int = 3,
                                 seed: int = 0) -> list[tuple[Conversation, Candidate]]:
    """The counterfactual edits of one conversation, in turn and offset order."""
    tracer = Tracer(conv, LineageConfig(), LineageSummary())
    ranked = _ranked(list(_possible_edits(tracer)), random.Random(_seed_of(seed, conv.id)))
    out: list[tuple[_Edit, tuple[Conversation, Candidate]]] = []
    for edit in ranked:
        if len(out) >= per_conversation:
            break
        if any((e.turn, e.start) == (edit.turn, edit.start) for e, _ in out):
            continue  # one edit of a value
        made = _make(tracer, edit)
        if made is not None:
            out.append((edit, made))
    out.sort(key=lambda pair: (pair[0].turn, pair[0].start))
    return [made for _, made in out]


def _seed_of(seed: int, conv_id: str) -> int:
    """A seed per conversation that does not depend on the order or number of the others."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{conv_id}".encode()).digest()[:8], "big")


def _ranked(edits: list[_Edit], rng: random.Random) -> list[_Edit]:
    """The edits in a seeded order that spreads them: a field not yet drawn first, then an
    answer turn not yet drawn, then the rest."""
    rng.shuffle(edits)
    fields: set[str] = set()
    turns: set[int] = set()
    first, second, rest = [], [], []
    for e in edits:
        if e.field not in fields:
            first.append(e)
            fields.add(e.field)
            turns.add(e.turn)
        elif e.turn not in turns:
            second.append(e)
            turns.add(e.turn)
        else:
            rest.append(e)
    return first + second + rest


# --------------------------------------------------------------------------- finding edits
def _leaves(obj: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    """``(path, leaf)`` of a JSON value; a path holds dict keys and list indices."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _leaves(v, (*path, i))
    elif not isinstance(obj, bool) and obj is not None:
        yield path, obj


def _entity_step(a: Any, b: Any) -> bool:
    """Whether two path steps name two entities of one collection: two list items, or two
    entries of a dict keyed by ids (``gift_card_3576581``, ``credit_card_4421486``)."""
    if isinstance(a, int) and isinstance(b, int):
        return True
    return (isinstance(a, str) and isinstance(b, str)
            and any(ch.isdigit() for ch in a) and any(ch.isdigit() for ch in b))


def _siblings(path: tuple, leaves: list[tuple[tuple, Any]]) -> list[tuple[tuple, Any]]:
    """Leaves of the same field as ``path`` in other entities of the same result."""
    out = []
    for q, leaf in leaves:
        if len(q) != len(path) or q == path:
            continue
        if all(x == y or _entity_step(x, y) for x, y in zip(path, q, strict=True)):
            out.append((q, leaf))
    return out


def field_name(path: tuple) -> str:
    """``flight_number``, ``prices.economy``, ``reservations[]``: a path without its
    entities (list indices and id keys), for reports."""
    parts = [p for p in path if not isinstance(p, int) and not any(ch.isdigit() for ch in p)]
    if path and isinstance(path[-1], int):
        return (parts[-1] if parts else "") + "[]"
    return ".".join(parts[-2:]) if len(parts) >= 2 and parts[-2] == "prices" else (
        parts[-1] if parts else "")


def _origin(tracer: Tracer, c: int, key: str) -> int | None:
    """The first turn of the value's chain that is not the agent's own restatement."""
    node, anchors = c, None
    while True:
        p, anchors = tracer.step(node, key, anchors)
        if p is None or tracer.turns[p].role is not Role.ASSISTANT:
            return p
        node = p


def _possible_edits(tracer: Tracer) -> Iterator[_Edit]:
    for c, turn in enumerate(tracer.turns):
        if turn.role is not Role.ASSISTANT or not turn.content.strip():
            continue
        content = turn.content
        done: set[str] = set()
        for start, end, key in tracer.content_matches(c):
            if key in done:
                continue
            done.add(key)
            p = _origin(tracer, c, key)
            if p is None or tracer.turns[p].role is not Role.TOOL:
                continue
            is_json, data = tracer.tool_data(p)
            if not is_json:
                continue
            leaves = list(_leaves(data))
            original = content[start:end]
            for path, leaf in leaves:
                v = make_value(leaf)
                if v is None or v.key != key:
                    continue
                for _, other in _siblings(path, leaves):
                    edit = _edit(tracer, c, start, end, original, leaf, other, path, p)
                    if edit is not None:
                        yield edit
                break  # the first leaf of the value names its field


def _edit(tracer: Tracer, c: int, start: int, end: int, original: str, leaf: Any,
          other: Any, path: tuple, p: int) -> _Edit | None:
    v = make_value(other)
    if v is None or v.key == make_value(leaf).key or v.key not in tracer.values:
        return None
    if tracer.known_from[v.key] >= c:
        return None
    replacement = written_like(original, leaf, other)
    if replacement is None or replacement == original:
        return None
    if tracer.turns_holding(c, v.key) > tracer.config.max_value_turns:
        return None  # lineage would not trace it either (frequent-value)
    content = tracer.turns[c].content
    for lo, hi in tracer.clauses(c):
        if lo <= start < hi and re.search(
                rf"(?<![\w]){re.escape(replacement)}(?![\w])", content[lo:hi]):
            return None  # its clause states it already: "HAT136 (HAT136)" is no claim
    return _Edit(c, start, end, original, replacement, field_name(path), p, v.key)


# --------------------------------------------------------------------------- writing values
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
def _make(tracer: Tracer, edit: _Edit) -> tuple[Conversation, Candidate] | None:
    """The edited conversation and its candidate; the graph is what the lineage rules trace
    for the replacement in the edited answer (the turn it would have been read from, and that
    turn's sources), so that real and counterfactual gold follow one edge rule."""
    conv = tracer.conv
    answer = tracer.turns[edit.turn]
    content = answer.content[:edit.start] + edit.replacement + answer.content[edit.end:]
    turns = [*conv.turns[:edit.turn], answer.model_copy(update={"content": content})]
    cid = f"{conv.id}/counterfactual-{edit.turn}-{edit.start}"
    edited = Conversation.model_validate({
        **conv.model_dump(), "id": cid, "turns": [t.model_dump() for t in turns],
        "metadata": {"counterfactual_of": conv.id, "counterfactual_version": COUNTERFACTUAL_VERSION},
    })
    again = Tracer(edited, tracer.config, LineageSummary())
    source = again.read_from(edit.turn, edit.key)
    if source is None or again.turns[source].role not in (Role.TOOL, Role.ASSISTANT):
        return None
    edges, _ = again.trace(edit.turn, [(edit.turn, edit.key)])
    if edges is None:  # larger than MAX_GRAPH_TURNS
        return None
    graph = again.graph(edit.turn, edges)
    span = TargetSpan(turn=edit.turn, start=edit.start,
                      end=edit.start + len(edit.replacement), text=edit.replacement)
    rid = span_id(cid, span)
    if check_graph(graph, edited, span, record=rid):
        return None  # an edit the graph rules refuse is not made
    quote = next(e.evidence for e in graph.edges if e.pair == (edit.turn, source))
    original_at = tracer.occurrence(edit.source, _key_at(tracer, edit))
    record = Candidate(
        id=rid, conversation_id=cid, span=span, dependency_type=DependencyType.HALLUCINATION,
        graph=graph, annotator=ANNOTATOR, status="ok",
        rationale=(f"counterfactual: {edit.original!r} replaced by {edit.replacement!r}, the "
                   f"{edit.field} that turn {edit.source} gives for another entity; read "
                   f"from turn {source}"),
        origin=SpanOrigin.COUNTERFACTUAL,
        counterfactual=CounterfactualEdit(
            conversation_id=conv.id, field=edit.field, original=edit.original,
            replacement=edit.replacement, source_turn=source, source_quote=quote.quote,
            source_start=quote.start, source_end=quote.end, entity_turn=edit.source,
            original_start=original_at[0] if original_at else None),
    )
    return edited, record


def _key_at(tracer: Tracer, edit: _Edit) -> str:
    """The value key of the answer's original text at the edit."""
    for start, end, key in tracer.content_matches(edit.turn):
        if (start, end) == (edit.start, edit.end):
            return key
    return edit.original
