"""`mtcabench view` in a real browser (headless Debian Chromium, Playwright), opened from disk.

On a release of the 200 real TauBench airline runs with two model-free submissions
(``trace --method recency --method first-user``, no model needed): the table lists every
span, each filter shows exactly the spans that Python counts from the files, the virtual
table reaches the last span, and a row opens the span's page with gold and both graphs. On a
hostile benchmark: no id, label or turn text can run a script or become markup.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import expect
from typer.testing import CliRunner

from mtcabench.benchmark import load_benchmark
from mtcabench.cli import app
from mtcabench.io import write_records
from mtcabench.model import (
    BenchmarkSpan,
    Conversation,
    DecisionSource,
    DependencyType,
    Edge,
    ProvenanceGraph,
    Role,
    TargetSpan,
    Turn,
    Verdict,
    span_id,
)
from mtcabench.scoring import gold_evidence

pytestmark = [pytest.mark.browser, pytest.mark.slow]
runner = CliRunner()


def invoke(*args):
    res = runner.invoke(app, [str(a) for a in args])
    assert res.exit_code == 0, res.output
    return res


@pytest.fixture(scope="module")
def real_view(taubench_release, tmp_path_factory):
    """The page of the real release with the recency and first-user submissions, written
    into the release folder (as a user would publish it beside the data). Into a copy: the
    release is the session's, and tests/release verifies it lists exactly its own files."""
    d = tmp_path_factory.mktemp("view-subs")
    release = d / "release"
    shutil.copytree(taubench_release[1], release)
    invoke("trace", "--benchmark", release, "--method", "recency", "--method", "first-user",
           "--out", d / "{method}.jsonl")
    subs = [d / "recency.jsonl", d / "first-user.jsonl"]
    invoke("view", "--benchmark", release, *subs, "--out", release / "view")
    return release, subs


def _predicted(path: Path) -> dict[str, set[tuple[int, int]]]:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        if obj.get("kind") != "submission":
            out[obj["span_id"]] = {(e["child"], e["parent"]) for e in obj["edges"]}
    return out


def _source_hits(bench, pred: dict[str, set[tuple[int, int]]]) -> list[bool]:
    """Source hit worked out from the files: every gold source is an exogenous node of the
    predicted edges (and, by the metric's conventions, nothing predicted where gold is empty)."""
    hits = []
    for s in bench.spans:
        turns = bench.conversations[s.conversation_id].turns
        got = {x for pair in pred.get(s.id, set()) for x in pair if turns[x].role is not Role.ASSISTANT}
        gold = set(s.sources)
        hits.append(not got if not gold else gold <= got)
    return hits


def _open(browser, folder: Path):
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((folder / "index.html").as_uri())
    page.wait_for_selector("body[data-ready='1']", timeout=30000)
    return page, errors


def test_the_real_run_opens_filters_and_opens_a_span(real_view, browser):
    release, subs = real_view
    bench = load_benchmark(release)
    n = len(bench.spans)
    hits = [_source_hits(bench, _predicted(p)) for p in subs]
    page, errors = _open(browser, release / "view")
    count = lambda: page.inner_text("#count")  # noqa: E731
    assert count() == f"{n} of {n} spans" and n == 4444  # 4,116 real, 328 counterfactual
    # One domain, one agent: no facet to choose from.
    assert not page.is_visible("#f-domain") and not page.is_visible("#f-agent")

    page.select_option("#f-type", "chained")
    assert count() == f"{sum(s.dependency_type.value == 'chained' for s in bench.spans)} of {n} spans"
    page.select_option("#f-type", "")
    page.select_option("#f-depth", "3")
    assert count() == f"{sum(s.depth == 3 for s in bench.spans)} of {n} spans"
    page.select_option("#f-depth", "")
    page.select_option("#f-method", "0")  # recency
    page.select_option("#f-outcome", "source-miss")
    misses = sum(not h for h in hits[0])
    assert 0 < misses < n and count() == f"{misses} of {n} spans"
    page.select_option("#f-method", "all")
    page.select_option("#f-outcome", "source-hit")
    assert count() == f"{sum(a and b for a, b in zip(*hits))} of {n} spans"
    # The model-free submissions quote no sentence: no span is an evidence hit, and every span
    # with a gold evidence range is a miss.
    page.select_option("#f-outcome", "evidence-hit")
    assert count() == f"0 of {n} spans"
    page.select_option("#f-outcome", "evidence-miss")
    with_evidence = sum(bool(gold_evidence(s.graph.edges)) for s in bench.spans)
    assert with_evidence > 0 and count() == f"{with_evidence} of {n} spans"
    page.select_option("#f-outcome", "")
    page.check("#f-disagree")
    disagree = [i for i, (a, b) in enumerate(zip(*hits)) if a != b]
    assert disagree and count() == f"{len(disagree)} of {n} spans"
    shown = page.eval_on_selector_all("#spacer .row", "rows => rows.map(r => r.dataset.span)")
    assert shown == [bench.spans[i].id for i in disagree][: len(shown)]
    page.uncheck("#f-disagree")

    # The header names each method once, whole, over its three metrics; the span column
    # shows the span's text (its id beside it).
    methods = page.locator("#head .method")
    assert methods.all_inner_texts() == ["recency", "first-user"]
    assert page.eval_on_selector_all(
        "#head .method", "ms => ms.every(m => m.scrollWidth <= m.clientWidth)")
    assert page.locator("#head div.num").all_inner_texts() == [
        "edge F1", "source hit", "evidence hit@3"] * 2
    first = page.locator("#spacer .row").first
    sid = first.get_attribute("data-span")
    span_text = next(s.span.text for s in bench.spans if s.id == sid)
    assert first.locator(".text").get_attribute("title") == span_text
    assert first.locator(".id").inner_text() == sid

    # Only the rows in sight are drawn; scrolling to the end draws the last span.
    assert page.locator("#spacer .row").count() < 100
    page.eval_on_selector("#rows", "r => { r.scrollTop = r.scrollHeight; }")
    # Polled by Playwright over its protocol (a string predicate would need eval, which the
    # page's Content-Security-Policy rightly refuses).
    expect(page.locator("#spacer .row").last).to_have_attribute("data-span", bench.spans[-1].id)

    # A span's page: gold and each method's graph, one path per drawn edge.
    k = disagree[0]
    span = bench.spans[k]
    page.goto((release / "view" / "index.html").as_uri() + f"#span={k}")
    page.wait_for_selector("#span-id")
    assert page.inner_text("#span-id") == span.id
    panels = page.locator("figure.panel")
    assert panels.count() == 3
    assert panels.nth(0).locator("path.edge").count() == len(span.graph.pairs())
    for j, p in enumerate(subs):
        pred, gold = _predicted(p)[span.id], span.graph.pairs()
        assert panels.nth(j + 1).locator("path.edge").count() == len(pred | gold)
        assert panels.nth(j + 1).locator("path.edge.missed").count() == len(gold - pred)
    assert page.locator(".turn").count() == span.span.turn + 1
    assert page.inner_text(".turn mark") == span.span.text
    page.click("#back")
    page.wait_for_selector("#spacer .row")
    assert page.is_visible("#table") and not page.is_visible("#span")
    assert not errors
    page.close()


HOSTILE = ('</script><script>window.PWNED=1</script><img src=x onerror="window.PWNED=2">'
           "it's a \\ back\\slash, a line\u2028separator and {{braces}} ${x}")


def test_no_text_from_the_data_becomes_markup_or_script(tmp_path, browser):
    conv = Conversation(id='evil/<img src=x onerror="window.PWNED=3">', source="taubench",
                        domain="d", turns=[
                            Turn(index=0, role=Role.USER, content=HOSTILE),
                            Turn(index=1, role=Role.ASSISTANT, content="the value is " + HOSTILE)])
    start = conv.turns[1].text.index("<img")
    target = TargetSpan(turn=1, start=start, end=start + 30, text=conv.turns[1].text[start:start + 30])
    sid = span_id(conv.id, target)
    folder = tmp_path / "bench"
    folder.mkdir()
    write_records(folder / "conversations.jsonl", [conv])
    write_records(folder / "spans.jsonl", [BenchmarkSpan(
        id=sid, conversation_id=conv.id, source="taubench", domain="d", span=target,
        dependency_type=DependencyType.DIRECT, depth=1, sources=[0],
        graph=ProvenanceGraph(target=1, nodes=[0, 1], edges=[Edge(child=1, parent=0)]),
        decision_source=DecisionSource.AUTO, verdict=Verdict.ACCEPT)])
    sub = tmp_path / "sub.jsonl"
    sub.write_text(json.dumps({"kind": "submission", "method": '<svg onload="window.PWNED=4">'})
                   + "\n" + json.dumps({"span_id": sid, "edges": [{"child": 1, "parent": 0}]})
                   + "\n", encoding="utf-8")
    invoke("view", "--benchmark", folder, sub, "--out", tmp_path / "view")
    page, errors = _open(browser, tmp_path / "view")
    assert page.eval_on_selector("#spacer .row", "r => r.dataset.span") == sid
    assert page.inner_text("#spacer .row .id") == sid
    page.click("#spacer .row")
    page.wait_for_selector("#span-id")
    assert page.inner_text("#span-id") == sid
    assert page.eval_on_selector_all(".turn pre", "ps => ps.map(p => p.textContent)") == [
        t.text for t in conv.turns]
    assert page.inner_text("figure.panel:nth-child(2) figcaption").startswith('<svg onload=')
    # (a domain of markup is refused by the name rule: tests/model/test_names.py)
    assert page.evaluate("window.PWNED") is None
    assert page.locator("img, script:not([src]), b:text-is('d')").count() == 0
    assert not errors
    page.close()


def _one_span_conversation(cid: str, domain: str, agent: str | None):
    conv = Conversation(id=cid, source="tau2", domain=domain, agent_model=agent, turns=[
        Turn(index=0, role=Role.USER, content="my order is #W1234567"),
        Turn(index=1, role=Role.ASSISTANT, content="order #W1234567 found")])
    target = TargetSpan(turn=1, start=6, end=15, text="#W1234567")
    span = BenchmarkSpan(
        id=span_id(conv.id, target), conversation_id=conv.id, source="tau2", domain=domain,
        span=target, dependency_type=DependencyType.DIRECT, depth=1, sources=[0],
        graph=ProvenanceGraph(target=1, nodes=[0, 1], edges=[Edge(child=1, parent=0)]),
        decision_source=DecisionSource.AUTO, verdict=Verdict.ACCEPT)
    return conv, span


def test_domain_and_agent_facets_filter_the_spans(tmp_path, browser):
    made = [_one_span_conversation(f"tau2/{d}/{a}/{i}", d, a) for i, (d, a) in enumerate([
        ("airline", "gpt-4o"), ("retail", "gpt-4o"), ("retail", "o3"), ("telecom", None)])]
    folder = tmp_path / "bench"
    folder.mkdir()
    write_records(folder / "conversations.jsonl", [c for c, _ in made])
    write_records(folder / "spans.jsonl", [s for _, s in made])
    sub = tmp_path / "sub.jsonl"
    sub.write_text(json.dumps({"kind": "submission", "method": "m"}) + "\n", encoding="utf-8")
    invoke("view", "--benchmark", folder, sub, "--out", tmp_path / "view")
    page, errors = _open(browser, tmp_path / "view")
    count = lambda: page.inner_text("#count")  # noqa: E731
    assert page.is_visible("#f-domain") and page.is_visible("#f-agent")
    assert page.eval_on_selector_all("#f-agent option", "os => os.map(o => o.value)") == [
        "", "gpt-4o", "o3", "unknown"]
    page.select_option("#f-domain", "retail")
    assert count() == "2 of 4 spans"
    page.select_option("#f-agent", "o3")
    assert count() == "1 of 4 spans"
    assert page.eval_on_selector("#spacer .row", "r => r.dataset.span") == made[2][1].id
    page.select_option("#f-domain", "")
    page.select_option("#f-agent", "unknown")
    assert count() == "1 of 4 spans"
    assert not errors
    page.close()
