"""The lineage rules as an attribution method: the string-match floor.

Given any target span (a value or a claim), the values the rules know that stand inside it are
traced backwards exactly as the annotator traces a copied value (``_tracing``), and the graph
is the union of their chains: what copying alone explains. A span that copies nothing (most
claims) gets an empty graph. Every score is read against it (``baselines.FLOORS``): what a
method adds over string matching shows beside it in every table.
"""

from __future__ import annotations

from mtcabench.lineage._config import LineageConfig, LineageSummary
from mtcabench.lineage._tracing import Tracer
from mtcabench.model import Conversation, Edge, EdgeKind, ProvenanceGraph, TargetSpan


class StringMatch:
    """The string-match graphs of one conversation's spans (its values indexed once)."""

    def __init__(self, conversation: Conversation, config: LineageConfig | None = None):
        self.tracer = Tracer(conversation, config or LineageConfig(), LineageSummary())

    def graph(self, span: TargetSpan) -> ProvenanceGraph:
        t = self.tracer
        seeds = [(span.turn, key) for start, end, key in t.content_matches(span.turn)
                 if start < span.end and end > span.start
                 and t.read_from(span.turn, key) is not None]
        edges, _ = t.trace(span.turn, seeds) if seeds else ({}, [])
        if not edges:  # nothing copied, or a graph past MAX_GRAPH_TURNS: no prediction
            return ProvenanceGraph(target=span.turn, nodes=[span.turn], edges=[])
        graph = t.graph(span.turn, edges)
        # A rule is certain of its choice: content edges score 1.0, as the other floors'.
        graph.edges = [Edge(child=e.child, parent=e.parent, kind=e.kind,
                            score=None if e.kind is EdgeKind.STRUCTURAL else 1.0)
                       for e in graph.edges]
        return graph


def string_match_graph(conversation: Conversation, span: TargetSpan) -> ProvenanceGraph:
    """The string-match floor's graph of one span (see the module docstring)."""
    return StringMatch(conversation).graph(span)
