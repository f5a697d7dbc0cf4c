"""Deterministic checks after each phase: model answers to Proposal and Candidate records.

Nothing the model says is trusted as is. The span's offsets are computed from its quote;
every edge's evidence must be found in the parent turn (see :mod:`mtcabench.annotate.quotes`
for the one normalisation allowed); edges out of tool turns are replaced by the structural
edge code adds; the graph must pass every rule of :func:`mtcabench.graph.check_graph`. An
answer that fails is kept as a ``rejected`` record with every reason and the raw output.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pydantic import ValidationError

from mtcabench.annotate.quotes import find_quote
from mtcabench.annotate.schemas import EdgeOut, ProposeOut, VerifyOut
from mtcabench.graph import check_graph, infer_dependency_type, with_structural_edges
from mtcabench.io import format_validation_error
from mtcabench.model import (
    Annotator,
    Candidate,
    Conversation,
    DependencyType,
    Edge,
    Evidence,
    Proposal,
    ProvenanceGraph,
    Rejection,
    Role,
    TargetSpan,
    span_id,
)

#: Reasons a record can be rejected for (graph rules add ``graph:<rule>``, see graph.RULES).
REASONS = {
    "truncated": "the answer was cut off (the model hit max_tokens)",
    "invalid-json": "the answer is not valid JSON",
    "schema": "the answer does not match the requested schema",
    "span-turn": "the span's turn is not one of the request's target turns",
    "quote-not-found": "the span's quote is not in its turn",
    "duplicate-span": "the same span was proposed twice in one answer",
    "evidence-missing": "a content edge has no evidence quote (allowed for hallucination only)",
    "evidence-not-found": "an edge's evidence quote is not in its parent turn",
    "no-source": "a span that is not a hallucination has no edge out of its turn",
}


def now() -> datetime:
    return datetime.now(UTC)


def parse_answer(raw: str, finish_reason: str | None, model: type[ProposeOut | VerifyOut]
                 ) -> tuple[ProposeOut | VerifyOut | None, list[Rejection]]:
    """The parsed answer, or None with the reasons it could not be parsed."""
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        reason = "truncated" if finish_reason == "length" else "invalid-json"
        return None, [Rejection(reason=reason, detail=f"{exc.msg} at character {exc.pos}")]
    try:
        return model.model_validate(data), []
    except ValidationError as exc:
        return None, [Rejection(reason="schema", detail=format_validation_error(exc))]


@dataclass
class GraphCheck:
    """A graph built from model edges, with what was rejected and what code changed."""

    graph: ProvenanceGraph
    rejections: list[Rejection] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.rejections


def _turn(conv: Conversation, index: int):
    return conv.turns[index] if 0 <= index < len(conv.turns) else None


def build_graph(conv: Conversation, span: TargetSpan, edges: list[EdgeOut],
                dependency_type: str, *, primed_by: list[int] = (), record: str = "?"
                ) -> GraphCheck:
    """The checked provenance graph of ``span`` from the model's edges."""
    rejections: list[Rejection] = []
    notes: list[str] = []
    hallucination = dependency_type == DependencyType.HALLUCINATION.value
    kept: list[Edge] = []
    pairs: set[tuple[int, int]] = set()
    for e in edges:
        child, parent = _turn(conv, e.child), _turn(conv, e.parent)
        if child is not None and child.role is Role.TOOL:
            # A tool result's only edge is the structural one to its call turn, added below.
            notes.append(f"dropped edge {e.child}->{e.parent} out of tool turn {e.child} "
                         "(its structural edge is added by code)")
            continue
        if (e.child, e.parent) in pairs:
            notes.append(f"merged repeated edge {e.child}->{e.parent}")
            continue
        pairs.add((e.child, e.parent))
        evidence = None
        if not e.evidence.strip():
            if not hallucination:
                rejections.append(Rejection(reason="evidence-missing",
                                            detail=f"edge {e.child}->{e.parent} has no evidence"))
        elif parent is None:
            rejections.append(Rejection(reason="evidence-not-found",
                                        detail=f"edge {e.child}->{e.parent}: no turn {e.parent}"))
        else:
            at = find_quote(parent.text, e.evidence)
            if at is None:
                rejections.append(Rejection(
                    reason="evidence-not-found",
                    detail=f"edge {e.child}->{e.parent}: {e.evidence[:120]!r} is not in turn "
                           f"{e.parent}"))
            else:
                evidence = Evidence(quote=parent.text[at[0]:at[1]], start=at[0], end=at[1])
        kept.append(Edge(child=e.child, parent=e.parent, evidence=evidence))
    if hallucination:
        for p in primed_by:
            if (span.turn, p) not in pairs:
                pairs.add((span.turn, p))
                kept.append(Edge(child=span.turn, parent=p))
    nodes = {span.turn} | {x for e in kept for x in (e.child, e.parent)}
    graph = with_structural_edges(
        ProvenanceGraph(target=span.turn, nodes=sorted(nodes), edges=kept), conv)
    for v in check_graph(graph, conv, span, record=record):
        rejections.append(Rejection(reason=f"graph:{v.rule}", detail=v.detail))
    if not hallucination and not any(e.child == span.turn for e in graph.edges):
        rejections.append(Rejection(reason="no-source",
                                    detail=f"{dependency_type} span with no edge out of its turn"))
    return GraphCheck(graph=graph, rejections=rejections, notes=notes)


def proposals_from_answer(
    conv: Conversation,
    unit_id: str,
    targets: tuple[int, ...],
    raw: str,
    finish_reason: str | None,
    annotator: Annotator,
) -> list[Proposal]:
    """The Proposal records of one propose answer: ok ones and rejected ones, none dropped."""
    answer, parse_rejections = parse_answer(raw, finish_reason, ProposeOut)
    base = dict(conversation_id=conv.id, annotator=annotator, created_at=now())
    if answer is None:
        return [Proposal(id=f"{unit_id}/rejected", status="rejected",
                         rejections=parse_rejections, raw_output=raw, **base)]
    out: list[Proposal] = []
    seen: set[str] = set()
    for i, s in enumerate(answer.spans):
        rejected_id = f"{unit_id}/rejected/{i}"
        common = dict(dependency_type=DependencyType(s.dependency_type), rationale=s.rationale,
                      **base)
        if s.turn not in targets:
            out.append(Proposal(id=rejected_id, status="rejected", raw_output=raw, rejections=[
                Rejection(reason="span-turn",
                          detail=f"turn {s.turn} is not a target turn of this request {targets}")],
                **common))
            continue
        text = conv.turns[s.turn].text
        at = find_quote(text, s.quote)
        if at is None:
            out.append(Proposal(id=rejected_id, status="rejected", raw_output=raw, rejections=[
                Rejection(reason="quote-not-found",
                          detail=f"{s.quote[:120]!r} is not in turn {s.turn}")], **common))
            continue
        span = TargetSpan(turn=s.turn, start=at[0], end=at[1], text=text[at[0]:at[1]])
        sid = span_id(conv.id, span)
        if sid in seen:
            out.append(Proposal(id=rejected_id, status="rejected", raw_output=raw, span=span,
                                rejections=[Rejection(reason="duplicate-span", detail=sid)],
                                **common))
            continue
        seen.add(sid)
        check = build_graph(conv, span, s.edges, s.dependency_type, record=sid)
        if check.ok:
            out.append(Proposal(id=sid, span=span, graph=check.graph, **common))
        else:
            out.append(Proposal(id=rejected_id, status="rejected", span=span, graph=check.graph,
                                rejections=check.rejections, raw_output=raw, **common))
    return out


def _edge_changes(before: ProvenanceGraph | None, after: ProvenanceGraph) -> list[str]:
    old = before.pairs() if before else set()
    new = after.pairs()
    return ([f"added edge {c}->{p}" for c, p in sorted(new - old)]
            + [f"removed edge {c}->{p}" for c, p in sorted(old - new)])


def candidate_from_answer(
    conv: Conversation,
    proposal: Proposal,
    raw: str,
    finish_reason: str | None,
    annotator: Annotator,
) -> Candidate:
    """The Candidate record of one verify answer (``status`` rejected when checks fail)."""
    assert proposal.span is not None and proposal.status == "ok", "only ok proposals are verified"
    span = proposal.span
    sid = proposal.id
    base = dict(conversation_id=conv.id, span=span, annotator=annotator,
                proposal_annotator=proposal.annotator, created_at=now())
    answer, parse_rejections = parse_answer(raw, finish_reason, VerifyOut)
    if answer is None:
        return Candidate(id=f"{sid}/rejected", status="rejected", rejections=parse_rejections,
                         raw_output=raw, dependency_type=proposal.dependency_type, **base)
    check = build_graph(conv, span, answer.edges, answer.dependency_type,
                        primed_by=answer.primed_by, record=sid)
    dtype = DependencyType(answer.dependency_type)
    changes = list(check.notes)
    if dtype is not DependencyType.HALLUCINATION and check.ok:
        # The type of a supported span follows from its graph's shape (design.md section 3);
        # a disagreement is corrected and recorded rather than trusted.
        shape = infer_dependency_type(check.graph, conv)
        if shape is not dtype:
            changes.append(f"type {dtype.value} -> {shape.value} (the verified graph's shape)")
            dtype = shape
    if proposal.dependency_type is not None and proposal.dependency_type is not dtype:
        changes.append(f"type proposed {proposal.dependency_type.value}, verified {dtype.value}")
    changes += _edge_changes(proposal.graph, check.graph)
    common = dict(dependency_type=dtype, graph=check.graph, confidence=answer.confidence,
                  rationale=answer.rationale, changes=changes, **base)
    if not check.ok:
        return Candidate(id=f"{sid}/rejected", status="rejected", rejections=check.rejections,
                         raw_output=raw, **common)
    return Candidate(id=sid, **common)
