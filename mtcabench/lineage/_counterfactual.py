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
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtcabench.lineage._config import LineageConfig, LineageSummary
from mtcabench.lineage._fields import ResultFields, field_name, result_fields, step_kind
from mtcabench.lineage._tracing import Tracer
from mtcabench.lineage._values import make_value
from mtcabench.lineage._written import written_like
from mtcabench.errors import InputError
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
        check_real_conversations([conv])
        yield from conversation_counterfactuals(conv, per_conversation=per_conversation,
                                                seed=seed)


def check_real_conversations(conversations: Iterable[Conversation],
                             path: str | Path | None = None) -> None:
    """Refuse (InputError naming the file, when given, and the record) a conversation that is
    itself an edit (``counterfactual_of`` in its metadata): edits of edits would be counted
    as hallucinations of a real run. The first one found is named."""
    for conv in conversations:
        of = conv.metadata.get("counterfactual_of")
        if of is None:
            continue
        reason = (f"is a counterfactual edit of {str(of)[:80]!r} (written by annotate "
                  "counterfactual), "
                  "not a real conversation; give the real conversations file (the one "
                  "without counterfactual_of in the metadata)")
        if path is not None:
            raise InputError.at(path, reason, record=conv.id)
        raise InputError(f"conversation {conv.id}: {reason}")


def conversation_counterfactuals(conv: Conversation, *, per_conversation: int = 3,
                                 seed: int = 0) -> list[tuple[Conversation, Candidate]]:
    """The counterfactual edits of one conversation, in turn and offset order."""
    tracer = Tracer(conv, LineageConfig(), LineageSummary())
    rng = random.Random(_seed_of(seed, conv.id))
    out: list[tuple[_Edit, tuple[Conversation, Candidate]]] = []
    taken: set[tuple[int, int]] = set()  # one edit of a value
    for edit in _drawn(tracer, _slots(tracer), rng, taken):
        if len(out) >= per_conversation:
            break
        if (edit.turn, edit.start) in taken:
            continue
        made = _make(tracer, edit)
        if made is not None:
            out.append((edit, made))
            taken.add((edit.turn, edit.start))
    out.sort(key=lambda pair: (pair[0].turn, pair[0].start))
    return [made for _, made in out]


def _seed_of(seed: int, conv_id: str) -> int:
    """A seed per conversation that does not depend on the order or number of the others."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{conv_id}".encode()).digest()[:8], "big")


#: Up to this many possible edits (values x other entities, before any is checked), every one
#: is checked and the draw is among the exact ones (the draw of counterfactual-v1, kept so
#: that its edits, the 328 of the TauBench runs and their hand-check, stay as they were).
#: Above it the draw checks only what it draws: one answer listing the 300 flights of a
#: search result holds about 270,000 possible edits, and checking them all took 46 s.
EXHAUSTIVE_DRAW = 5_000


def _drawn(tracer: Tracer, slots: list[_Slot], rng: random.Random,
           taken: set[tuple[int, int]]) -> Iterator[_Edit]:
    """Exact edits in the order they are tried: a field not yet drawn first, then an answer
    turn not yet drawn, then the rest, each a seeded draw. ``taken``: the values already
    edited (the caller's), whose other edits are not drawn."""
    if sum(s.count for s in slots) <= EXHAUSTIVE_DRAW:
        yield from _ranked([e for s in slots for k in range(s.count)
                            if (e := _edit(tracer, s, s.other(k))) is not None], rng)
        return
    yield from _lazy_draw(tracer, slots, rng, taken)


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


def _lazy_draw(tracer: Tracer, slots: list[_Slot], rng: random.Random,
               taken: set[tuple[int, int]]) -> Iterator[_Edit]:
    """The order of :func:`_ranked` drawn one edit at a time, each checked only when drawn:
    per field (in a seeded order) a random exact edit of it, then per answer turn not yet
    drawn one, then random exact edits. A random edit is a random value of the group
    (one with other entities left), then one of its other entities not drawn yet: each draw
    and each removal costs O(1), so the work grows with the edits drawn, not with all."""
    left = [s.count for s in slots]
    swapped: list[dict[int, int]] = [{} for _ in slots]  # a Fisher-Yates shuffle, lazily

    def draw(group: list[int]) -> _Edit | None:
        while group:
            i = rng.randrange(len(group))
            k = group[i]
            s = slots[k]
            if left[k] == 0 or (s.turn, s.start) in taken:
                group[i] = group[-1]  # spent: out of this group for good
                group.pop()
                continue
            n = left[k]
            j = rng.randrange(n)
            pick = swapped[k].get(j, j)
            swapped[k][j] = swapped[k].get(n - 1, n - 1)
            left[k] = n - 1
            edit = _edit(tracer, s, s.other(pick))
            if edit is not None:
                return edit
        return None

    by_field: dict[str, list[int]] = {}
    by_turn: dict[int, list[int]] = {}
    for k, s in enumerate(slots):
        by_field.setdefault(s.field, []).append(k)
        by_turn.setdefault(s.turn, []).append(k)
    fields = list(by_field)
    rng.shuffle(fields)
    turns: set[int] = set()
    for f in fields:
        if (edit := draw(by_field[f])) is not None:
            turns.add(edit.turn)
            yield edit
    rest = [t for t in by_turn if t not in turns]
    rng.shuffle(rest)
    for t in rest:
        if (edit := draw(by_turn[t])) is not None:
            yield edit
    everything = list(range(len(slots)))
    while (edit := draw(everything)) is not None:
        yield edit


# --------------------------------------------------------------------------- finding edits
@dataclass(frozen=True)
class _Slot:
    """A value an edit may replace: where it stands in an answer turn, its text there, the
    tool result it was read from, the leaf giving it there (its path, its field's name), and
    the leaves of the same field in that result (``peers``, shared by the slots of one field,
    never copied: the others are the possible replacements, in the result's order)."""

    turn: int
    start: int
    end: int
    original: str
    source: int
    path: tuple
    leaf: Any
    field: str
    peers: list[tuple[tuple, Any]]
    at: int  # this slot's leaf in ``peers``

    @property
    def count(self) -> int:
        """How many other entities give the field."""
        return len(self.peers) - 1

    def other(self, k: int) -> Any:
        """The ``k``-th other entity's leaf (0 <= k < count), the slot's own skipped."""
        return self.peers[k + (k >= self.at)][1]


def _origin(tracer: Tracer, c: int, key: str) -> int | None:
    """The first turn of the value's chain that is not the agent's own restatement."""
    node, anchors = c, None
    while True:
        p, anchors = tracer.step(node, key, anchors)
        if p is None or tracer.turns[p].role is not Role.ASSISTANT:
            return p
        node = p


def _slots(tracer: Tracer) -> list[_Slot]:
    """Every value of an answer that a tool result gives for one entity of several, in turn
    and offset order (each tool result's leaves indexed once, not once per value)."""
    results: dict[int, ResultFields | None] = {}
    out = []
    for c, turn in enumerate(tracer.turns):
        if turn.role is not Role.ASSISTANT or not turn.content.strip():
            continue
        done: set[str] = set()
        for start, end, key in tracer.content_matches(c):
            if key in done:
                continue
            done.add(key)
            p = _origin(tracer, c, key)
            if p is None or tracer.turns[p].role is not Role.TOOL:
                continue
            result = result_fields(tracer, p, results)
            if result is None or key not in result.first:
                continue
            path, leaf = result.first[key]  # the first leaf of the value names its field
            peers = result.fields[tuple(map(step_kind, path))]
            if len(peers) > 1:
                out.append(_Slot(c, start, end, turn.content[start:end], p, path, leaf,
                                 field_name(path), peers, result.at[path]))
    return out


def _edit(tracer: Tracer, slot: _Slot, other: Any) -> _Edit | None:
    """The edit of ``slot`` to ``other`` when it is exact, else None."""
    c, start = slot.turn, slot.start
    v = make_value(other)
    if v is None or v.key == make_value(slot.leaf).key or v.key not in tracer.values:
        return None
    if tracer.known_from[v.key] >= c:
        return None
    replacement = written_like(slot.original, slot.leaf, other)
    if replacement is None or replacement == slot.original:
        return None
    if tracer.turns_holding(c, v.key) > tracer.config.max_value_turns:
        return None  # lineage would not trace it either (frequent-value)
    content = tracer.turns[c].content
    spans = tracer.clauses(c)
    i = bisect_right(spans, (start, float("inf"))) - 1  # clauses do not overlap: one holds it
    if i >= 0 and spans[i][0] <= start < spans[i][1] and re.search(
            rf"(?<![\w]){re.escape(replacement)}(?![\w])", content[spans[i][0]:spans[i][1]]):
        return None  # its clause states it already: "HAT136 (HAT136)" is no claim
    return _Edit(c, start, slot.end, slot.original, replacement, slot.field, slot.source, v.key)


# --------------------------------------------------------------------------- writing values
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
