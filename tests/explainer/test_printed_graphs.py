"""`print(mtcabench.explain(...))` and `print(tracer.explain(...))` show the tree that
`mtcabench explain` prints (it used to be a one-line pydantic repr), and the graph is still a
ProvenanceGraph with the same fields."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import mtcabench
from mtcabench.model import EdgeKind, ProvenanceGraph

pytestmark = pytest.mark.model

LOG = Path(__file__).resolve().parents[2] / "examples" / "refund_agent.json"


def test_printed_graphs_are_the_terminal_tree(loaded):
    messages = json.loads(LOG.read_text())
    graph = mtcabench.explain(messages, span="R-99120", model=loaded)
    tracer = mtcabench.Tracer(loaded)
    for m in messages:
        tracer.add(m)
    online = tracer.explain(span="R-99120")
    tracer.close()
    for g in (graph, online):
        text = str(g)
        lines = text.splitlines()
        assert isinstance(g, ProvenanceGraph) and g.edges
        assert lines[0].startswith("turn 9 assistant") and "R-99120" in lines[0]
        assert all(f"turn {e.parent} " in text for e in g.edges)  # every edge's parent
        assert "ProvenanceGraph(" not in text and "issued the call" in text
        assert any(e.kind is EdgeKind.STRUCTURAL and e.sentences == [] for e in g.edges)
        assert g.__rich__().label is not None  # rich.print shows the same tree in colour
