"""The lineage rules' tests' one way to propose: every graph checked, every quote found."""

from __future__ import annotations

from mtcabench.lineage import LineageSummary, propose_lineage
from mtcabench.graph import check_graph


def propose_checked(conv, config=None):
    """Candidates and summary of one conversation; every graph passes ``check_graph`` and
    every edge's evidence quote is the text at its offsets in the parent turn."""
    summary = LineageSummary()
    cands = list(propose_lineage([conv], config, summary=summary))
    for c in cands:
        assert check_graph(c.graph, conv, c.span, record=c.id) == []
        for e in c.graph.edges:
            assert conv.turns[e.parent].text[e.evidence.start:e.evidence.end] == e.evidence.quote
    return cands, summary


def span_texts(cands):
    """(turn, text) of each candidate's span, in order."""
    return [(c.span.turn, c.span.text) for c in cands]
