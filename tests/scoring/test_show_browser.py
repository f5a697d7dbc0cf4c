"""`show` output in a real browser: the Mermaid text parses and renders with the real mermaid
library, and the HTML page draws every edge (headless Debian Chromium, Playwright)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from mtcabench.scoring.show import render_mermaid, span_views, write_views

pytestmark = pytest.mark.browser

MERMAID_DIR = Path(os.environ.get("MTCABENCH_MERMAID_DIR",
                                  Path.home() / ".cache" / "mtcabench" / "mermaid"))


@pytest.fixture(scope="module")
def mermaid_js() -> Path:
    """mermaid.min.js from npm (installed once into a cache folder); fails if it cannot be."""
    js = MERMAID_DIR / "node_modules" / "mermaid" / "dist" / "mermaid.min.js"
    if js.is_file():
        return js
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("npm is needed to install mermaid for this test (apt-get install npm)")
    MERMAID_DIR.mkdir(parents=True, exist_ok=True)
    # One install at a time into the shared cache (another test run, or worker, may be at it).
    with (MERMAID_DIR / ".install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not js.is_file():
            proc = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--prefix",
                                   str(MERMAID_DIR), "mermaid@11"], capture_output=True,
                                  text=True, timeout=300, check=False)
            if proc.returncode != 0 or not js.is_file():
                pytest.fail(f"npm install mermaid@11 failed: {proc.stderr[-2000:]}")
    return js




def test_mermaid_text_parses_and_renders(bench, submissions, mermaid_js, browser):
    folder, ids = bench
    views = span_views([ids["s3-time"], ids["s2-remaining"], ids["s3-seat"]], folder,
                       submissions[1])
    views += span_views([ids["s1-flight"]], folder)  # gold only
    page = browser.new_page()
    page.set_content("<html><body></body></html>")
    page.add_script_tag(path=str(mermaid_js))
    page.evaluate("mermaid.initialize({startOnLoad: false})")
    for k, view in enumerate(views):
        text = render_mermaid(view)
        assert page.evaluate("async (t) => !!(await mermaid.parse(t))", text), text
        svg = page.evaluate("async ([id, t]) => (await mermaid.render(id, t)).svg",
                            [f"g{k}", text])
        n_edges = len(view.gold | view.pred)
        assert svg.count('class="edgeLabel"') >= n_edges or n_edges == 0, svg[:500]
        for label in ("gold+predicted", "gold only (missed)", "predicted only", "gold"):
            if f'"{label}' in text:
                assert label in svg
    page.close()


def test_html_page_draws_every_edge(bench, submissions, browser, tmp_path):
    folder, ids = bench
    views = span_views([ids["s2-remaining"]], folder, submissions[0])
    (path,) = write_views(views, tmp_path, "html")
    page = browser.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(path.as_uri())
    # Gold 4 edges (2 found, 2 missed), predicted 2 (both gold): 6 drawn paths.
    assert page.locator("svg path.edge").count() == 6
    assert page.locator("svg path.edge.gold.missed").count() == 2
    box = page.locator("svg").first.bounding_box()
    assert box["width"] > 500 and box["height"] > 300
    assert page.locator("mark").first.inner_text() == "$72"
    assert not errors
    page.close()
