"""The renderer draws any conversation, target and graphs, with or without a gold graph,
through one entry point (`mtcabench.render.draw`), and knows nothing of benchmarks: a plain
transcript (no benchmark span, no gold) and the same transcript with gold go through the
same writers, the gold being only one value of the drawing."""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from mtcabench.errors import UsageError
from mtcabench.model import Edge, EdgeKind, PredictedEdge, ScoredSentence
from mtcabench.render import EDGE_COLOURS, FORMATS, Drawing, Fact, Graph, draw
from mtcabench.transcripts import read_transcript, target_span

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "examples" / "refund_agent.json"


def _traced() -> list[Edge]:
    """A traced graph of the log's last answer: content edges and one structural edge."""
    return [Edge(child=9, parent=8, score=0.8, sentences=[ScoredSentence(start=15, end=22,
                                                                         score=0.8)]),
            Edge(child=8, parent=7, kind=EdgeKind.STRUCTURAL),
            Edge(child=7, parent=5, score=0.6)]


def _drawing(gold: frozenset | None, graphs=None, **extra) -> Drawing:
    conv = read_transcript(LOG)
    target = target_span(conv, 9, "R-99120")
    if graphs is None:
        edges = _traced()
        graphs = [Graph("tokengeist", edges, structural=frozenset(
            e.pair for e in edges if e.kind is EdgeKind.STRUCTURAL))]
    return Drawing("refund#9", conv, target, graphs, gold=gold, **extra)


def _edge_rows(page: str) -> dict[str, str]:
    """Each edge row of the page's tables: 'child-parent' -> its kind (class)."""
    return {f"{c}-{p}": kind for kind, c, p in re.findall(
        r'<tr style="[^"]*" class="(\w+)"><td>(\d+) \u2192 (\d+)</td>', page)}


def test_a_plain_transcript_is_drawn_without_gold():
    drawing = _drawing(gold=None)
    page = draw(drawing)
    assert "no gold graph" in page and "<th>gold</th>" not in page
    assert _edge_rows(page) == {"9-8": "predicted", "8-7": "structural", "7-5": "predicted"}
    # The target span and the edge's evidence are marked in the turns' full text.
    assert "<mark>R-99120</mark>" in page
    assert re.search(r'<mark class="evidence"[^>]*>R-99120</mark>', page)
    svg = draw(drawing, "svg")
    root = ET.fromstring(svg)  # well-formed: a transcript's text is escaped
    paths = [el for el in root.iter("{http://www.w3.org/2000/svg}path") if el.get("class")]
    assert sorted(el.get("class") for el in paths) == [
        "edge pred predicted", "edge pred predicted", "edge pred structural"]
    assert "gold edges on the left" not in svg
    assert "t9 --" in draw(drawing, "mermaid") and "structural" in draw(drawing, "dot")


def test_the_same_transcript_with_gold_is_compared_edge_by_edge():
    drawing = _drawing(gold=frozenset({(9, 8), (8, 7), (9, 4)}), note="direct",
                       facts=[[Fact("dependency type", "direct", strong=True)]])
    page = draw(drawing)
    # One entry point, one drawing: only the gold value differs from the plain transcript.
    assert _edge_rows(page) == {"9-8": "both", "9-4": "missed", "8-7": "both",
                                "7-5": "extra"}
    assert "<th>gold</th><th>predicted</th>" in page and "no gold graph" not in page
    assert "<p>dependency type <b>direct</b>; tokengeist: <b>predicted</b></p>" in page
    root = ET.fromstring(draw(drawing, "svg"))
    kinds = sorted(el.get("class") for el in root.iter("{http://www.w3.org/2000/svg}path")
                   if el.get("class"))
    assert kinds == ["edge gold both", "edge gold both", "edge gold missed",
                     "edge pred both", "edge pred both", "edge pred extra"]
    assert "direct; gold edges on the left, tokengeist (predicted) on the right" in page
    assert f'stroke="{EDGE_COLOURS["missed"]}" stroke-width="2" stroke-dasharray="5,4"' in page
    assert "-.->" in draw(drawing, "mermaid")  # the missed edge, dashed


def test_gold_alone_and_several_graphs():
    gold = frozenset({(9, 8), (8, 7)})
    alone = draw(_drawing(gold=gold, graphs=[]))
    assert _edge_rows(alone) == {"9-8": "gold", "8-7": "gold"}
    assert alone.count("<svg ") == 1
    flat = Graph("flat", [PredictedEdge(child=9, parent=1, score=0.3)],
                 metrics=[("edge F1", 0.0), ("source recall", None)])
    tg = Graph("tokengeist", [PredictedEdge(child=9, parent=8, score=0.9)],
               metrics=[("edge F1", 0.667), ("source recall", 1.0)])
    page = draw(_drawing(gold=gold, graphs=[tg, flat]))
    assert page.count("<svg ") == 2 and "<h3>tokengeist</h3>" in page and "<h3>flat</h3>" in page
    assert ("<tr><th>metric (this span)</th><th>tokengeist</th><th>flat</th></tr>"
            "<tr><td>edge F1</td><td>0.667</td><td>0.000</td></tr>"
            "<tr><td>source recall</td><td>1.000</td><td>n/a</td></tr>") in page
    # Each graph is compared with the gold graph on its own.
    assert "tokengeist: <b>predicted</b>; flat: <b>predicted</b>" in page
    tables = page.split("<h3>")[1:]
    assert _edge_rows(tables[0]) == {"9-8": "both", "8-7": "missed"}
    assert _edge_rows(tables[1]) == {"9-8": "missed", "9-1": "extra", "8-7": "missed"}


def test_an_unknown_format_is_refused_with_the_formats_named():
    with pytest.raises(UsageError, match="html, svg, mermaid, dot"):
        draw(_drawing(gold=None), "png")
    assert set(FORMATS) == {"html", "svg", "mermaid", "dot"}


def test_importing_the_renderer_loads_no_benchmark_module():
    code = ("import sys, mtcabench.render; print(sorted(m for m in sys.modules if "
            "m.startswith(('mtcabench.benchmark', 'mtcabench.results', 'mtcabench.scoring'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    assert out.strip() == "[]"
