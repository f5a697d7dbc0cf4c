"""The explain page's edge table and drawing (no model: a hand-built graph of a real log):
structural edges are marked as such (dashed, named in the table), the gold and predicted
columns that would say "n/a" and "yes" on every row are gone, and each score sits beside its
arc, on a halo, not on the line."""

from __future__ import annotations

import re
from pathlib import Path

from mtcabench.evaluate import TraceSettings
from mtcabench.explainer import Explanation
from mtcabench.explainer._output import drawing
from mtcabench.model import Edge, EdgeKind, ProvenanceGraph, ScoredSentence
from mtcabench.render import to_html
from mtcabench.transcripts import read_transcript, target_span

LOG = Path(__file__).resolve().parents[2] / "examples" / "refund_agent.json"


def _page() -> str:
    conv = read_transcript(LOG)
    target = target_span(conv, 9, "R-99120")
    graph = ProvenanceGraph(target=9, nodes=[5, 7, 8, 9], edges=[
        Edge(child=9, parent=8, score=0.8123456789,
             sentences=[ScoredSentence(start=0, end=5, score=0.8123456789)]),
        Edge(child=8, parent=7, kind=EdgeKind.STRUCTURAL),
        Edge(child=7, parent=5, score=0.6)])
    explanation = Explanation(conv, [target], {"tokengeist": [graph]}, "m", "avg-attention",
                              TraceSettings())
    return to_html(drawing(explanation, 0, "tokengeist"))


def test_structural_edges_are_marked_and_empty_columns_dropped():
    page = _page()
    header = re.search(r"<h2>Edges</h2>\s*<table><tr>(.*?)</tr>", page, re.S)[1]
    assert "<th>gold</th>" not in header and "<th>predicted</th>" not in header
    assert "<th>score</th><th>kind</th>" in header
    rows = re.findall(r'<tr style="[^"]*" class="(\w+)"><td>(\d+) \u2192 (\d+)</td>(.*?)</tr>',
                      page, re.S)
    kinds = {(int(c), int(p)): (cls, rest) for cls, c, p, rest in rows}
    assert kinds[(8, 7)][0] == "structural" and "structural: answers its call" in kinds[(8, 7)][1]
    assert kinds[(9, 8)][0] == "predicted" and "<td>content</td>" in kinds[(9, 8)][1]
    assert "<td>0.8123</td>" in kinds[(9, 8)][1] and "n/a" not in page.split("<h2>Edges")[1]
    # The drawing: the structural arc dashed, named in the legend.
    assert re.search(r'class="edge pred structural"', page)
    assert 'stroke-dasharray="2,3"' in page and "structural (a tool result answers" in page


def test_scores_sit_beside_their_arcs_not_on_them():
    page = _page()
    labels = re.findall(r'<text x="([\d.]+)" y="[\d.]+" fill="[^"]*" font-size="10" '
                        r'stroke="#fff" stroke-width="3" paint-order="stroke" class="score">'
                        r'([\d.]+)</text>', page)
    assert sorted(v for _, v in labels) == ["0.60", "0.81"]
    arcs = re.findall(r'<path d="M([\d.]+),[\d.]+ C([\d.]+),', page)
    # Each label starts right of the outermost point of some arc's curve (3/4 of its bend).
    apexes = [float(x0) + 0.75 * (float(xc) - float(x0)) for x0, xc in arcs]
    for x, _ in labels:
        assert any(abs(float(x) - (a + 4)) < 0.1 for a in apexes)
