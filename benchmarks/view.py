"""How fast `mtcabench view`'s page opens and filters in Chromium, on the real TauBench run.

Builds a release of the 200 real TauBench airline runs (ingest -> annotate lineage -> review
auto-accept -> release build, 4,105 spans), traces it with the two model-free methods
(recency, first-user: no model), writes the page, then opens it from disk in headless Debian
Chromium (Playwright) and times: the page opening (navigation until the table is drawn; and
the script's own share, parse of data.js excluded), each filter (the script's time to select
and redraw, and the round trip seen from Playwright), opening a span's page and scrolling to
the end. Beside the shipped data.js (``JSON.parse('...')``) it times the same document as a
plain object literal, the form it replaced.

    python benchmarks/view.py [--taubench PATH] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.paths import CHROMIUM, CHROMIUM_ARGS, taubench_airline_path


def run(*args) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mtcabench", *map(str, args)], check=True, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def build(taubench: Path, d: Path) -> tuple[Path, float]:
    convs, cands, reviewed = d / "conversations.jsonl", d / "candidates.jsonl", d / "reviewed.jsonl"
    run("ingest", "taubench", taubench, "--out", convs)
    run("annotate", "lineage", "--in", convs, "--out", cands)
    run("review", "auto-accept", "--candidates", cands, "--conversations", convs, "--out", reviewed)
    run("release", "build", "--version", "1.0.0", "--reviewed", reviewed, "--conversations", convs,
        "--candidates", cands, "--out", d / "release")
    release = d / "release" / "1.0.0"
    run("trace", "--benchmark", release, "--method", "recency", "--method", "first-user",
        "--out", d / "{method}.jsonl")
    seconds = run("view", "--benchmark", release, d / "recency.jsonl", d / "first-user.jsonl",
                  "--out", d / "view")
    return d / "view", seconds


def object_literal_copy(view: Path, to: Path) -> Path:
    """The same page with data.js as an object literal (``window.MTCA_VIEW = {...};``)."""
    shutil.copytree(view, to)
    text = (view / "data.js").read_text(encoding="ascii")
    body = text[len("window.MTCA_VIEW = JSON.parse('"):-len("');\n")]
    literal = body.replace("\\'", "'").replace("\\\\", "\\")
    (to / "data.js").write_text(f"window.MTCA_VIEW = {literal};\n", encoding="ascii")
    return to


FILTERS = [("type chained", "#f-type", "chained"), ("depth 3", "#f-depth", "3"),
           ("recency, misses", "#f-method", "0"), ("", "#f-outcome", "source-miss"),
           ("methods disagree", "#f-disagree", None), ("span id contains 'task-3'", "#f-id", "task-3")]


def measure(browser, folder: Path) -> dict[str, float]:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    t0 = time.perf_counter()
    page.goto(folder.joinpath("index.html").as_uri())
    page.wait_for_selector("body[data-ready='1']", timeout=60000)
    out = {"open (navigation to table drawn), ms": (time.perf_counter() - t0) * 1000,
           "open, the script after data.js is parsed, ms": page.evaluate("window.MTCA_OPEN_MS"),
           "open, navigation start to drawn (browser clock), ms":
               page.evaluate("performance.now()")}
    for name, selector, value in FILTERS:
        t0 = time.perf_counter()
        if value is None:
            page.check(selector)
        elif selector == "#f-id":
            page.fill(selector, value)
        else:
            page.select_option(selector, value)
        wall = (time.perf_counter() - t0) * 1000
        if name:
            out[f"filter {name}: script, ms"] = page.evaluate("window.MTCA_LAST_FILTER_MS")
            out[f"filter {name}: round trip, ms"] = wall
    t0 = time.perf_counter()
    page.evaluate("location.hash = '#span=0'")
    page.wait_for_selector("#span-id")
    out["open a span's page, ms"] = (time.perf_counter() - t0) * 1000
    page.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--taubench", type=Path, default=taubench_airline_path())
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    if args.taubench is None:
        sys.exit("the TauBench file gpt-4o-airline.json is needed: --taubench PATH")
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        view, seconds = build(args.taubench, Path(tmp))
        literal = object_literal_copy(view, Path(tmp) / "view-literal")
        size = sum(p.stat().st_size for p in view.iterdir()) / 2**20
        print(f"mtcabench view, 4105 spans x 2 submissions: {seconds:.1f} s (whole command), "
              f"page {size:.1f} MiB")
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS,
                                         headless=True)
            runs = {"JSON.parse (shipped)": [measure(browser, view) for _ in range(args.repeats)],
                    "object literal": [measure(browser, literal) for _ in range(args.repeats)]}
            browser.close()
    shipped, other = runs["JSON.parse (shipped)"], runs["object literal"]
    for key in shipped[0]:
        a = [r[key] for r in shipped]
        line = f"{key}: median {statistics.median(a):.1f} (min {min(a):.1f}, max {max(a):.1f})"
        if key.startswith(("open (", "open,")):
            b = [r[key] for r in other]
            line += (f"; object literal {statistics.median(b):.1f}, "
                     f"ratio {statistics.median(b) / statistics.median(a):.2f}x")
        print(line)
    print(f"(median of {args.repeats} runs each, headless {CHROMIUM}; "
          f"command: python benchmarks/view.py --repeats {args.repeats})")


if __name__ == "__main__":
    main()
