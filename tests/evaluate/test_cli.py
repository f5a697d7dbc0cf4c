"""The `mtcabench trace`, `trace-merge` and `at2-learn` commands (thin layer over the evaluator)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.evaluate import AblationSettings, AT2Settings, AttnTraceSettings, TraceSettings

runner = CliRunner()


def option_defaults(command: str) -> dict:
    import typer.main

    return {p.name: p.default for p in typer.main.get_command(app).commands[command].params}


def test_cli_defaults_match_the_library():
    settings, defaults = TraceSettings(), option_defaults("trace")
    for key in ("top_k", "threshold", "d_max", "alpha"):
        assert defaults[key] == getattr(settings.search, key), key
    for key in ("turn_aggregate", "seed", "max_tokens"):
        assert defaults[key] == getattr(settings, key), key
    # Each scorer's options are its settings dataclass's fields, with its defaults.
    for key, cls in (("attntrace", AttnTraceSettings), ("at2", AT2Settings),
                     ("ablation", AblationSettings)):
        for f in dataclasses.fields(cls):
            assert defaults[f"{key}_{f.name}"] == getattr(cls(), f.name), (key, f.name)


def test_trace_command_writes_a_submission(tiny_loaded, tiny_model_dir, sample_benchmark,
                                          tmp_path, monkeypatch):
    from mtcabench.evaluate.attribution import _loading

    loads = []
    monkeypatch.setattr(_loading, "_load", lambda *a: loads.append(a))  # the memo's model serves
    out = tmp_path / "sub.jsonl"
    result = runner.invoke(app, ["trace", "--benchmark", str(sample_benchmark), "--method", "flat",
                                 "--scorer", "avg-attention", "--top-k", "2", "--out", str(out),
                                 "--open-system", "0.05", "--named-values",
                                 "--model", str(tiny_model_dir)])
    assert result.exit_code == 0, result.output
    assert loads == []
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert lines[0]["kind"] == "submission" and lines[0]["parameters"]["top_k"] == 2
    assert lines[0]["parameters"]["open_system"] == 0.05  # the run says how it was made
    assert lines[0]["parameters"]["named_values"] is True
    assert lines[0]["model"] == "tiny-llama"
    # Top 2 per span, and the policy (turn 0, the system prompt) past them for a claim
    assert len(lines) == 6 and all(len([e for e in x["edges"] if e["parent"] != 0]) <= 2
                                   for x in lines[1:])
    assert "wrote 5 spans (0 skipped)" in result.output


@pytest.mark.model
def test_trace_command_four_methods_in_one_run_then_score(sample_benchmark, tmp_path):
    methods = ["recency", "first-user", "flat", "tokengeist"]
    result = runner.invoke(app, ["trace", "-b", str(sample_benchmark),
                                 *(x for m in methods for x in ("--method", m)),
                                 "-o", str(tmp_path / "{method}.jsonl")])
    assert result.exit_code == 0, result.output
    # One pass per conversation, and the sink probe once for the system prompt they share
    # (every model call is counted; the caches are emptied before each test)
    assert "3 conversations, 4 forward passes" in result.output
    subs = [tmp_path / f"{m}.jsonl" for m in methods]
    assert [json.loads(p.read_text().splitlines()[0])["method"] for p in subs] == methods
    result = runner.invoke(app, ["score", *map(str, subs), "-b", str(sample_benchmark),
                                 "-o", str(tmp_path / "score"), "--resamples", "0", "--no-plot"])
    assert result.exit_code == 0, result.output
    for label in ("recency", "first-user", "flat/avg-attention", "tokengeist/avg-attention"):
        assert label in result.output


def test_open_system_zero_is_off_on_the_command_line():
    """--open-system 0 turns the claims' policy rule off (None in Python); the default is on."""
    from mtcabench.cli._evaluator import search_settings
    from mtcabench.evaluate import SearchSettings

    assert search_settings(3, 0.05, 6, 0.5, open_system=0.0).open_system is None
    assert search_settings(3, 0.05, 6, 0.5).open_system == SearchSettings().open_system == 0.05
    assert search_settings(3, 0.05, 6, 0.5).named_values is True


@pytest.mark.parametrize("args, message", [
    (["--shard", "3/2"], "K must be between 1 and N"),
    (["--scorer", "bogus"], "unknown scorer"),
    (["--alpha", "2"], "alpha must be in [0, 1]"),
    (["--open-system", "1.5"], "open_system must be in (0, 1]"),
    (["--shard", "1/2", "--ray"], "--shard and --ray exclude each other"),
])
def test_trace_command_errors_are_one_line(sample_benchmark, tmp_path, args, message):
    out = tmp_path / "sub.jsonl"
    result = runner.invoke(app, ["trace", "-b", str(sample_benchmark), "-o", str(out), *args])
    assert result.exit_code == 3, result.output
    assert message in result.output and "Traceback" not in result.output
    assert not out.exists()


def test_trace_command_refuses_a_missing_benchmark_or_model(sample_benchmark, tmp_path):
    out = str(tmp_path / "o.jsonl")
    result = runner.invoke(app, ["trace", "-b", str(tmp_path / "nowhere"), "-o", out])
    assert result.exit_code == 3 and "not a benchmark folder" in result.output
    result = runner.invoke(app, ["trace", "-b", str(sample_benchmark), "-o", out,
                                 "--model", str(tmp_path / "m.gguf")])
    assert result.exit_code == 3 and "no such GGUF file" in result.output


def test_merge_command_checks_its_inputs(tmp_path):
    bad = tmp_path / "a.jsonl"
    bad.write_text(json.dumps({"kind": "submission", "method": "flat"}) + "\n")
    result = runner.invoke(app, ["trace-merge", str(bad), "-o", str(tmp_path / "m.jsonl")])
    assert result.exit_code == 3 and "not a shard" in result.output


@pytest.mark.model
def test_at2_learn_command_writes_weights_trace_can_use(sample_benchmark, tmp_path):
    weights = tmp_path / "w.json"
    result = runner.invoke(app, ["at2-learn", "-b", str(sample_benchmark), "-o", str(weights),
                                 "--masks", "3", "--iterations", "20", "--conversations", "2",
                                 "--heldout", "0"])
    assert result.exit_code == 0, result.output
    assert json.loads(weights.read_text())["training"]["conversations"] == 2
    out = tmp_path / "sub.jsonl"
    result = runner.invoke(app, ["trace", "-b", str(sample_benchmark), "-o", str(out),
                                 "--scorer", "at2", "--at2-weights", str(weights)])
    assert result.exit_code == 0, result.output
    assert len(out.read_text().splitlines()) == 6


def test_one_out_per_method_or_a_method_pattern(sample_benchmark, tmp_path):
    bench = str(sample_benchmark)
    methods = ["--method", "recency", "--method", "first-user"]  # model-free: no model loaded
    result = runner.invoke(app, ["trace", "-b", bench, *methods,
                                 "-o", str(tmp_path / "run-{method}.jsonl")])
    assert result.exit_code == 0, result.output
    for m in ("recency", "first-user"):
        header = json.loads((tmp_path / f"run-{m}.jsonl").read_text().splitlines()[0])
        assert header["method"] == m and header.get("scorer") is None
    assert "wrote 5 spans (0 skipped)" in result.output and "0 forward passes" in result.output
    result = runner.invoke(app, ["trace", "-b", bench, *methods,
                                 "-o", str(tmp_path / "a.jsonl"), "-o", str(tmp_path / "b.jsonl")])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "b.jsonl").read_text().splitlines()[0])["method"] == "first-user"


@pytest.mark.parametrize("args, message", [
    (["--method", "recency", "--method", "first-user", "-o", "one.jsonl"],
     "give one --out per --method"),
    (["--method", "recency", "--method", "recency", "-o", "{method}.jsonl"],
     "--method recency given twice"),
    (["--method", "deep", "-o", "o.jsonl"], "unknown method 'deep'"),
])
def test_method_and_out_errors(sample_benchmark, tmp_path, args, message):
    args = [a if not a.endswith(".jsonl") else str(tmp_path / a) for a in args]
    result = runner.invoke(app, ["trace", "-b", str(sample_benchmark), *args])
    assert result.exit_code == 3, result.output
    assert message in result.output and "Traceback" not in result.output
    assert list(tmp_path.iterdir()) == []


def test_trace_refuses_to_overwrite_its_input(sample_benchmark):
    spans = sample_benchmark / "spans.jsonl"
    before = spans.read_bytes()
    result = runner.invoke(app, ["trace", "-b", str(sample_benchmark), "--method", "recency",
                                 "-o", str(spans)])
    assert result.exit_code == 3 and "this output is the input" in result.output
    assert spans.read_bytes() == before


def test_merge_refuses_to_overwrite_a_shard(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for p in (a, b):
        p.write_text(json.dumps({"kind": "submission", "method": "flat"}) + "\n")
    result = runner.invoke(app, ["trace-merge", str(a), str(b), "-o", str(a)])
    assert result.exit_code == 3 and "this output is the input" in result.output
    assert a.read_text() == b.read_text()


def test_at2_learn_refuses_to_overwrite_its_input(sample_benchmark):
    convs = sample_benchmark / "conversations.jsonl"
    before = convs.read_bytes()
    result = runner.invoke(app, ["at2-learn", "-b", str(sample_benchmark), "-o", str(convs)])
    assert result.exit_code == 3 and "this output is the input" in result.output
    assert convs.read_bytes() == before
