"""The deterministic checks every phase's answer goes through: parsing and graph building.

Nothing the model says is trusted as is. An answer must parse against its phase's model;
every edge's evidence must be found in the parent turn (see
:mod:`mtcabench.annotate.phases.quotes` for the one normalisation allowed); edges out of tool
turns are replaced by the structural edge code adds; the graph must pass every rule of
:func:`mtcabench.graph.check_graph`. The phases turn the results into records: an answer that
fails is kept as a ``rejected`` record with every reason and the raw output.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from mtcabench.annotate.phases.quotes import find_quote
from mtcabench.annotate.phases.schema import EdgeOut
from mtcabench.graph import check_graph, with_structural_edges
from mtcabench.io import JSONError, format_validation_error, loads
from mtcabench.model import (
    Conversation,
    DependencyType,
    Edge,
    Evidence,
    ProvenanceGraph,
    Rejection,
    Role,
    TargetSpan,
)

M = TypeVar("M", bound=BaseModel)

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
    return datetime.now(timezone.utc)


def parse_answer(raw: str, finish_reason: str | None, model: type[M]
                 ) -> tuple[M | None, list[Rejection]]:
    """The parsed answer, or None with the reasons it could not be parsed."""
    try:
        data = loads(raw)  # a model's answer: deep nesting is a rejection, not a crash
    except JSONError as exc:
        reason = "truncated" if finish_reason == "length" else "invalid-json"
        where = f" at line {exc.line}, column {exc.column}" if exc.line else ""
        return None, [Rejection(reason=reason, detail=f"{exc.reason}{where}")]
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
