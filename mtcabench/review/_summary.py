"""Review figures: acceptance, edits, rejections, and agreement between reviewers.

Rates are over decisions (one per reviewer per span). The edit rate is the share of
accepted decisions whose graph or type the reviewer changed. Agreement is measured on
spans that several reviewers decided, over every pair of their decisions: the share of
pairs with the same verdict, with the same dependency type, and the mean edge F1 between
the two reviewed graphs (pairs where both accepted).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import combinations

from rich.table import Table

from mtcabench.graph import edge_prf
from mtcabench.model import ReviewDecision, Verdict
from mtcabench.terminal import shown


@dataclass(frozen=True)
class ReviewSummary:
    """The figures printed after a pull (and stored by the release)."""

    decisions: int
    spans: int
    reviewers: int
    accepted: int
    accepted_with_edits: int
    rejected: int
    edited: int
    multi_reviewed_spans: int
    pairs: int
    verdict_agreement: float | None
    type_agreement: float | None
    mean_pair_edge_f1: float | None

    @property
    def acceptance_rate(self) -> float | None:
        return (self.accepted + self.accepted_with_edits) / self.decisions if self.decisions else None

    @property
    def edit_rate(self) -> float | None:
        kept = self.accepted + self.accepted_with_edits
        return self.edited / kept if kept else None

    def table(self, title: str = "review decisions") -> Table:
        def pct(x: float | None) -> str:
            return "n/a" if x is None else f"{100 * x:.1f}%"

        t = Table(title=shown(title), show_header=True)
        t.add_column("measure")
        t.add_column("value", justify="right")
        t.add_row("decisions (spans, reviewers)",
                  f"{self.decisions} ({self.spans} spans, {self.reviewers} reviewers)")
        t.add_row("acceptance rate", pct(self.acceptance_rate))
        t.add_row("  accept / accept with edits",
                  f"{self.accepted} / {self.accepted_with_edits}")
        t.add_row("edit rate (of accepted)", pct(self.edit_rate))
        t.add_row("rejections", str(self.rejected))
        t.add_row("spans with several reviewers", f"{self.multi_reviewed_spans} ({self.pairs} pairs)")
        t.add_row("  verdict agreement", pct(self.verdict_agreement))
        t.add_row("  dependency type agreement", pct(self.type_agreement))
        t.add_row("  mean edge F1 between reviewers",
                  "n/a" if self.mean_pair_edge_f1 is None else f"{self.mean_pair_edge_f1:.3f}")
        return t


def summarize(decisions: Iterable[ReviewDecision]) -> ReviewSummary:
    """The figures of a list of decisions (see the module docstring for definitions)."""
    decisions = list(decisions)
    verdicts = Counter(d.verdict for d in decisions)
    by_span: dict[str, list[ReviewDecision]] = defaultdict(list)
    for d in decisions:
        by_span[d.id].append(d)
    accepted = {Verdict.ACCEPT, Verdict.ACCEPT_WITH_EDITS}
    pairs = same_verdict = same_type = 0
    f1s: list[float] = []
    multi = 0
    for group in by_span.values():
        if len(group) < 2:
            continue
        multi += 1
        for a, b in combinations(group, 2):
            pairs += 1
            same_verdict += a.verdict is b.verdict
            same_type += a.dependency_type is b.dependency_type
            if a.verdict in accepted and b.verdict in accepted:
                f1s.append(edge_prf(a.graph.pairs(), b.graph.pairs())[2])
    return ReviewSummary(
        decisions=len(decisions),
        spans=len(by_span),
        reviewers=len({d.reviewer for d in decisions if d.reviewer}),
        accepted=verdicts[Verdict.ACCEPT],
        accepted_with_edits=verdicts[Verdict.ACCEPT_WITH_EDITS],
        rejected=verdicts[Verdict.REJECT],
        edited=sum(1 for d in decisions if d.edited and d.verdict in accepted),
        multi_reviewed_spans=multi,
        pairs=pairs,
        verdict_agreement=same_verdict / pairs if pairs else None,
        type_agreement=same_type / pairs if pairs else None,
        mean_pair_edge_f1=sum(f1s) / len(f1s) if f1s else None,
    )
