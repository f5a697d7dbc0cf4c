"""The annotated claims set: pass-1 graphs and pass-2 checks read into the pipeline's records.

A person writes each claim's graph (a :class:`~mtcabench.model.ClaimAnnotation` line, pass 1);
a second person who did not write it checks it edge by edge (a
:class:`~mtcabench.model.ClaimCheck` line, pass 2). Pass 1 becomes candidates (annotator
``human``, the guide's version, the person's pseudonym), exactly what the review stage takes
from any annotator; pass 2 is the decisions a reviewer makes on them. Both are checked as
every stage checks graphs (:func:`~mtcabench.graph.check_graph`), so a slip of the pen (a
text not in the turn, an edge pointing forwards, a tool result without its call) is one line
naming the file, the line and the rule.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from mtcabench.errors import InputError
from mtcabench.graph import check_graph
from mtcabench.io import format_validation_error, iter_json_lines
from mtcabench.model import (
    Annotator,
    Candidate,
    ClaimAnnotation,
    ClaimCheck,
    Conversation,
    DecisionSource,
    Edge,
    EdgeKind,
    GraphEdit,
    ProvenanceGraph,
    ReviewDecision,
    Role,
    SpanKind,
    TargetSpan,
    Verdict,
    span_id,
)

#: The version of the written guide (docs/claims.md) the annotations follow.
GUIDE_VERSION = "claims-guide-1"


def claim_annotator(person: str) -> Annotator:
    """The annotator of a hand-written claim graph."""
    return Annotator(name="human", person=person, rules_version=GUIDE_VERSION)


def resolve_span(conversation: Conversation, turn: int, text: str, occurrence: int = 1
                 ) -> TargetSpan:
    """The span of ``text`` (its ``occurrence``-th occurrence) in an assistant turn's content;
    ValueError naming what is wrong."""
    if not 0 <= turn < len(conversation.turns):
        raise ValueError(f"turn {turn} is not a turn of the conversation "
                         f"({len(conversation.turns)} turns)")
    t = conversation.turns[turn]
    if t.role is not Role.ASSISTANT:
        raise ValueError(f"turn {turn} is a {t.role.value} turn; a claim is in an assistant turn")
    start = -1
    for _ in range(occurrence):
        start = t.content.find(text, start + 1)
        if start < 0:
            raise ValueError(f"the text is not in turn {turn}'s content "
                             f"{'' if occurrence == 1 else f'{occurrence} times '}"
                             "(copy it exactly from the sheet)")
    return TargetSpan(turn=turn, start=start, end=start + len(text), text=text)


def graph_of(conversation: Conversation, target: int, pairs: Iterable[tuple[int, int]]
             ) -> ProvenanceGraph:
    """A gold graph from ``[child, parent]`` pairs: a tool result's edge to the turn that
    issued its call is structural, every other edge a content edge."""
    edges = []
    for child, parent in dict.fromkeys(tuple(p) for p in pairs):
        structural = (0 <= child < len(conversation.turns)
                      and conversation.turns[child].role is Role.TOOL
                      and conversation.call_turn(child) == parent)
        edges.append(Edge(child=child, parent=parent,
                          kind=EdgeKind.STRUCTURAL if structural else EdgeKind.CONTENT))
    edges.sort(key=lambda e: (-e.child, -e.parent))
    nodes = sorted({target, *(x for e in edges for x in e.pair)})
    return ProvenanceGraph(target=target, nodes=nodes, edges=edges)


def _record(path: Path, lineno: int, obj: dict, record_type):
    try:
        return record_type.model_validate(obj)
    except ValidationError as exc:
        raise InputError.at(path, format_validation_error(exc), line=lineno) from None


def _conversation(path: Path, lineno: int, conversations: dict[str, Conversation], cid: str
                  ) -> Conversation:
    conv = conversations.get(cid)
    if conv is None:
        raise InputError.at(path, f"conversation {cid!r} is not in the conversations given "
                            "(ingest its runs file too)", line=lineno)
    return conv


def read_annotations(path: str | Path, conversations: dict[str, Conversation]
                     ) -> list[Candidate]:
    """Pass-1 lines as candidates (one per claim; a claim annotated twice is an error)."""
    path = Path(path)
    out: dict[str, Candidate] = {}
    for lineno, obj in iter_json_lines(path):
        a: ClaimAnnotation = _record(path, lineno, obj, ClaimAnnotation)
        conv = _conversation(path, lineno, conversations, a.conversation_id)
        try:
            span = resolve_span(conv, a.turn, a.text, a.occurrence)
        except ValueError as exc:
            raise InputError.at(path, str(exc), line=lineno) from None
        rid = span_id(conv.id, span)
        graph = graph_of(conv, a.turn, a.edges)
        violations = check_graph(graph, conv, span, record=rid)
        if violations:
            raise InputError.at(path, "; ".join(f"{v.rule}: {v.detail}" for v in violations),
                                line=lineno, record=rid)
        if rid in out:
            raise InputError.at(path, "this claim is annotated twice", line=lineno, record=rid)
        out[rid] = Candidate(
            id=rid, conversation_id=conv.id, span=span, dependency_type=a.type, graph=graph,
            annotator=claim_annotator(a.annotator), rationale=a.rationale or None,
            span_kind=SpanKind.CLAIM, claim_kind=a.claim_kind)
    return list(out.values())


def read_checks(path: str | Path, conversations: dict[str, Conversation],
                candidates: dict[str, Candidate]) -> list[ReviewDecision]:
    """Pass-2 lines as review decisions on the pass-1 candidates (``candidates`` by id)."""
    path = Path(path)
    out: dict[str, ReviewDecision] = {}
    for lineno, obj in iter_json_lines(path):
        c: ClaimCheck = _record(path, lineno, obj, ClaimCheck)
        conv = _conversation(path, lineno, conversations, c.conversation_id)
        try:
            span = resolve_span(conv, c.turn, c.text, c.occurrence)
        except ValueError as exc:
            raise InputError.at(path, str(exc), line=lineno) from None
        rid = span_id(conv.id, span)
        cand = candidates.get(rid)
        if cand is None:
            raise InputError.at(path, "no pass-1 annotation of this claim", line=lineno,
                                record=rid)
        if cand.annotator.person == c.checker:
            raise InputError.at(path, f"checked by its own annotator {c.checker!r}: a claim is "
                                "checked by someone who did not write it", line=lineno, record=rid)
        if rid in out:
            raise InputError.at(path, "this claim is checked twice", line=lineno, record=rid)
        accepted = c.verdict is Verdict.ACCEPT
        graph = cand.graph if accepted else graph_of(conv, c.turn, c.edges)
        dtype = cand.dependency_type if accepted or c.type is None else c.type
        kind = cand.claim_kind if accepted or c.claim_kind is None else c.claim_kind
        if c.verdict is not Verdict.REJECT:
            violations = check_graph(graph, conv, span, record=rid)
            if violations:
                raise InputError.at(path, "; ".join(f"{v.rule}: {v.detail}" for v in violations),
                                    line=lineno, record=rid)
        before, after = cand.graph.pairs(), graph.pairs()
        edit = GraphEdit(edges_added=sorted(after - before), edges_removed=sorted(before - after),
                         type_changed=(cand.dependency_type.value, dtype.value)
                         if dtype is not cand.dependency_type else None)
        edited = bool(edit.edges_added or edit.edges_removed or edit.type_changed
                      or kind is not cand.claim_kind)
        verdict = c.verdict
        if verdict is Verdict.ACCEPT_WITH_EDITS and not edited:
            verdict = Verdict.ACCEPT  # "edits" that changed nothing are an acceptance
        out[rid] = ReviewDecision(
            id=rid, conversation_id=conv.id, span=span, dependency_type=dtype, graph=graph,
            verdict=verdict, decision_source=DecisionSource.HUMAN, reviewer=c.checker,
            edited=edited and verdict is not Verdict.REJECT,
            edit=edit if edited and verdict is not Verdict.REJECT else None,
            comment=c.notes or None, annotator=cand.annotator,
            span_kind=SpanKind.CLAIM, claim_kind=kind)
    return list(out.values())


@dataclass
class Agreement:
    """How far pass 2 changed pass 1: edge F1 between the two graphs (micro, over every
    checked claim's edges; a rejected claim counts as an empty second graph), the share of
    graphs changed, and the type and kind agreement."""

    claims: int = 0
    rejected: int = 0
    graphs_changed: int = 0
    types_changed: int = 0
    kinds_changed: int = 0
    edges_first: int = 0
    edges_second: int = 0
    edges_both: int = 0
    by_kind: dict[str, list[int]] = field(default_factory=dict)  # kind -> [claims, changed]

    @property
    def edge_f1(self) -> float:
        total = self.edges_first + self.edges_second
        return 2 * self.edges_both / total if total else 1.0


def agreement(candidates: Iterable[Candidate], decisions: Iterable[ReviewDecision]) -> Agreement:
    """The agreement between pass 1 (``candidates``) and pass 2 (``decisions``)."""
    first = {c.id: c for c in candidates}
    out = Agreement()
    for d in decisions:
        c = first[d.id]
        a = c.graph.pairs()
        b = set() if d.verdict is Verdict.REJECT else d.graph.pairs()
        out.claims += 1
        out.rejected += d.verdict is Verdict.REJECT
        changed = a != b
        out.graphs_changed += changed
        out.types_changed += d.dependency_type is not c.dependency_type
        out.kinds_changed += d.claim_kind is not c.claim_kind
        out.edges_first += len(a)
        out.edges_second += len(b)
        out.edges_both += len(a & b)
        row = out.by_kind.setdefault(c.claim_kind.value, [0, 0])
        row[0] += 1
        row[1] += changed
    return out
