"""The explain page in a real browser (headless Debian Chromium, Playwright): the conversation,
one arrow per predicted edge (content or structural), no gold, the span marked (real model)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mtcabench.explainer import explain_conversation, resolve_targets, write_explanation
from mtcabench.transcripts import read_transcript

pytestmark = [pytest.mark.browser, pytest.mark.model]

REFUND = Path(__file__).parents[1] / "transcripts" / "examples" / "refund_agent.json"




def test_explain_page_draws_the_graph(loaded, browser, tmp_path):
    conv = read_transcript(REFUND)
    targets = resolve_targets(conv, turn=9, span="R-99120")
    result = explain_conversation(conv, targets, model=loaded, methods=["tokengeist"])
    graph = result.graphs["tokengeist"][0]
    _, page_path = write_explanation(result, tmp_path)
    page = browser.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(page_path.as_uri())
    assert page.locator("svg path.edge").count() == len(graph.edges) > 0
    structural = [e for e in graph.edges if e.kind.value == "structural"]
    assert page.locator("svg path.edge.structural").count() == len(structural)
    assert page.locator("svg path.edge.predicted").count() == len(graph.edges) - len(structural)
    assert page.locator("svg path.edge.gold").count() == 0
    drawn = {page.locator("svg path.edge").nth(i).get_attribute("data-edge")
             for i in range(len(graph.edges))}
    assert drawn == {f"{e.child}->{e.parent}" for e in graph.edges}
    assert page.locator("mark").first.inner_text() == "R-99120"
    assert "no gold graph" in page.locator("body").inner_text()
    # every turn up to the target is in the page, and the picture is laid out
    assert page.locator("div.turn").count() == 10
    box = page.locator("svg").first.bounding_box()
    assert box["width"] > 500 and box["height"] > 300
    assert not errors
    page.close()
