"""Automatic acceptance: candidates as decisions with no reviewer, marked as such.

For runs without a person to review (the README's sample run): every valid candidate is
accepted as proposed, with ``decision_source = "auto"`` and no reviewer, so that a release
built from these decisions says, span by span, that no human checked them. Candidates that
were rejected by annotation or whose graph breaks a rule are left out and reported.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from mtcabench.io import check_outputs_are_not_inputs, load_conversations, write_records
from mtcabench.model import (
    Candidate,
    Conversation,
    DecisionSource,
    ReviewDecision,
    Verdict,
)
from mtcabench.review._push import read_candidates, reviewable

AUTO_COMMENT = "accepted automatically, without human review"


@dataclass
class AutoAcceptReport:
    """The decisions made, and (span id, why) for the candidates left out."""

    decisions: list[ReviewDecision]
    left_out: list[tuple[str, str]] = field(default_factory=list)


def auto_accept(
    candidates: Iterable[Candidate],
    conversations: Mapping[str, Conversation],
    *,
    decided_at: datetime | None = None,
    source: str = "candidates",
) -> AutoAcceptReport:
    """Accept every valid candidate as proposed, as an automatic (non-human) decision."""
    when = decided_at or datetime.now(timezone.utc)
    ok, left_out = reviewable(candidates, conversations, source=source)
    decisions = []
    for c in ok:
        assert c.span is not None and c.graph is not None and c.dependency_type is not None
        decisions.append(ReviewDecision(
            id=c.id, conversation_id=c.conversation_id, span=c.span,
            dependency_type=c.dependency_type, graph=c.graph,
            verdict=Verdict.ACCEPT, decision_source=DecisionSource.AUTO, reviewer=None,
            decided_at=when, edited=False, edit=None, comment=AUTO_COMMENT,
            annotator=c.annotator, review_task=None,
            origin=c.origin, counterfactual=c.counterfactual,
            span_kind=c.span_kind, claim_kind=c.claim_kind,
        ))
    return AutoAcceptReport(decisions=decisions, left_out=left_out)


def auto_accept_file(
    candidates_path: str | Path,
    conversations_path: str | Path,
    out_path: str | Path,
    *,
    decided_at: datetime | None = None,
) -> AutoAcceptReport:
    """:func:`auto_accept` on files; writes the decisions atomically to ``out_path``."""
    check_outputs_are_not_inputs([candidates_path, conversations_path], [out_path])
    conversations = load_conversations(conversations_path)
    candidates = read_candidates(candidates_path)
    report = auto_accept(candidates, conversations, decided_at=decided_at,
                         source=str(candidates_path))
    write_records(out_path, report.decisions)
    return report
