"""The method registry and model-free runs of `trace_benchmark` (no model is ever loaded)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import mtcabench
from mtcabench.benchmark import load_benchmark
from mtcabench.errors import InputError
from mtcabench.evaluate import (
    METHODS,
    Method,
    TraceSettings,
    first_user,
    recency,
    register_method,
    target_graph,
    trace_benchmark,
)
from mtcabench.graph import check_graph
from mtcabench.model import Edge, EdgeKind, ProvenanceGraph, Role, SubmissionEntry, SubmissionHeader


def read_submission(path: Path) -> tuple[SubmissionHeader, list[SubmissionEntry]]:
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    return (SubmissionHeader.model_validate(lines[0]),
            [SubmissionEntry.model_validate(x) for x in lines[1:]])


def as_graph(entry: SubmissionEntry, target: int) -> ProvenanceGraph:
    """A submission's edges as a graph: edges without a score are the structural ones."""
    edges = [Edge(child=e.child, parent=e.parent, score=e.score,
                  kind=EdgeKind.STRUCTURAL if e.score is None else EdgeKind.CONTENT)
             for e in entry.edges]
    return ProvenanceGraph(target=target, nodes=sorted({target, *(x for e in edges for x in e.pair)}),
                           edges=edges)


@pytest.fixture
def no_model(monkeypatch):
    """Fail the test if anything tries to load a model."""
    def boom(*args, **kwargs):
        raise AssertionError("a model was loaded for model-free methods")

    monkeypatch.setattr("mtcabench.evaluate.attribution._loading.load_model", boom)


def test_the_no_model_guard_catches_a_model_load(no_model, sample_benchmark, tmp_path):
    with pytest.raises(AssertionError, match="a model was loaded"):
        trace_benchmark(sample_benchmark, {"flat": tmp_path / "flat.jsonl"}, progress=False)


def test_the_registry_holds_the_built_in_methods():
    assert list(METHODS) == ["tokengeist", "flat", "recency", "first-user", "string-match"]
    assert [m for m, cls in METHODS.load_all().items() if not cls.uses_model] == [
        "recency", "first-user", "string-match"]


def test_baselines_run_without_a_model(no_model, sample_benchmark, tmp_path):
    outs = {m: tmp_path / f"{m}.jsonl" for m in ("recency", "first-user")}
    report = trace_benchmark(sample_benchmark, outs, scorer="not-even-looked-at", progress=False)
    assert report.forward_passes == 0 and report.skipped == 0 and report.spans == 5
    bench = load_benchmark(sample_benchmark)
    from mtcabench.results.submission import check_against_benchmark
    from mtcabench.results.submission import read_submission as score_read

    for m, fn in (("recency", recency), ("first-user", first_user)):
        header, entries = read_submission(outs[m])
        assert (header.method, header.scorer, header.model) == (m, None, None)
        assert header.notes["forward_passes"] == 0 and "device" not in header.notes
        assert [e.span_id for e in entries] == [s.id for s in bench.spans]
        assert check_against_benchmark(score_read(outs[m]), bench) == []
        for entry, span in zip(entries, bench.spans):
            conv = bench.conversations[span.conversation_id]
            graph = as_graph(entry, span.span.turn)
            assert check_graph(graph, conv, span.span) == []
            expected = fn(conv, span.span.turn)
            assert sorted(e.pair for e in graph.edges) == sorted(e.pair for e in expected.edges)
    # the sample's first span (turn 10 of s1): latest result 7, its call 6, user 5 before it
    _, entries = read_submission(outs["recency"])
    assert [(e.child, e.parent, e.score) for e in entries[0].edges] == [
        (10, 7, 1.0), (7, 6, None), (6, 5, 1.0)]
    assert read_submission(outs["first-user"])[0].parameters["greeting_words"]


def test_a_new_method_is_one_class(no_model, sample_benchmark, tmp_path):
    @register_method
    class LatestUser(Method):
        name = "test-latest-user"
        uses_model = False

        def graph(self, conversation, span, shares, search):
            user = max((t.index for t in conversation.turns[: span.turn]
                        if t.role is Role.USER), default=None)
            return target_graph(span.turn, [] if user is None else [user])

    try:
        out = tmp_path / "latest.jsonl"
        trace_benchmark(sample_benchmark, {"test-latest-user": out}, progress=False)
        header, entries = read_submission(out)
        assert header.method == "test-latest-user"
        bench = load_benchmark(sample_benchmark)
        for entry, span in zip(entries, bench.spans):
            conv = bench.conversations[span.conversation_id]
            user = max(t.index for t in conv.turns[: span.span.turn] if t.role is Role.USER)
            assert [(e.child, e.parent) for e in entry.edges] == [(span.span.turn, user)]
    finally:
        METHODS.unregister("test-latest-user")


def test_a_model_free_run_resumes(no_model, sample_benchmark, tmp_path):
    from mtcabench.evaluate.runners._run import partial_path

    out = tmp_path / "recency.jsonl"
    trace_benchmark(sample_benchmark, {"recency": out}, progress=False)
    lines = out.read_text().splitlines()
    partial_path(out).write_text("\n".join(lines[:3]) + "\n")  # the first conversation done
    report = trace_benchmark(sample_benchmark, {"recency": out}, progress=False)
    assert report.resumed_conversations == 1
    assert out.read_text().splitlines()[1:] == lines[1:]


def test_run_checks(no_model, sample_benchmark, tmp_path):
    with pytest.raises(InputError, match="unknown method 'deep'; choose one of tokengeist, "
                       "flat, recency, first-user"):
        trace_benchmark(sample_benchmark, {"deep": tmp_path / "o.jsonl"})
    with pytest.raises(InputError, match="each method needs its own output file"):
        trace_benchmark(sample_benchmark, {"recency": tmp_path / "o.jsonl",
                                           "first-user": tmp_path / "o.jsonl"})
    spans = sample_benchmark / "spans.jsonl"
    before = spans.read_bytes()
    with pytest.raises(InputError, match="this output is the input"):
        trace_benchmark(sample_benchmark, {"recency": spans})
    assert spans.read_bytes() == before
    with pytest.raises(InputError, match="turn aggregate"):
        TraceSettings(turn_aggregate="mean")
    assert not (tmp_path / "o.jsonl").exists()


@pytest.mark.slow  # a few seconds: a fresh interpreter or a whole run
def test_model_free_methods_never_import_torch(sample_benchmark, tmp_path):
    # A fresh interpreter: importing the CLI and running the baselines must not import torch.
    code = f"""
import sys
from typer.testing import CliRunner
from mtcabench.cli import app
assert "torch" not in sys.modules, "importing the CLI imported torch"
res = CliRunner().invoke(app, ["trace", "-b", {str(sample_benchmark)!r}, "--method", "recency",
                               "--method", "first-user", "-o", {str(tmp_path / "{method}.jsonl")!r}])
assert res.exit_code == 0, res.output
assert "torch" not in sys.modules and "transformers" not in sys.modules, "a model was in play"
"""
    root = str(Path(mtcabench.__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "recency.jsonl").is_file() and (tmp_path / "first-user.jsonl").is_file()
