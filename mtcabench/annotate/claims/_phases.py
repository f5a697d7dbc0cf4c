"""The two LLM phases on claims: ``claim-propose`` gives one claim's graph, ``claim-verify``
checks it edge by edge (``annotate run --phases claim-propose,claim-verify``).

A unit of ``claim-propose`` is one claim target: the claims a targets file names for the
conversation (``--targets``: the annotated set's pass-1 lines, or any lines with
``conversation_id``, ``turn``, ``text`` and an optional ``occurrence``), else the claims the
deterministic proposer finds (:func:`~._propose.propose_claims`). Unlike ``propose``, the model
does not choose the span: a claim is a clause given to it, and it answers the claim's kind, its
dependency type and its graph, every edge with an evidence quote, following the written guide
(docs/claims.md) as its prompt states it. ``claim-verify`` is ``verify`` with a prompt of its
own (the guide's edge rules, the kind to confirm); both phases' records are claims
(``span_kind`` claim, ``claim_kind`` as answered), checked like every LLM record
(:mod:`mtcabench.annotate.phases.checks`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from mtcabench.annotate.claims._propose import propose_claims
from mtcabench.annotate.llm.wire import Answer
from mtcabench.annotate.phases.base import Phase
from mtcabench.annotate.phases.checks import build_graph, now, parse_answer
from mtcabench.annotate.phases.registry import register_phase
from mtcabench.annotate.phases.schema import MAX_EDGES, AnswerModel, DependencyTypeOut, EdgeOut
from mtcabench.annotate.phases.transcript import render_transcript
from mtcabench.annotate.phases.verify import VerifyOut, VerifyPhase, candidate_from_answer
from mtcabench.errors import InputError
from mtcabench.graph import resolve_span
from mtcabench.io import iter_json_lines
from mtcabench.model import (
    Candidate,
    ClaimKind,
    Conversation,
    DependencyType,
    Proposal,
    SpanKind,
    TargetSpan,
    span_id,
)

ClaimKindOut = Literal[tuple(k.value for k in ClaimKind)]  # type: ignore[valid-type]


@dataclass(frozen=True)
class ClaimTarget:
    """A claim named in a targets file by its text (and which occurrence in the turn) or by
    its offsets, and where it was read."""

    turn: int
    text: str
    occurrence: int
    path: Path
    line: int
    start: int | None = None

    def span(self, conv: Conversation) -> TargetSpan:
        """The claim's span in ``conv``; one line naming the targets file's line otherwise."""
        try:
            if self.start is None:
                return resolve_span(conv, self.turn, self.text, self.occurrence)
            span = TargetSpan(turn=self.turn, start=self.start,
                              end=self.start + len(self.text), text=self.text)
            if not (0 <= self.turn < len(conv.turns)) or conv.turns[self.turn].content[
                    span.start:span.end] != self.text:
                raise ValueError(f"the text is not at {span.start}-{span.end} of turn "
                                 f"{self.turn}'s content")
            return span
        except ValueError as exc:
            raise InputError.at(self.path, f"{conv.id}: {exc}", line=self.line) from None


_TARGET_NEEDS = ("a claim target needs conversation_id (a string) and either turn (an index), "
                 "text (the claim, copied from the turn) and optionally occurrence (1 or "
                 "more), or a span with turn, start and text (the proposer's lines)")


def _target(obj: dict, path: Path, lineno: int) -> tuple[str, ClaimTarget]:
    cid, span = obj.get("conversation_id"), obj.get("span")
    if isinstance(span, dict):  # a proposer's or any stage's record: the span by its offsets
        turn, text, start, occurrence = (span.get("turn"), span.get("text"), span.get("start"),
                                         1)
    else:
        turn, text, start, occurrence = (obj.get("turn"), obj.get("text"), None,
                                         obj.get("occurrence", 1))
    if not (isinstance(cid, str) and cid and isinstance(text, str) and text
            and type(turn) is int and turn >= 0 and type(occurrence) is int and occurrence >= 1
            and (start is None or (type(start) is int and start >= 0))):
        raise InputError.at(path, _TARGET_NEEDS, line=lineno)
    return cid, ClaimTarget(turn, text, occurrence, path, lineno, start)


def read_claim_targets(path: str | Path) -> dict[str, tuple[ClaimTarget, ...]]:
    """The claim targets of a JSON Lines file, by conversation id (a target named twice once):
    lines naming a claim by its text (the annotated set's pass-1 lines) or records holding a
    ``span`` (``annotate claims propose``'s)."""
    path = Path(path)
    out: dict[str, dict[tuple, ClaimTarget]] = {}
    for lineno, obj in iter_json_lines(path):
        cid, target = _target(obj, path, lineno)
        key = (target.turn, target.text, target.occurrence, target.start)
        out.setdefault(cid, {}).setdefault(key, target)
    if not out:
        raise InputError.at(path, "no claim targets: the file is empty")
    return {cid: tuple(targets.values()) for cid, targets in out.items()}


def claim_targets(conv: Conversation, given: Any) -> list[tuple[TargetSpan, ClaimKind | None]]:
    """The claims a run asks about in ``conv``: those ``given`` names for it (a mapping from
    :func:`read_claim_targets`; a conversation it does not name has none), else the proposer's,
    each with the kind its wording says."""
    if given is None:
        return [(p.span, p.claim_kind) for p in propose_claims(conv)]
    return [(t.span(conv), None) for t in given.get(conv.id, ())]


class ClaimOut(AnswerModel):
    """The answer of ``claim-propose`` for one claim."""

    claim_kind: ClaimKindOut
    dependency_type: DependencyTypeOut
    edges: list[EdgeOut] = Field(max_length=MAX_EDGES)
    rationale: str = Field(description="One short sentence.")


class ClaimVerifyOut(VerifyOut):
    """The answer of ``claim-verify``: verify's, and the claim's kind confirmed."""

    claim_kind: ClaimKindOut


def _edge_lines(proposal: Proposal) -> str:
    assert proposal.graph is not None
    return "\n".join(
        f"- {e.child} -> {e.parent}"
        + (f" ({e.kind.value})" if e.kind.value != "content" else "")
        + (f': "{e.evidence.quote}"' if e.evidence else "")
        for e in proposal.graph.edges) or "(none)"


@register_phase
class ClaimProposePhase(Phase):
    """Conversations in, one Proposal per claim target out (a claim's graph, its kind)."""

    name = "claim-propose"
    output = ClaimOut
    consumes = None
    produces = Proposal
    max_tokens = 768
    compact_max_tokens = 384

    def units(self, conv: Conversation, upstream: Any = None
              ) -> list[tuple[TargetSpan, ClaimKind | None]]:
        return claim_targets(conv, self.settings.claim_targets)

    def messages(self, conv: Conversation, unit: tuple[TargetSpan, ClaimKind | None]
                 ) -> list[dict[str, str]]:
        span, _ = unit
        return self.template.render(
            transcript=render_transcript(conv, span.turn, self.settings.limits),
            turn=span.turn, claim=span.text)

    def parse(self, conv: Conversation, unit: tuple[TargetSpan, ClaimKind | None],
              answer: Answer) -> list[Proposal]:
        return [proposal_from_claim_answer(conv, unit[0], answer.content, answer.finish_reason,
                                           self.annotator)]


def proposal_from_claim_answer(conv: Conversation, span: TargetSpan, raw: str,
                               finish_reason: str | None, annotator) -> Proposal:
    """The Proposal record of one ``claim-propose`` answer (rejected, with every reason and
    the raw answer, when a check fails)."""
    sid = span_id(conv.id, span)
    base = dict(conversation_id=conv.id, annotator=annotator, created_at=now(), span=span)
    answer, rejections = parse_answer(raw, finish_reason, ClaimOut)
    if answer is None:
        return Proposal(id=f"{sid}/rejected", status="rejected", rejections=rejections,
                        raw_output=raw, **base)
    check = build_graph(conv, span, answer.edges, answer.dependency_type, record=sid)
    common = dict(dependency_type=DependencyType(answer.dependency_type),
                  rationale=answer.rationale, graph=check.graph, span_kind=SpanKind.CLAIM,
                  claim_kind=ClaimKind(answer.claim_kind), **base)
    if not check.ok:
        return Proposal(id=f"{sid}/rejected", status="rejected", rejections=check.rejections,
                        raw_output=raw, **common)
    return Proposal(id=sid, **common)


@register_phase
class ClaimVerifyPhase(VerifyPhase):
    """Claim proposals in, one claim Candidate per proposal out."""

    name = "claim-verify"
    output = ClaimVerifyOut

    def messages(self, conv: Conversation, unit: Proposal) -> list[dict[str, str]]:
        assert unit.span is not None and unit.graph is not None
        return self.template.render(
            transcript=render_transcript(conv, unit.span.turn, self.settings.limits),
            turn=unit.span.turn, claim=unit.span.text,
            claim_kind=unit.claim_kind.value if unit.claim_kind else "other",
            dependency_type=unit.dependency_type.value if unit.dependency_type else "?",
            edges=_edge_lines(unit))

    def parse(self, conv: Conversation, unit: Proposal, answer: Answer) -> list[Candidate]:
        cand = candidate_from_answer(conv, unit, answer.content, answer.finish_reason,
                                     self.annotator, output=ClaimVerifyOut)
        verified, _ = parse_answer(answer.content, answer.finish_reason, ClaimVerifyOut)
        kind = ClaimKind(verified.claim_kind) if verified is not None else unit.claim_kind
        changes = list(cand.changes)
        if verified is not None and unit.claim_kind is not None and kind is not unit.claim_kind:
            changes.append(f"claim kind proposed {unit.claim_kind.value}, verified {kind.value}")
        return [cand.model_copy(update=dict(span_kind=SpanKind.CLAIM,
                                            claim_kind=kind or ClaimKind.OTHER,
                                            changes=changes))]


__all__ = [
    "ClaimOut",
    "ClaimProposePhase",
    "ClaimTarget",
    "ClaimVerifyOut",
    "ClaimVerifyPhase",
    "claim_targets",
    "proposal_from_claim_answer",
    "read_claim_targets",
]
