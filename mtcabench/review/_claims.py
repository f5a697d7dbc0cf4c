"""Pass 2 of the annotated claims set: a second person's checks as review decisions.

A person who did not write a claim's graph checks it edge by edge (a
:class:`~mtcabench.model.ClaimCheck` line); each check is the decision a reviewer makes on the
pass-1 candidate (human, the checker as reviewer, what was edited), and the two passes'
agreement is measured here (edge F1, graphs changed, type and kind changes). A check by the
claim's own annotator is refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from mtcabench.errors import InputError
from mtcabench.review._annotations import graph_edit
from mtcabench.graph import check_graph, graph_from_pairs, resolve_span
from mtcabench.io import format_validation_error, iter_json_lines
from mtcabench.model import (
    Candidate,
    ClaimCheck,
    Conversation,
    DecisionSource,
    ReviewDecision,
    SpanKind,
    Verdict,
    span_id,
)


def read_checks(path: str | Path, conversations: dict[str, Conversation],
                candidates: dict[str, Candidate]) -> list[ReviewDecision]:
    """Pass-2 lines as review decisions on the pass-1 candidates (``candidates`` by id)."""
    return [d for _, d in iter_checks(path, conversations, candidates)]


def iter_checks(path: str | Path, conversations: dict[str, Conversation],
                candidates: dict[str, Candidate]) -> Iterator[tuple[int, ReviewDecision]]:
    """(line number, decision) of each pass-2 line, as :func:`read_checks` reads them.

    A rejected claim keeps its pass-1 graph, for the record, as a reviewer's reject in Label
    Studio does (`review pull`); the check's own edges stay in its file, its notes say why.
    """
    path = Path(path)
    out: dict[str, ReviewDecision] = {}
    for lineno, obj in iter_json_lines(path):
        try:
            c = ClaimCheck.model_validate(obj)
        except ValidationError as exc:
            raise InputError.at(path, format_validation_error(exc), line=lineno) from None
        conv = conversations.get(c.conversation_id)
        if conv is None:
            raise InputError.at(path, f"conversation {c.conversation_id!r} is not in the "
                                "conversations given", line=lineno)
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
        graph = (cand.graph if accepted or c.verdict is Verdict.REJECT
                 else graph_from_pairs(conv, c.turn, c.edges))
        dtype = cand.dependency_type if accepted or c.type is None else c.type
        kind = cand.claim_kind if accepted or c.claim_kind is None else c.claim_kind
        if c.verdict is not Verdict.REJECT:
            violations = check_graph(graph, conv, span, record=rid)
            if violations:
                raise InputError.at(path, "; ".join(f"{v.rule}: {v.detail}" for v in violations),
                                    line=lineno, record=rid)
        edit = graph_edit(cand.graph, cand.dependency_type, graph, dtype)
        edited = edit is not None or kind is not cand.claim_kind
        verdict = c.verdict
        if verdict is Verdict.ACCEPT_WITH_EDITS and not edited:
            verdict = Verdict.ACCEPT  # "edits" that changed nothing are an acceptance
        out[rid] = d = ReviewDecision(
            id=rid, conversation_id=conv.id, span=span, dependency_type=dtype, graph=graph,
            verdict=verdict, decision_source=DecisionSource.HUMAN, reviewer=c.checker,
            edited=edited and verdict is not Verdict.REJECT,
            edit=edit if verdict is not Verdict.REJECT else None,
            comment=c.notes or None, annotator=cand.annotator,
            span_kind=SpanKind.CLAIM, claim_kind=kind)
        yield lineno, d


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
