"""Phase 1, propose: choose target spans in a group of assistant turns and give their graphs.

A unit is a group of consecutive target turns of one conversation (assistant turns with
content of their own; turns that only call tools stay in the transcript and can be
intermediate nodes); its prompt shows the turns up to its last target. The model quotes each
span exactly, gives its dependency type and its graph, every edge with an evidence quote;
:func:`proposals_from_answer` checks all of it (offsets are ours, computed from the quote).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from mtcabench.annotate.llm.wire import Answer
from mtcabench.annotate.phases.base import Phase
from mtcabench.annotate.phases.checks import build_graph, now, parse_answer
from mtcabench.annotate.phases.quotes import find_quote
from mtcabench.annotate.phases.registry import register_phase
from mtcabench.annotate.phases.schema import (
    MAX_EDGES,
    MAX_SPANS,
    AnswerModel,
    DependencyTypeOut,
    EdgeOut,
)
from mtcabench.annotate.phases.transcript import group_targets, render_transcript
from mtcabench.model import (
    Annotator,
    Conversation,
    DependencyType,
    Proposal,
    Rejection,
    TargetSpan,
    span_id,
)


class SpanOut(AnswerModel):
    """One target span proposed in phase 1."""

    turn: int = Field(description="Index of the assistant turn holding the span.")
    quote: str = Field(description="The span, copied exactly from that turn.")
    dependency_type: DependencyTypeOut
    edges: list[EdgeOut] = Field(max_length=MAX_EDGES)
    rationale: str = Field(description="One short sentence.")


class ProposeOut(AnswerModel):
    """Phase 1 answer: the spans chosen in the target turns."""

    spans: list[SpanOut] = Field(max_length=MAX_SPANS)


def propose_unit_id(conv_id: str, targets: tuple[int, ...]) -> str:
    """The stable id of one propose request: the conversation and its target-turn range."""
    return f"{conv_id}#propose:{targets[0]}-{targets[-1]}"


@register_phase
class ProposePhase(Phase):
    """Conversations in, Proposal records out (one request per group of target turns)."""

    name = "propose"
    output = ProposeOut
    consumes = None
    produces = Proposal
    max_tokens = 1024
    compact_max_tokens = 512

    def units(self, conv: Conversation, upstream: Any = None) -> list[tuple[int, ...]]:
        return group_targets(conv, self.settings.targets_per_request)

    def messages(self, conv: Conversation, unit: tuple[int, ...]) -> list[dict[str, str]]:
        return self.template.render(
            transcript=render_transcript(conv, unit[-1], self.settings.limits),
            targets=", ".join(map(str, unit)),
            max_spans=self.settings.spans_per_request,
        )

    def parse(self, conv: Conversation, unit: tuple[int, ...], answer: Answer) -> list[Proposal]:
        return proposals_from_answer(conv, propose_unit_id(conv.id, unit), unit, answer.content,
                                     answer.finish_reason, self.annotator)


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


