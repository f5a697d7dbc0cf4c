"""A reviewer in headless Debian Chromium: open a pushed task, edit the graph, submit, pull.

Also: markup in a conversation (``<img onerror=...>``, ``<script>``) shows as text and runs
nothing in the reviewer's browser; a span after emoji is highlighted on its own characters
(the browser counts UTF-16 code units, Python code points).
"""

from __future__ import annotations

import time

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.io import read_records
from mtcabench.model import (
    Annotator,
    Candidate,
    ClaimKind,
    Conversation,
    DependencyType,
    Edge,
    GraphEdit,
    ProvenanceGraph,
    ReviewDecision,
    Role,
    SpanKind,
    TargetSpan,
    Turn,
    Verdict,
    span_id,
)
from mtcabench.review import pull_decisions, push_candidates

pytestmark = [pytest.mark.label_studio, pytest.mark.browser, pytest.mark.slow]


# Counts every write to window.__mtca_xss, the variable the injected markup would set.
XSS_HOOK = """
window.__mtca_hits = 0;
Object.defineProperty(window, '__mtca_xss', {
  configurable: false,
  get() { return window.__mtca_hits; },
  set(v) { window.__mtca_hits += 1; console.log('MTCA-XSS-RAN'); },
});
"""




def _open_task(browser, server, project_id: int, task_id: int, wait_for: str, *, hook=""):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    if hook:
        ctx.add_init_script(hook)
    requested: list[str] = []
    console: list[str] = []
    ctx.on("request", lambda r: requested.append(r.url))
    ctx.on("console", lambda m: console.append(m.text))
    page = ctx.new_page()
    page.set_default_timeout(60_000)
    page.goto(f"{server.url}/user/login/")
    page.fill('input[name="email"]', server.username)
    page.fill('input[name="password"]', server.password)
    page.click('button[type="submit"]')
    page.wait_for_load_state("networkidle")
    assert "/user/login" not in page.url, "login as the reviewer failed"
    page.goto(f"{server.url}/projects/{project_id}/data?task={task_id}")
    page.get_by_text(wait_for).first.wait_for()
    page.wait_for_timeout(1000)  # let the editor finish drawing regions and relations
    return ctx, page, requested, console


def _show_tab(page, name: str) -> None:
    """Switch the side panel to its Regions or Relations tab."""
    page.locator(".lsf-panel-tabs__tab:visible", has_text=name).first.click()


def _choice(page, value: str):
    """The checkbox of one choice (its label also shows the choice's hotkey)."""
    return page.locator(f'.lsf-choice input[name="{value}"]')


def _task_ids(client, project_id: int) -> dict[str, int]:
    body = client.raw_get("test listing", "/api/tasks/", project=project_id, include="id,meta",
                          fields="task_only", page_size=100)
    return {t["meta"]["span_id"]: t["id"] for t in body["tasks"]}


def _wait_for_annotation(client, task_id: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if client.sdk.annotations.list(id=task_id):
            return
        time.sleep(0.5)
    pytest.fail(f"no annotation reached the server for task {task_id} after Submit")


def test_reviewer_edits_the_graph_in_chromium_and_pull_sees_it(
    browser, label_studio, client, candidates, conversations, conversations_file,
    project_title, tmp_path,
):
    cand = candidates[2]  # multi-source: 6 -> 5 -> 4 (call), 6 -> 3 -> 2 (call)
    pushed = push_candidates(client, candidates, conversations, project=project_title,
                             progress=False)
    task_id = _task_ids(client, pushed.project_id)[cand.id]
    ctx, page, _, _ = _open_task(browser, label_studio, pushed.project_id, task_id,
                                 cand.span.text)
    try:
        # The conversation, with each turn's index, role and tool.
        assert page.get_by_text("#5 tool · search_direct_flight").first.is_visible()
        assert page.get_by_text("Flight HAT227 leaves ORD at 08:00:00").count() >= 1
        assert page.get_by_text("I'll think about it, thanks.").first.is_visible()
        # The proposal pre-fills the reviewer's annotation: the target and every node...
        regions = page.locator(".lsf-outliner-item")
        assert regions.count() == 5
        assert regions.filter(has_text="Target").filter(has_text=cand.span.text).count() == 1
        assert regions.filter(has_text="Source").count() == 2
        # ... and the edges.
        _show_tab(page, "Relations")
        assert page.get_by_text("Relations (4)").count() == 1

        # The reviewer removes the gift-card source (turn 3) and its call turn (2): their
        # relations go with them.
        _show_tab(page, "Regions")
        for text in ['get_user_details({"user_id"', '{"name": {"first_name": "Omar"']:
            regions.filter(has_text=text).first.click()
            page.keyboard.press("Backspace")
        assert regions.count() == 3
        _show_tab(page, "Relations")
        assert page.get_by_text("Relations (2)").count() == 1
        page.get_by_label("direct").check()
        page.get_by_label("accept with edits").check()
        page.get_by_placeholder("Comment (optional)").fill("the gift card does not set the rest")
        page.get_by_role("button", name="Add").click()
        page.get_by_role("button", name="Submit").click()
        _wait_for_annotation(client, task_id)
    finally:
        ctx.close()

    out = tmp_path / "reviewed.jsonl"
    result = CliRunner().invoke(app, [
        "review", "pull", "--conversations", str(conversations_file), "--out", str(out),
        "--project", project_title, "--url", label_studio.url, "--api-key", label_studio.api_key])
    assert result.exit_code == 0, result.output
    assert "accept / accept with edits" in result.output
    (decision,) = list(read_records(out, ReviewDecision))
    assert decision.id == cand.id and decision.reviewer == label_studio.username
    assert decision.verdict is Verdict.ACCEPT_WITH_EDITS and decision.edited
    assert decision.dependency_type is DependencyType.DIRECT
    assert decision.graph.pairs() == {(6, 5), (5, 4)}
    assert decision.edit == GraphEdit(edges_removed=[(3, 2), (6, 3)], nodes_removed=[2, 3],
                                      type_changed=("multi-source", "direct"))
    assert decision.comment == "the gift card does not set the rest"


def test_markup_in_a_conversation_shows_as_text_and_runs_nothing(
    browser, label_studio, client, candidates, conversations, project_title,
):
    cand = candidates[4]  # the conversation full of <img onerror> and <script>
    pushed = push_candidates(client, [cand], conversations, project=project_title,
                             progress=False)
    task_id = _task_ids(client, pushed.project_id)[cand.id]
    ctx, page, requested, console = _open_task(browser, label_studio, pushed.project_id,
                                               task_id, cand.span.text, hook=XSS_HOOK)
    try:
        page.wait_for_timeout(2000)  # time for any injected handler to fire
        # Shown literally, as the conversation's text...
        assert page.get_by_text('<img src=x onerror="window.__mtca_xss').count() >= 1
        assert page.get_by_text("<script>window.__mtca_xss=(window.__mtca_xss||0)+1</script>"
                                ).count() >= 1
        assert page.get_by_text("<img src=z onerror=").count() >= 1
        # ... never as elements, never run.
        assert page.evaluate("window.__mtca_hits") == 0
        assert page.evaluate(
            "document.querySelectorAll('img[src=x], img[src=y], img[src=z]').length") == 0
        assert page.evaluate(
            "Array.from(document.querySelectorAll('script'))"
            ".filter(s => s.textContent.includes('__mtca_xss')).length") == 0
        assert not [u for u in requested if u.rstrip("/").rsplit("/", 1)[-1] in ("x", "y", "z")]
        assert "MTCA-XSS-RAN" not in console
        # The hook itself works: a real write is counted.
        page.evaluate("window.__mtca_xss = 1")
        assert page.evaluate("window.__mtca_hits") == 1
    finally:
        ctx.close()


def test_a_span_after_emoji_is_highlighted_on_its_own_text(browser, label_studio, client,
                                                           project_title):
    turns = [Turn(index=0, role=Role.USER, content="Is booking QX7 🎉 still on? 🙏"),
             Turn(index=1, role=Role.ASSISTANT,
                  content="🎉🎉 Good news 😀: booking QX7 is confirmed for 𝄞 May 20.")]
    conv = Conversation(id="test/emoji/conversation-1", source="test", domain="emoji",
                        turns=turns)
    start = turns[1].content.index("QX7")
    span = TargetSpan(turn=1, start=start, end=start + 3, text="QX7")
    cand = Candidate(id=span_id(conv.id, span), conversation_id=conv.id, span=span,
                     dependency_type=DependencyType.DIRECT,
                     graph=ProvenanceGraph(target=1, nodes=[0, 1], edges=[Edge(child=1, parent=0)]),
                     annotator=Annotator(name="lineage", rules_version="r"))
    pushed = push_candidates(client, [cand], {conv.id: conv}, project=project_title,
                             progress=False)
    task_id = _task_ids(client, pushed.project_id)[cand.id]
    ctx, page, _, _ = _open_task(browser, label_studio, pushed.project_id, task_id,
                                 "Good news")
    try:
        # Every highlighted run of text, by the region it belongs to: the target's is exactly
        # the span (three code units early, it read "s 😀" plus part of an emoji), and the
        # source turn's covers the whole turn, emoji included.
        marked = page.evaluate(
            "Array.from(document.querySelectorAll('.htx-highlight'))"
            ".map(e => e.textContent)")
        assert "QX7" in marked, marked
        assert "".join(marked).count("🙏") == 1, marked
        assert not [m for m in marked if m != "QX7" and "Good news" in m], marked
    finally:
        ctx.close()


def test_a_claim_s_kind_is_offered_and_changed_in_chromium_and_a_value_has_none(
    browser, label_studio, client, candidates, conversations, project_title,
):
    # The sample's multi-source span as a claim (a computation), beside a value span.
    claim = candidates[2].model_copy(update={"span_kind": SpanKind.CLAIM,
                                             "claim_kind": ClaimKind.COMPUTATION})
    value = candidates[0]
    pushed = push_candidates(client, [claim, value], conversations, project=project_title,
                             progress=False)
    ids = _task_ids(client, pushed.project_id)
    ctx, page, _, _ = _open_task(browser, label_studio, pushed.project_id, ids[claim.id],
                                 claim.span.text)
    try:
        # Every kind, one of them the proposal's; the reviewer picks another.
        assert page.get_by_text("Claim kind", exact=True).count() == 1
        for kind in ClaimKind:
            assert _choice(page, kind.value).count() == 1, kind
        assert _choice(page, "computation").is_checked()
        _choice(page, "summary").check()
        assert not _choice(page, "computation").is_checked()
        page.get_by_label("accept with edits").check()
        page.get_by_role("button", name="Submit").click()
        _wait_for_annotation(client, ids[claim.id])
    finally:
        ctx.close()
    ctx, page, _, _ = _open_task(browser, label_studio, pushed.project_id, ids[value.id],
                                 value.span.text)
    try:
        # A value's task: the type and the verdict, no kind to choose.
        assert _choice(page, "direct").count() == 1
        assert page.get_by_text("Claim kind", exact=True).count() == 0
        assert _choice(page, "computation").count() == 0
    finally:
        ctx.close()

    (d,) = pull_decisions(client, conversations, project=pushed.project_id).decisions
    assert d.id == claim.id and d.span_kind is SpanKind.CLAIM
    assert d.claim_kind is ClaimKind.SUMMARY and d.verdict is Verdict.ACCEPT_WITH_EDITS
    assert d.edited and d.edit is None and d.graph.pairs() == claim.graph.pairs()
