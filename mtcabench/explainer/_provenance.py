"""What both trace outputs (OpenTelemetry telemetry, Phoenix annotations) say about a graph:
the turns' spans, each edge's label, score and evidence, the graph's id and confidence, and
the tree in a few lines. Read from an explanation's record (``explain.json``) and its
conversation, so that the two outputs say the same thing in the same words.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from mtcabench.explainer._output import excerpt, quote
from mtcabench.model import Conversation, Edge, EdgeKind, ExplainedSpan, ProvenanceGraph, Role

#: Link types (the OpenTelemetry GenAI proposal for causal links between spans, a link's
#: ``gen_ai.attribution.link_type``): a content edge (the child used what the parent turn
#: said), a structural edge (a tool result answers the call the parent turn issued).
INFORMED_BY = "INFORMED_BY"
CAUSED_BY_GENERATION = "CAUSED_BY_GENERATION"
#: How many edges the few-line tree shows (the rest are counted).
TREE_LINES = 8


@dataclass(frozen=True)
class SpanRef:
    """A span of an agent's trace, as OTLP/JSON and Phoenix write its ids (lowercase hex)."""

    trace_id: str
    span_id: str


def turn_spans(conversation: Conversation) -> list[SpanRef] | None:
    """Per turn, the span of the agent's trace it was read from (the OpenTelemetry reader's
    ``metadata.otel_spans``); None for a conversation not read from a trace."""
    spans = conversation.metadata.get("otel_spans")
    if not isinstance(spans, list) or len(spans) != len(conversation.turns):
        return None
    return [SpanRef(str(s["trace_id"]), str(s["span_id"])) for s in spans]


def graph_id(span: ExplainedSpan, method: str) -> str:
    """The id of one graph of an explanation: its span's id and the method."""
    return f"{span.span_id}#{method}"


def turn_label(conversation: Conversation, index: int) -> str:
    """``turn 3 tool get_order``: a turn as a label (a tool result named by its tool)."""
    turn = conversation.turns[index]
    name = f" {excerpt(turn.name, 40)}" if turn.role is Role.TOOL and turn.name else ""
    return f"turn {index} {turn.role.value}{name}"


def link_type(edge: Edge) -> str:
    return CAUSED_BY_GENERATION if edge.kind is EdgeKind.STRUCTURAL else INFORMED_BY


def evidence(conversation: Conversation, edge: Edge, focus: str = "") -> str:
    """The edge's evidence in one line: the parent's best sentence quoted, a structural
    edge's call, else the parent's first characters."""
    parent = conversation.turns[edge.parent]
    if edge.kind is EdgeKind.STRUCTURAL:
        child = conversation.turns[edge.child]
        return f"answers the call {excerpt(child.name or child.tool_call_id or '?', 40)} " \
               f"issued by turn {edge.parent}"
    if edge.sentences:
        best = edge.sentences[0]
        return "\u201c" + quote(parent.text[best.start:best.end], focus) + "\u201d"
    if edge.evidence is not None:
        return "\u201c" + quote(edge.evidence.quote, focus) + "\u201d"
    return excerpt(parent.text, 72)


def confidence(graph: ProvenanceGraph) -> float | None:
    """The graph's confidence: the share of the span's attribution that its traced parents
    account for, the sum of the scores of the target's own content edges (turn shares, so
    between 0 and 1; 0 when nothing passed the threshold). None when those edges carry no
    score (a model-free method)."""
    direct = [e for e in graph.edges if e.child == graph.target and e.kind is EdgeKind.CONTENT]
    if not direct:
        return 0.0
    scores = [e.score for e in direct if e.score is not None]
    if not scores:
        return None
    return round(min(1.0, max(0.0, sum(scores))), 6)


def ordered_edges(graph: ProvenanceGraph) -> Iterator[tuple[int, Edge]]:
    """The graph's edges depth first from the target (depth, edge), best first under each
    turn, each parent followed once: the order of the terminal's tree."""
    out: dict[int, list[Edge]] = {}
    for e in graph.edges:
        out.setdefault(e.child, []).append(e)
    for edges in out.values():
        edges.sort(key=lambda e: (e.kind is not EdgeKind.CONTENT, -(e.score or 0), e.parent))
    seen = {graph.target}

    def walk(turn: int, depth: int) -> Iterator[tuple[int, Edge]]:
        for e in out.get(turn, []):
            yield depth, e
            if e.parent not in seen:
                seen.add(e.parent)
                yield from walk(e.parent, depth + 1)

    yield from walk(graph.target, 0)


def edge_line(conversation: Conversation, edge: Edge, focus: str) -> str:
    how = f"{edge.score:.2f}" if edge.score is not None else "issued the call"
    return f"{turn_label(conversation, edge.parent)}  {how}  {evidence(conversation, edge, focus)}"


def tree_text(conversation: Conversation, span: ExplainedSpan, method: str) -> str:
    """The graph as a few lines of plain text: the span, then each edge indented under the
    turn that depends on it (at most :data:`TREE_LINES` edges)."""
    graph = span.graphs[method]
    lines = [f"turn {span.span.turn} assistant  {method}  \u201c{excerpt(span.span.text, 48)}\u201d"]
    edges = list(ordered_edges(graph))
    for depth, e in edges[:TREE_LINES]:
        focus = span.span.text if e.child == span.span.turn else conversation.turns[e.child].text
        lines.append("  " * (depth + 1) + edge_line(conversation, e, focus))
    if len(edges) > TREE_LINES:
        lines.append(f"  ... and {len(edges) - TREE_LINES} more edge(s) in explain.json")
    if not edges:
        lines.append("  no earlier turn passed the threshold: nothing traced")
    return "\n".join(lines)
