"""The context-length policy: a span past the model's context is attributed in a window of the
conversation (earlier turns' content shortened), reported, and equal online and offline; it is
skipped only when no window fits. Tiny model: the mechanics do not depend on weights."""

from __future__ import annotations

import re

import pytest

from mtcabench import results
from mtcabench.benchmark import load_benchmark
from mtcabench.errors import InputError
from mtcabench.evaluate import (
    Attributor,
    TraceSettings,
    Tracer,
    as_message,
    load_attributor,
    make_scorer,
    model_shares,
    render_conversation,
    trace_benchmark,
    trace_conversation,
)
from mtcabench.evaluate.attribution._window import NoWindow, fit_window, marker
from mtcabench.explainer._explain import explain_conversation
from mtcabench.explainer._output import render_tree
from mtcabench.graph import check_graph
from mtcabench.ingest import read_taubench
from mtcabench.model import ExplanationRecord, Role, SubmissionEntry, TargetSpan
from mtcabench.terminal import plain

S1 = "taubench/airline/sample/task-s1/trial-0"
MARKER = re.compile(r"\[\.\.\. (\d+) tokens left out \.\.\.\]")


@pytest.fixture(scope="module")
def s1(sample_path):
    return next(c for c in read_taubench(sample_path) if c.task_id == "s1")


def turn_end(conv, tokenizer, turn: int) -> int:
    return render_conversation(conv, tokenizer, upto=turn).full.turn_tokens(turn)[1]


def test_a_window_shortens_tool_results_first_and_keeps_what_the_search_reads(tiny_loaded, s1):
    tok = tiny_loaded.tokenizer
    end = turn_end(s1, tok, 10)
    limit = end - 100
    w = fit_window(s1, 10, tok, limit, end)
    assert w.end_before == end and w.end_after <= limit
    assert turn_end(w.conversation, tok, 10) == w.end_after
    # Only tool results were shortened (enough to take there), the longest first.
    assert set(w.cuts) == {7}
    for i, (old, new) in enumerate(zip(s1.turns[:11], w.conversation.turns, strict=True)):
        assert (new.role, new.tool_calls, new.tool_call_id) == (old.role, old.tool_calls,
                                                                  old.tool_call_id)
        if i != 7:  # the system turn, the target turn and every other turn whole
            assert new.text == old.text
    cut = w.cuts[7]
    content = w.conversation.turns[7].content
    # Each gap is one marker line saying how many of the turn's tokens it stands for.
    assert sum(map(int, MARKER.findall(content))) == cut.tokens_left_out > 0
    assert cut.tokens - cut.tokens_left_out >= 64 and not cut.left_out
    # The answer's value (flight HAT136, in the middle of the reservation) survives.
    assert "HAT136" in content and "HAT136" in s1.turns[10].text
    assert fit_window(s1, 10, tok, limit, end).cuts == w.cuts  # deterministic


def test_offsets_map_between_the_turn_and_its_window(tiny_loaded, s1):
    tok = tiny_loaded.tokenizer
    end = turn_end(s1, tok, 10)
    w = fit_window(s1, 10, tok, end - 100, end)
    cut, old = w.cuts[7], s1.turns[7].text
    new = w.conversation.turns[7].text
    for a, b in cut.kept:
        x, y = w.to_window(7, a, b)
        assert new[x:y] == old[a:b] and w.from_window(7, x, y) == (a, b)
    assert w.to_window(7, 0, len(old)) == (0, len(new))  # the whole turn is the whole window
    m = MARKER.search(new)
    assert w.from_window(7, m.start(), m.end()) is None  # a marker has no original text
    # A range across a marker keeps the piece it overlaps most.
    a, b = cut.kept[0]
    x, _ = w.to_window(7, b - 5, b)
    assert w.from_window(7, x, m.end() + 1) == (b - 5, b)
    assert w.to_window(3, 2, 9) == (2, 9) and w.from_window(3, 2, 9) == (2, 9)  # uncut turn


def test_other_turns_then_whole_turns_go_only_when_tool_results_are_not_enough(tiny_loaded, s1):
    tok = tiny_loaded.tokenizer
    end = turn_end(s1, tok, 10)
    w = fit_window(s1, 10, tok, 330, end)
    assert w.end_after <= 330
    roles = {s1.turns[i].role for i in w.cuts}
    assert Role.TOOL in roles and roles & {Role.USER, Role.ASSISTANT}
    assert 0 not in w.cuts and 10 not in w.cuts  # never the system turn nor the target
    assert any(c.left_out for c in w.cuts.values())
    assert all(w.conversation.turns[i].content == marker(c.tokens) for i, c in w.cuts.items()
               if c.left_out)
    got = fit_window(s1, 10, tok, 120, end)  # the system turn alone is longer
    assert isinstance(got, NoWindow) and got.end_token > 120
    assert got.reason(120).startswith("too-long: even with the content of every earlier turn")


def test_trace_attributes_spans_past_the_limit_in_a_window(tiny_loaded, sample_benchmark):
    bench = load_benchmark(sample_benchmark)
    conv = bench.conversations[S1]
    spans = [s for s in bench.spans if s.conversation_id == conv.id]
    settings = TraceSettings(max_tokens=turn_end(conv, tiny_loaded.tokenizer, 10) - 100)
    attributor = load_attributor(tiny_loaded, "avg-attention", settings)
    result = trace_conversation(attributor, conv, spans, ["tokengeist", "flat", "first-user"],
                                settings)
    assert result.skipped == 0 and result.windowed == len(spans) == 2
    for method, entries in result.entries.items():
        assert len(entries) == len(spans)
        for e in entries:
            assert e.skipped is None
            if method == "first-user":  # a model-free method reads no tokens: no window
                assert e.window is None and e.schema_version == 1
                continue
            assert e.window.limit == settings.max_tokens and e.window.end_token > e.window.limit
            assert [w.turn for w in e.window.turns] == [7] and e.schema_version == 3
            assert e.edges
            for edge in e.edges:  # evidence in the original parent's text
                for x in edge.sentences or []:
                    assert 0 <= x.start < x.end <= len(conv.turns[edge.parent].text)
            back = SubmissionEntry.model_validate_json(e.model_dump_json())
            assert back.window == e.window and back.schema_version == 3
    graph_edges = [(e.child, e.parent) for e in result.entries["tokengeist"][0].edges]
    assert all(p < c for c, p in graph_edges)


def test_the_run_counts_windowed_spans_and_the_file_scores(tiny_loaded, sample_benchmark,
                                                            tmp_path):
    out = tmp_path / "windowed.jsonl"
    report = trace_benchmark(sample_benchmark, {"tokengeist": out}, model=tiny_loaded,
                             settings=TraceSettings(max_tokens=400), progress=False)
    sub = results.read_submission(out)
    windowed = [e for e in sub.entries.values() if e.window is not None]
    assert report.windowed == report.windowed_by_method["tokengeist"] == len(windowed) > 0
    assert sub.header.notes["windowed"] == len(windowed)
    by_domain = sub.header.notes["windowed_by_domain"]
    assert by_domain == report.windowed_by_domain == {"taubench/airline": [len(windowed), 5]}
    assert report.skipped == sum(1 for e in sub.entries.values() if e.skipped) == 0


def test_online_equals_offline_for_a_windowed_span(tiny_loaded, sample_benchmark):
    bench = load_benchmark(sample_benchmark)
    conv = bench.conversations[S1]
    spans = [s for s in bench.spans if s.conversation_id == conv.id]
    settings = TraceSettings(max_tokens=turn_end(conv, tiny_loaded.tokenizer, 10) - 100)
    attributor = Attributor(tiny_loaded, make_scorer("avg-attention", settings, tiny_loaded))
    offline = trace_conversation(attributor, conv, spans, ["tokengeist", "flat"], settings)
    tracer = Tracer(tiny_loaded, settings=settings, background=False, conversation_id=conv.id)
    for t in conv.turns:
        tracer.add(as_message(t))  # the turns past the limit are added, not refused
    assert tracer.stats.past_turns > 0 and tracer.stats.tokens <= settings.max_tokens
    for k, s in enumerate(spans):
        for m in ("tokengeist", "flat"):
            got = sorted((e.child, e.parent, e.score) for e in tracer.explain(10, s.span,
                                                                              method=m).edges)
            want = sorted((e.child, e.parent, e.score) for e in offline.entries[m][k].edges)
            assert [g[:2] for g in got] == [w[:2] for w in want], (s.id, m)
            assert all(g[2] is None and w[2] is None or abs(g[2] - w[2]) < 1e-4
                       for g, w in zip(got, want))
        assert not check_graph(tracer.explain(10, s.span), conv, s.span, record=s.id)


def test_explain_reports_the_window_and_refuses_only_what_no_window_fits(tiny_loaded, s1):
    target = s1.turns[10].text.index("HAT136")
    span = TargetSpan(turn=10, start=target, end=target + 6, text="HAT136")
    settings = TraceSettings(max_tokens=turn_end(s1, tiny_loaded.tokenizer, 10) - 100)
    ex = explain_conversation(s1, [span], model=tiny_loaded, methods=["tokengeist", "first-user"],
                              settings=settings)
    record = ex.record()
    assert record.schema_version == 3 and record.targets[0].window.turns[0].turn == 7
    back = ExplanationRecord.model_validate_json(record.model_dump_json())
    assert back.schema_version == 3 and back.targets[0].window == record.targets[0].window
    from rich.console import Console
    console = Console(width=200, record=True)
    console.print(render_tree(ex, 0, "tokengeist"))
    assert "in a context window" in plain(console.export_text())
    console = Console(width=200, record=True)
    console.print(render_tree(ex, 0, "first-user"))  # model-free: no window
    assert "context window" not in console.export_text()
    with pytest.raises(InputError, match=r"turn 10: too-long: even with the content of every"):
        explain_conversation(s1, [span], model=tiny_loaded, settings=TraceSettings(max_tokens=120))


def test_model_shares_asks_the_window_in_the_original_coordinates(tiny_loaded, s1):
    """Queries (whole turns, call arguments) are keyed as in the original conversation, so a
    search or a study reads a windowed span as any other."""
    target = s1.turns[10].text.index("HAT136")
    span = TargetSpan(turn=10, start=target, end=target + 6, text="HAT136")
    settings = TraceSettings(max_tokens=turn_end(s1, tiny_loaded.tokenizer, 10) - 100)
    attributor = Attributor(tiny_loaded, make_scorer("avg-attention", settings, tiny_loaded))
    from mtcabench.evaluate import get_methods
    got = model_shares(attributor, s1, {"x": span}, get_methods(["tokengeist"]).values(), settings)
    assert set(got.windows) == {"x"} and not got.unfit and got.rendered is None
    shares = got.shares["x"]
    assert set(shares("target")) == set(range(10))  # every earlier turn, the cut one too
    assert set(shares(8)) == set(range(8))  # a whole assistant turn, by its index


def test_a_study_unit_replays_windowed_spans_as_trace_and_recomputes_old_skips(
        tiny_loaded, sample_benchmark, tmp_path):
    """A study stores a windowed span's own turn table, so its replayed graph is trace's; a
    stored result that skipped spans past the context (the policy before windows) is
    computed again, one without such spans stays done."""
    from mtcabench.studies import Models, ResultStore, Unit, run_units
    from mtcabench.studies._units import state

    bench = load_benchmark(sample_benchmark)
    by_conv = bench.spans_by_conversation()
    settings = TraceSettings(max_tokens=400)
    units = [Unit("dev", "dev", bench.conversations[c], tuple(by_conv[c]), "avg-attention",
                  "x", settings, model=tiny_loaded.name) for c in sorted(by_conv)]
    store = ResultStore(tmp_path / "units")
    summary = run_units(units, store, models=Models(loaded=tiny_loaded), log=lambda _: None,
                        commit="abc")
    windowed = 0
    for unit, result in zip(units, summary.results, strict=True):
        traced = trace_conversation(load_attributor(tiny_loaded, "avg-attention", settings),
                                    unit.conversation, list(unit.spans), ["tokengeist"],
                                    settings)
        windows = result.shares.get("windows", {})
        windowed += len(windows)
        for entry, span in zip(traced.entries["tokengeist"],
                               result.points["default"].methods["tokengeist"], strict=True):
            assert span.skipped is None and (entry.window is not None) == (span.span_id in windows)
            assert [(c, p) for c, p, _ in span.edges] == [(e.child, e.parent) for e in entry.edges]
    assert windowed > 0
    # Windows of another room (shared windows) are computed again; a window stored before
    # shared windows (no anchor, no room) is a window per turn, today's default: done.
    path = next(u.path(store) for u, r in zip(units, summary.results, strict=True)
                if r.shares.get("windows"))
    unit = next(u for u in units if u.path(store) == path)
    old = store.read(path)
    windows = old.shares["windows"].values()
    assert all(w["room"] == 0 and w["anchor"] == int(k.rsplit("#", 1)[1].split(":")[0])
               for k, w in old.shares["windows"].items())
    for w in windows:
        w["room"] = 100
    store.write(old, path)
    assert state(unit, store)[0] == "context windows of another policy"
    for w in windows:
        del w["anchor"], w["room"]
    store.write(old, path)
    assert state(unit, store)[0] == "done"
    # A result of the policy before windows: its span past the context was skipped.
    path = units[0].path(store)
    old = store.read(path)
    first = old.points["default"].methods["tokengeist"][0]
    stale = first.model_copy(update={"skipped": "too-long: the span ends at token 623 of the "
                                     "rendered conversation, beyond the 400-token limit",
                                     "edges": []})
    old.points["default"].methods["tokengeist"][0] = stale
    store.write(old, path)
    assert state(units[0], store)[0] == "spans past the context, now windowed"
    assert state(units[1], store)[0] == "done"


def test_the_release_card_counts_spans_past_the_context_per_domain(tiny_loaded,
                                                                   sample_benchmark):
    from mtcabench.evaluate import context_reach
    from mtcabench.release._card import context_section

    bench = load_benchmark(sample_benchmark)
    convs = list(bench.conversations.values())
    exact = {s.id: render_conversation(bench.conversations[s.conversation_id],
                                       tiny_loaded.tokenizer).full.span_tokens(
        s.span.turn, s.span.start, s.span.end)[1] for s in bench.spans}
    got = context_reach(convs, bench.spans, tiny_loaded.tokenizer, 400, "tiny")
    past = sum(e > 400 for e in exact.values())
    assert 0 < past < len(exact)
    assert got == {"computed": True, "model": "tiny", "limit": 400,
                   "by_domain": {"taubench/airline": {"spans": 5, "past": past}}}
    lines = context_section({"context": got})
    assert f"| taubench/airline | 5 | {past} |" in "\n".join(lines)
    missing = context_section({"context": {"computed": False, "why": "no tokenizer here"}})
    assert "Not computed for this release: no tokenizer here." in missing
    assert context_section({}) == []
