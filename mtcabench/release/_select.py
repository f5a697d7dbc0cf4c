"""Which reviewed decisions make the release: the rule that turns decisions into gold spans.

A span may carry several decisions (two reviewers, a reviewer who changed their mind, an
automatic acceptance later reviewed by a person). The rule, also printed in the card:

1. Each voter counts once, with their latest decision (by ``decided_at``, then by position
   in the file). A voter is a named reviewer; all automatic decisions are one voter, and so
   are all human decisions that name no reviewer.
2. People outrank the machine: when any human decision exists, automatic ones are ignored.
3. The span is released when accepting votes (accept, accept_with_edits) outnumber rejecting
   ones; on a tie the latest counted decision settles it.
4. The gold graph, type and verdict are those of the latest accepting counted decision; the
   span's reviewers are the named people whose decisions counted.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import timezone

from mtcabench.graph import Violation
from mtcabench.model import DecisionSource, ReviewDecision, Verdict

#: The rule as Markdown, for the card and release.json.
SELECTION_RULE = __doc__.split("rule, also printed in the card:", 1)[1].strip().replace("``", "`")

_ACCEPTING = (Verdict.ACCEPT, Verdict.ACCEPT_WITH_EDITS)


@dataclass
class Outcome:
    """What the rule decided for one span."""

    span_id: str
    released: bool
    chosen: ReviewDecision | None  # the accepting decision that gives the gold, if released
    counted: list[ReviewDecision]  # one per voter, after rule 2
    all_decisions: list[ReviewDecision]

    @property
    def reviewers(self) -> list[str]:
        return sorted({d.reviewer for d in self.counted
                       if d.decision_source is DecisionSource.HUMAN and d.reviewer})

    @property
    def split(self) -> bool:
        """True when the counted decisions disagree (accepting and rejecting votes)."""
        return len({d.verdict in _ACCEPTING for d in self.counted}) > 1


@dataclass
class Selection:
    """The rule applied to a whole reviewed file."""

    outcomes: list[Outcome] = field(default_factory=list)
    failures: list[Violation] = field(default_factory=list)
    decisions: int = 0

    @property
    def released(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.released]


def _order_key(item: tuple[int, ReviewDecision]) -> tuple[float, int]:
    line, d = item
    if d.decided_at is None:
        return (float("-inf"), line)
    at = d.decided_at if d.decided_at.tzinfo else d.decided_at.replace(tzinfo=timezone.utc)
    return (at.timestamp(), line)


def decide(span_id: str, decisions: list[tuple[int, ReviewDecision]]) -> Outcome:
    """Apply the selection rule to the decisions of one span (with their line numbers)."""
    ordered = sorted(decisions, key=_order_key)
    latest: dict[tuple[str, str], tuple[int, ReviewDecision]] = {}
    for item in ordered:  # later items overwrite: each voter's latest decision stays
        d = item[1]
        latest[(d.decision_source.value, d.reviewer or "")] = item
    counted_items = sorted(latest.values(), key=_order_key)
    if any(d.decision_source is DecisionSource.HUMAN for _, d in counted_items):
        counted_items = [it for it in counted_items
                         if it[1].decision_source is DecisionSource.HUMAN]
    counted = [d for _, d in counted_items]
    accepting = [d for d in counted if d.verdict in _ACCEPTING]
    rejecting = len(counted) - len(accepting)
    if len(accepting) != rejecting:
        released = len(accepting) > rejecting
    else:
        released = counted[-1].verdict in _ACCEPTING
    return Outcome(span_id, released, accepting[-1] if released else None, counted,
                   [d for _, d in ordered])


def select(decisions: list[tuple[int, ReviewDecision]]) -> Selection:
    """Group decisions by span id, check that each id names one span, and decide each span."""
    by_id: dict[str, list[tuple[int, ReviewDecision]]] = defaultdict(list)
    for item in decisions:
        by_id[item[1].id].append(item)
    sel = Selection(decisions=len(decisions))
    for sid in sorted(by_id):
        items = by_id[sid]
        shapes = {(d.conversation_id, d.span.turn, d.span.start, d.span.end, d.span.text)
                  for _, d in items}
        if len(shapes) > 1:
            lines = ", ".join(str(line) for line, _ in items)
            sel.failures.append(Violation(
                sid, "duplicate-id",
                f"id names {len(shapes)} different spans (decisions on lines {lines}); "
                "give each span its own id"))
            continue
        sel.outcomes.append(decide(sid, items))
    return sel
