"""Phase 2, verify: check one proposed graph, correct it, and give a confidence.

A unit is one ``ok`` proposal. The model sees the transcript up to the span's turn and the
proposed edges with their evidence, and answers with the corrected graph, the type, a
confidence and a rationale (for a hallucination, the turns that primed the error).
:func:`candidate_from_answer` checks it: a supported span's type follows its graph's shape,
and every change relative to the proposal is recorded.
"""

from __future__ import annotations

from pydantic import Field

from mtcabench.annotate.llm.wire import Answer
from mtcabench.annotate.phases.base import Phase
from mtcabench.annotate.phases.checks import build_graph, now, parse_answer
from mtcabench.annotate.phases.registry import register_phase
from mtcabench.annotate.phases.schema import MAX_EDGES, AnswerModel, DependencyTypeOut, EdgeOut
from mtcabench.annotate.phases.transcript import render_transcript
from mtcabench.graph import infer_dependency_type
from mtcabench.model import (
    Annotator,
    Candidate,
    Conversation,
    DependencyType,
    Proposal,
    ProvenanceGraph,
)


class VerifyOut(AnswerModel):
    """Phase 2 answer for one span: the corrected graph, type, confidence and rationale."""

    dependency_type: DependencyTypeOut
    edges: list[EdgeOut] = Field(max_length=MAX_EDGES)
    primed_by: list[int] = Field(max_length=MAX_EDGES,
                                 description="For a hallucination: turns that primed the error.")
    confidence: float = Field(ge=0, le=1)
    rationale: str = Field(description="A short rationale.")


@register_phase
class VerifyPhase(Phase):
    """Proposals in, one Candidate record per proposal out."""

    name = "verify"
    output = VerifyOut
    consumes = Proposal
    produces = Candidate
    max_tokens = 512
    compact_max_tokens = 320

    def units(self, conv: Conversation, upstream: Proposal) -> list[Proposal]:
        return [upstream] if upstream.status == "ok" else []

    def messages(self, conv: Conversation, unit: Proposal) -> list[dict[str, str]]:
        assert unit.span is not None and unit.graph is not None
        span = unit.span
        edges = [
            f"- {e.child} -> {e.parent}"
            + (f' ({e.kind.value})' if e.kind.value != "content" else "")
            + (f': "{e.evidence.quote}"' if e.evidence else "")
            for e in unit.graph.edges
        ]
        return self.template.render(
            transcript=render_transcript(conv, span.turn, self.settings.limits),
            turn=span.turn,
            span=span.text,
            dependency_type=unit.dependency_type.value if unit.dependency_type else "?",
            edges="\n".join(edges) or "(none)",
        )

    def parse(self, conv: Conversation, unit: Proposal, answer: Answer) -> list[Candidate]:
        return [candidate_from_answer(conv, unit, answer.content, answer.finish_reason,
                                      self.annotator)]


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
    output: type[VerifyOut] = VerifyOut,
) -> Candidate:
    """The Candidate record of one verify answer (``status`` rejected when checks fail);
    ``output`` is the answer model of a phase that asks for more (``claim-verify``)."""
    assert proposal.span is not None and proposal.status == "ok", "only ok proposals are verified"
    span = proposal.span
    sid = proposal.id
    base = dict(conversation_id=conv.id, span=span, annotator=annotator,
                proposal_annotator=proposal.annotator, created_at=now())
    answer, parse_rejections = parse_answer(raw, finish_reason, output)
    if answer is None:
        return Candidate(id=f"{sid}/rejected", status="rejected", rejections=parse_rejections,
                         raw_output=raw, dependency_type=proposal.dependency_type, **base)
    check = build_graph(conv, span, answer.edges, answer.dependency_type,
                        primed_by=answer.primed_by, record=sid)
    dtype = DependencyType(answer.dependency_type)
    changes = list(check.notes)
    if dtype is not DependencyType.HALLUCINATION and check.ok:
        # The type of a supported span follows from its graph's shape (the target's own
        # parents: an assistant turn makes it chained, two exogenous turns multi-source;
        # infer_dependency_type); a disagreement is corrected and recorded rather than trusted.
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
