"""`trace_benchmark` on the sample and on real TauBench conversations (real model)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mtcabench.benchmark import load_benchmark
from mtcabench.errors import InputError
from mtcabench.evaluate import (
    AttnTraceSettings,
    SearchSettings,
    TraceSettings,
    merge_shards,
    render_conversation,
    trace_benchmark,
)
from mtcabench.evaluate.runners._run import partial_path
from mtcabench import results
from mtcabench.graph import check_graph
from mtcabench.model import (
    Edge,
    EdgeKind,
    ProvenanceGraph,
    SubmissionEntry,
    SubmissionHeader,
)

pytestmark = pytest.mark.model

FAST = TraceSettings(scorers={"attntrace": AttnTraceSettings(subsamples=3)})
SCORERS = ("avg-attention", "attntrace", "at2")


def read_submission(path: Path) -> tuple[SubmissionHeader, list[SubmissionEntry]]:
    """Header and entries, read by the submission module as `score` and `trace-merge` read."""
    sub = results.read_submission(path)
    return sub.header, list(sub.entries.values())


def as_graph(entry: SubmissionEntry, target: int) -> ProvenanceGraph:
    edges = [Edge(child=e.child, parent=e.parent, score=e.score,
                  kind=EdgeKind.STRUCTURAL if e.score is None else EdgeKind.CONTENT)
             for e in entry.edges]
    nodes = sorted({target, *(x for e in edges for x in e.pair)})
    return ProvenanceGraph(target=target, nodes=nodes, edges=edges)


@pytest.fixture(scope="module")
def sample_runs(loaded, sample_benchmark, tmp_path_factory):
    """Both methods with every scorer on the sample: {(method, scorer): (path, report)}."""
    out = tmp_path_factory.mktemp("sample-runs")
    runs = {}
    for scorer in SCORERS:
        paths = {m: out / f"{m}-{scorer}.jsonl" for m in ("tokengeist", "flat")}
        report = trace_benchmark(sample_benchmark, paths, model=loaded, scorer=scorer,
                                 settings=FAST, progress=False)
        for m, p in paths.items():
            runs[m, scorer] = (p, report)
    return runs


@pytest.mark.parametrize("scorer", SCORERS)
@pytest.mark.parametrize("method", ["tokengeist", "flat"])
def test_sample_submission_is_valid(sample_runs, sample_benchmark, method, scorer):
    path, report = sample_runs[method, scorer]
    bench = load_benchmark(sample_benchmark)
    header, entries = read_submission(path)
    assert (header.method, header.scorer, header.model) == (method, scorer, "smollm2-135m-instruct")
    assert header.benchmark == str(sample_benchmark) and header.created_at is not None
    assert header.parameters["top_k"] == 3 and header.parameters["alpha"] == 0.5
    assert ("d_max" in header.parameters) == (method == "tokengeist")
    assert [e.span_id for e in entries] == [s.id for s in bench.spans]  # one per span, in order
    # one forward pass per conversation, whatever the number of spans and recursion steps;
    # AttnTrace one per context subsample; and the attention-sink probe, counted where it runs:
    # once per process and distinct conversation start (the sample's one policy; AttnTrace's
    # subsamples that leave out part of it start differently)
    n = 3 * (3 if scorer == "attntrace" else 1)
    assert n <= report.forward_passes <= (2 * n if scorer == "attntrace" else n + 1)
    assert header.notes["forward_passes"] == report.forward_passes
    # the scoring stage's own reader accepts it, with no span missing
    from mtcabench.results.submission import check_against_benchmark
    from mtcabench.results.submission import read_submission as score_read

    assert check_against_benchmark(score_read(path), bench) == []
    for entry, span in zip(entries, bench.spans):
        assert entry.skipped is None and entry.edges
        conv = bench.conversations[span.conversation_id]
        graph = as_graph(entry, span.span.turn)
        scores = [e.score for e in entry.edges if e.score is not None]
        assert all(0 < s <= 1 for s in scores)
        if method == "tokengeist":
            assert check_graph(graph, conv) == []  # a well-formed provenance graph
        else:  # flat: target -> turns, no structural edges (so no tool-edge rule)
            assert {e.child for e in entry.edges} == {span.span.turn}
            assert len(entry.edges) <= 3 and len(scores) == len(entry.edges)
            assert all(e.parent < e.child for e in entry.edges)


def test_scorers_disagree(sample_runs):
    # three different base scorers give three different submissions on the same spans
    texts = {s: sample_runs["tokengeist", s][0].read_text().split("\n", 1)[1] for s in SCORERS}
    assert len(set(texts.values())) == 3


def test_attntrace_is_repeatable(loaded, sample_benchmark, sample_runs, tmp_path):
    out = tmp_path / "again.jsonl"
    trace_benchmark(sample_benchmark, {"tokengeist": out}, model=loaded, scorer="attntrace",
                    settings=FAST, progress=False)
    first = sample_runs["tokengeist", "attntrace"][0]
    assert read_submission(out)[1] == read_submission(first)[1]


def test_one_pass_equals_one_pass_per_step(loaded, sample_benchmark, sample_runs, tmp_path):
    out = tmp_path / "naive.jsonl"
    report = trace_benchmark(sample_benchmark, {"tokengeist": out}, model=loaded,
                             scorer="avg-attention", settings=FAST, naive=True, progress=False)
    fast_path, fast_report = sample_runs["tokengeist", "avg-attention"]
    naive_entries, fast_entries = read_submission(out)[1], read_submission(fast_path)[1]
    for n, f in zip(naive_entries, fast_entries):
        assert [(e.child, e.parent) for e in n.edges] == [(e.child, e.parent) for e in f.edges]
        for a, b in zip(n.edges, f.edges):
            assert (a.score is None) == (b.score is None)
            assert a.score is None or abs(a.score - b.score) < 1e-4
    assert report.forward_passes > 2 * fast_report.forward_passes


def test_spans_beyond_the_token_limit_are_windowed_or_skipped(loaded, sample_benchmark,
                                                              tmp_path):
    """Past the limit a span is attributed in a context window, recorded on its line; it is
    skipped only when its system turn and own turn alone pass the limit."""
    bench = load_benchmark(sample_benchmark)
    ends, floors = {}, {}
    for s in bench.spans:
        conv = bench.conversations[s.conversation_id]
        lay = render_conversation(conv, loaded.tokenizer).full
        ends[s.id] = lay.span_tokens(s.span.turn, s.span.start, s.span.end)[1]
        floors[s.id] = lay.turn_tokens(0)[1]  # the system turn alone
    limit = sorted(ends.values())[2]  # some spans fit, some do not
    out = tmp_path / "short.jsonl"
    report = trace_benchmark(sample_benchmark, {"flat": out}, model=loaded,
                             settings=TraceSettings(max_tokens=limit), progress=False)
    header, entries = read_submission(out)
    assert header.parameters["max_tokens"] == limit
    for e in entries:
        assert e.skipped is None and e.edges
        assert (e.window is not None) == (ends[e.span_id] > limit)
    assert report.windowed == header.notes["windowed"] == sum(v > limit for v in ends.values()) > 0
    tiny = min(floors.values()) - 1
    out = tmp_path / "tiny.jsonl"
    report = trace_benchmark(sample_benchmark, {"flat": out}, model=loaded,
                             settings=TraceSettings(max_tokens=tiny), progress=False)
    header, entries = read_submission(out)
    assert all(e.skipped.startswith("too-long: even with the content of every earlier turn")
               and not e.edges for e in entries)
    assert report.skipped == len(entries) and report.windowed == 0


def test_shards_merge_into_the_full_run(loaded, sample_benchmark, sample_runs, tmp_path):
    shards = []
    for k in (1, 2):
        p = tmp_path / f"shard{k}.jsonl"
        trace_benchmark(sample_benchmark, {"flat": p}, model=loaded, settings=FAST,
                        shard=f"{k}/2", progress=False)
        shards.append(p)
    sizes = [len(read_submission(p)[1]) for p in shards]
    assert all(sizes) and sum(sizes) == 5
    merged = tmp_path / "merged.jsonl"
    assert merge_shards(shards, merged) == 5
    header, entries = read_submission(merged)
    full_header, full = read_submission(sample_runs["flat", "avg-attention"][0])
    assert header.parameters == full_header.parameters and "shard" not in header.notes
    assert sorted(entries, key=lambda e: e.span_id) == sorted(full, key=lambda e: e.span_id)
    with pytest.raises(InputError, match=r"shards \[2\] of 2 are missing"):
        merge_shards(shards[:1], tmp_path / "x.jsonl")
    with pytest.raises(InputError, match="given twice"):
        merge_shards([shards[0], shards[0]], tmp_path / "x.jsonl")
    with pytest.raises(InputError, match="not a shard"):
        merge_shards([sample_runs["flat", "avg-attention"][0]], tmp_path / "x.jsonl")
    assert not (tmp_path / "x.jsonl").exists()


def test_an_interrupted_run_resumes(loaded, sample_benchmark, sample_runs, tmp_path):
    done_path = sample_runs["flat", "avg-attention"][0]
    lines = done_path.read_text().splitlines()
    out = tmp_path / "resumed.jsonl"
    # what a crash after the first conversation (two spans) leaves behind, plus a torn line
    partial_path(out).write_text("\n".join(lines[:3]) + "\n" + lines[3][:20])
    report = trace_benchmark(sample_benchmark, {"flat": out}, model=loaded, settings=FAST,
                             progress=False)
    assert report.resumed_conversations == 1 and report.forward_passes in (2, 3)  # (+ probe)
    assert read_submission(out)[1] == read_submission(done_path)[1]
    assert not partial_path(out).exists()
    # a partial run with other settings is never mixed in
    partial_path(out).write_text("\n".join(lines[:3]) + "\n")
    with pytest.raises(InputError, match="other settings"):
        trace_benchmark(sample_benchmark, {"flat": out}, model=loaded,
                        settings=TraceSettings(search=SearchSettings(top_k=2)), progress=False)


def test_taubench_conversations(loaded, taubench_short_benchmark, tmp_path):
    paths = {m: tmp_path / f"{m}.jsonl" for m in ("tokengeist", "flat")}
    report = trace_benchmark(taubench_short_benchmark, paths, model=loaded, progress=False)
    assert report.forward_passes in (2, 3) and report.skipped == 0  # (+ the sink probe)
    bench = load_benchmark(taubench_short_benchmark)
    for p in paths.values():
        _, entries = read_submission(p)
        assert len(entries) == len(bench.spans) == 4
        assert all(e.edges for e in entries)


def test_bad_settings_and_inputs_are_clear_errors(loaded, sample_benchmark, tmp_path):
    out = {"flat": tmp_path / "o.jsonl"}
    with pytest.raises(InputError, match="unknown scorer"):
        trace_benchmark(sample_benchmark, out, model=loaded, scorer="nope", progress=False)
    with pytest.raises(InputError, match="unknown method"):
        trace_benchmark(sample_benchmark, {"deep": tmp_path / "o.jsonl"}, model=loaded)
    with pytest.raises(InputError, match="top_k"):
        trace_benchmark(sample_benchmark, out, model=loaded, settings=TraceSettings(search=SearchSettings(top_k=0)))
    with pytest.raises(InputError, match="K/N"):
        trace_benchmark(sample_benchmark, out, model=loaded, shard="2")
    with pytest.raises(InputError, match="not a benchmark folder"):
        trace_benchmark(tmp_path / "missing", out, model=loaded)
    assert not (tmp_path / "o.jsonl").exists()


def test_four_methods_in_one_run_share_one_pass_per_conversation(loaded, sample_benchmark,
                                                                  sample_runs, tmp_path):
    methods = ("recency", "first-user", "flat", "tokengeist")
    outs = {m: tmp_path / f"{m}.jsonl" for m in methods}
    report = trace_benchmark(sample_benchmark, outs, model=loaded, settings=FAST, progress=False)
    # one per conversation, for all four methods (and the sink probe where it runs)
    assert report.forward_passes in (3, 4)
    for m in ("flat", "tokengeist"):  # the same submissions as a run of these two alone
        header, entries = read_submission(outs[m])
        two_header, two = read_submission(sample_runs[m, "avg-attention"][0])
        assert entries == two and header.parameters == two_header.parameters
        assert (header.method, header.scorer, header.notes["forward_passes"]) == (m, "avg-attention", report.forward_passes)
    free = {m: tmp_path / f"alone-{m}.jsonl" for m in ("recency", "first-user")}
    trace_benchmark(sample_benchmark, free, progress=False)
    for m in free:
        header, entries = read_submission(outs[m])
        assert (header.method, header.scorer, header.model) == (m, None, None)
        assert header.notes["forward_passes"] == 0 and len(entries) == 5
        assert entries == read_submission(free[m])[1]


def test_a_new_model_based_method_shares_the_pass(loaded, sample_benchmark, sample_runs, tmp_path):
    from dataclasses import replace

    from mtcabench.evaluate import METHODS, TARGET, Method, register_method, target_graph
    from mtcabench.evaluate.methods._tokengeist import select_parents

    @register_method
    class BestTurn(Method):
        name = "test-best-turn"  # the target linked to its single best-scoring turn

        def graph(self, conversation, span, shares, search):
            best = select_parents(shares(TARGET), span.turn, replace(search, top_k=1))
            return target_graph(span.turn, [p for p, _ in best], score=best[0][1] if best else 1)

    try:
        outs = {"test-best-turn": tmp_path / "best.jsonl", "flat": tmp_path / "flat.jsonl"}
        report = trace_benchmark(sample_benchmark, outs, model=loaded, settings=FAST,
                                 progress=False)
        assert report.forward_passes in (3, 4)  # (+ the sink probe where it runs)
        flat_entries = read_submission(sample_runs["flat", "avg-attention"][0])[1]
        for best, flat in zip(read_submission(outs["test-best-turn"])[1], flat_entries):
            top = max(flat.edges, key=lambda e: (e.score, e.parent))
            assert [(e.parent, e.score) for e in best.edges] == [(top.parent, top.score)]
    finally:
        METHODS.unregister("test-best-turn")
