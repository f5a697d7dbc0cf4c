"""A base scorer with an option of its own is one module plus its registration line.

tests/evaluate/toy_scorer.py is that module (a scorer averaging the last ``layers`` layers'
attention, with ``--toy-layers``); its registration line is the one below, as the built-in
scorers' lines in ``attribution/_base.py``. Nothing else is edited, and yet it appears with its
option in ``trace --help``, ``explain --help`` (and ``demo --help``) and the docs' scorer
table, runs in ``trace``, ``explain`` and the online Tracer, and its option is recorded in the
submission header and in explain.json.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode
from mtcabench.evaluate import SCORERS, Attributor, Query, Tracer, TraceSettings, make_scorer

HERE = Path(__file__).parent
ROOT = HERE.parent.parent
REFUND = ROOT / "tests" / "transcripts" / "examples" / "refund_agent.json"
runner = CliRunner()


@pytest.fixture
def toy(monkeypatch):
    """The toy scorer registered as a built-in is: its module and its line in the lazy table."""
    monkeypatch.syspath_prepend(str(HERE))
    monkeypatch.setitem(SCORERS.lazy, "toy", "toy_scorer")  # the registration line
    yield
    SCORERS.unregister("toy")
    sys.modules.pop("toy_scorer", None)


@pytest.mark.parametrize("command", ["trace", "explain", "demo"])
def test_the_toy_scorer_and_its_option_appear_in_help(toy, command):
    res = runner.invoke(app, [command, "--help"], terminal_width=200)
    assert res.exit_code == 0, res.output
    assert "--toy-layers" in res.output
    assert "the last layers whose attention is averaged" in res.output
    assert "toy" in res.output.split("--scorer", 1)[1].split("\n--", 1)[0]  # --scorer lists it


def test_without_its_registration_line_the_toy_scorer_is_absent():
    res = runner.invoke(app, ["trace", "--help"], terminal_width=200)
    assert res.exit_code == 0 and "--toy-layers" not in res.output


def test_the_toy_scorer_has_its_row_in_the_docs_scorer_table(toy):
    spec = importlib.util.spec_from_file_location("docs_cli", ROOT / "scripts" / "docs_cli.py")
    docs_cli = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(docs_cli)  # the mkdocs hook, as the site build runs it
    page = (ROOT / "docs" / "evaluate.md").read_text()
    assert docs_cli.SCORER_MARKER in page
    built = docs_cli.on_page_markdown(page, None, None, None)
    (row,) = [line for line in built.splitlines() if line.startswith("| `toy` |")]
    assert "`--toy-layers` (2)" in row and "in the last `layers` layers" in row
    assert row.endswith("| yes |")  # online, declared by the class
    assert any(line.startswith("| `ablation` |") and "`--ablation-passes` (32)" in line
               for line in built.splitlines())


def test_a_bad_toy_option_is_one_line_before_any_work(toy, tmp_path):
    res = runner.invoke(app, ["trace", "-b", str(tmp_path / "none"), "--method", "flat",
                              "--scorer", "toy", "--toy-layers", "0", "-o", str(tmp_path / "o")])
    assert res.exit_code == ExitCode.BAD_INPUT, res.output
    assert "toy needs layers >= 1, got 0" in res.output
    assert not (tmp_path / "o").exists()


@pytest.mark.model
def test_the_toy_scorer_runs_in_trace_and_its_option_is_in_the_header(toy, sample_benchmark,
                                                                        tmp_path):
    out = tmp_path / "sub.jsonl"
    res = runner.invoke(app, ["trace", "-b", str(sample_benchmark), "--method", "flat",
                              "--scorer", "toy", "--toy-layers", "3", "-o", str(out)])
    assert res.exit_code == 0, res.output
    header, *entries = [json.loads(x) for x in out.read_text().splitlines()]
    assert header["scorer"] == "toy"
    assert header["parameters"]["scorer_parameters"] == {"layers": 3}
    assert entries and any(e["edges"] for e in entries)


@pytest.mark.model
def test_the_toy_scorer_runs_in_explain_and_its_option_is_recorded(toy, tmp_path):
    res = runner.invoke(app, ["explain", str(REFUND), "--method", "flat", "--scorer", "toy",
                              "--toy-layers", "3", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "explain.json").read_text())
    assert data["scorer"] == "toy" and data["parameters"]["scorer_parameters"] == {"layers": 3}
    assert data["methods"]["flat"]["scorer_parameters"] == {"layers": 3}
    assert data["targets"][0]["graphs"]["flat"]["edges"]


@pytest.mark.model
def test_the_toy_scorer_runs_online_as_offline(toy, loaded, sample_path):
    from mtcabench.evaluate import render_conversation
    from mtcabench.ingest import read_taubench
    LastLayersSettings = importlib.import_module("toy_scorer").LastLayersSettings  # noqa: N806

    settings = TraceSettings(scorers={"toy": LastLayersSettings(layers=3)})
    conv = next(read_taubench(sample_path))
    tracer = Tracer(loaded, scorer="toy", settings=settings, background=False)
    assert tracer.scorer.settings.layers == 3
    tracer.extend(conv.turns)
    target = tracer.target()
    rendered = render_conversation(conv, loaded.tokenizer)
    off = Attributor(loaded, make_scorer("toy", settings, loaded)).shares(
        rendered, [Query("t", target.turn, target.start, target.end)])["t"]
    on = tracer.shares(target.turn, target.start, target.end)
    assert set(on) == set(off) and max(abs(on[i] - off[i]) for i in off) < 1e-4
    # and it is the option that made them: all layers give other shares
    every = Attributor(loaded, make_scorer("toy", TraceSettings(scorers={
        "toy": LastLayersSettings(layers=100)}), loaded)).shares(
        rendered, [Query("t", target.turn, target.start, target.end)])["t"]
    assert max(abs(every[i] - off[i]) for i in off) > 1e-3
