"""Untrusted text on the terminal (issue 22): ids, method names, file names and transcripts that
rich would read as markup (``[/]``) or that hold escape sequences (an OSC 52 clipboard write, a
clear-screen) are shown as text: no MarkupError, no ESC byte reaches the terminal.

The sweep runs the commands a user runs on such files (score, compare, show, ingest, validate,
stats, annotate lineage, review auto-accept) through the CLI, with hostile names everywhere.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.errors import MarkupError
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.explainer._output import excerpt
from mtcabench.progress import progress_bar
from mtcabench.terminal import plain, shown

runner = CliRunner()
SAMPLE = Path(__file__).resolve().parents[2] / "raw" / "sample" / "sample-airline.json"

#: A complete OSC 52 clipboard write, a clear-screen, and markup that closes nothing.
OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"
CLEAR = "\x1b[2J\x1b[H"
HOSTILE = f"m[/]x[bold red]{OSC52}{CLEAR}\x9b31m"


def with_method(submission: Path, method: str, out: Path) -> Path:
    """A copy of a submission of the scoring fixtures whose header names ``method``."""
    lines = [json.loads(x) for x in submission.read_text().splitlines()]
    assert lines[0]["kind"] == "submission"
    lines[0]["method"] = method
    out.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return out


def run(*args) -> str:
    res = runner.invoke(app, [str(a) for a in args])
    assert not isinstance(res.exception, MarkupError), res.exception
    assert res.exit_code in (0, 3), (res.exit_code, res.output, res.exception)
    assert "\x1b" not in res.output and "\x07" not in res.output and "\x9b" not in res.output
    return res.output


def named(folder: Path, head: str, tail: str) -> Path:
    """``folder/head[/]tail``: a path whose text holds ``[/]`` (a folder ``head[`` holding
    ``]tail``), as a user's path may."""
    (folder / f"{head}[").mkdir(exist_ok=True)
    return folder / f"{head}[" / f"]{tail}"


@pytest.fixture
def hostile_dir(tmp_path) -> Path:
    folder = named(tmp_path, "d", CLEAR)
    folder.mkdir()
    return folder


def test_plain_strips_every_escape_and_control_and_keeps_lines():
    text = f"a{OSC52}b{CLEAR}c\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\x00\x7f\x85\u202ed\te\nf"
    assert plain(text) == "abclinkd\te\nf"
    assert plain("a\nb", newlines=False) == "a\\nb"
    assert plain(f"unterminated {OSC52[:-1]}") == "unterminated "
    assert shown("[/]") == "\\[/]"


def test_a_transcript_excerpt_and_a_progress_line_hold_no_escape(capsys):
    assert "\x1b" not in excerpt(f"turn text {OSC52} and {CLEAR}")
    with progress_bar(HOSTILE, 1, enabled=False) as bar:
        bar.log(f"batch {HOSTILE} done")
    err = capsys.readouterr().err
    assert "m[/]x[bold red]" in err and "\x1b" not in err


def test_score_compare_and_show_with_a_hostile_method_and_file_names(bench, submissions,
                                                                     hostile_dir):
    folder, ids = bench
    sub = with_method(submissions[0], HOSTILE, named(hostile_dir, "s", f"{OSC52}.jsonl"))
    flat = with_method(submissions[1], "[/]flat", named(hostile_dir, "flat", ".jsonl"))
    out = run("score", sub, "--benchmark", folder, "--out", named(hostile_dir, "o", CLEAR),
              "--resamples", 50, "--no-plot")
    assert "m[/]x[bold red]" in out
    out = run("score", "--benchmark", folder, "--compare", sub, flat,
              "--out", named(hostile_dir, "cmp", "x"), "--resamples", 50, "--no-plot")
    assert "[/]flat" in out
    out = run("show", ids["s1-flight"], "-b", folder, "-s", sub, "-o", named(hostile_dir, "show", "x"))
    assert "show: " in out
    out = run("show", f"no-such[/]{OSC52}", "-b", folder, "-o", hostile_dir / "show2")
    assert "no-such[/]" in out


def test_ingest_validate_stats_lineage_review_with_hostile_file_names(hostile_dir):
    convs = named(hostile_dir, "c", f"{OSC52}.jsonl")
    cands = named(hostile_dir, "l", f"{CLEAR}.jsonl")
    assert "wrote 3 conversations" in run("ingest", "taubench", SAMPLE, "-o", convs)
    assert "records valid" in run("validate", convs)
    assert "conversations" in run("stats", convs)
    assert "lineage candidates" in run("annotate", "lineage", "--in", convs, "--out", cands)
    assert "decision(s)" in run("review", "auto-accept", "-c", cands, "--conversations", convs,
                                "-o", named(hostile_dir, "r", f"{OSC52}.jsonl"))


def test_a_hostile_conversation_id_is_one_clean_line(tmp_path):
    bad = tmp_path / "c.jsonl"
    bad.write_text(json.dumps({"kind": "conversation", "id": f"x[/]{OSC52}", "source": "s",
                               "domain": "d", "turns": [{"index": 0, "role": "user",
                                                         "content": f"hi {CLEAR}"}]}) + "\n")
    out = run("validate", bad)
    assert out.strip()


def test_explain_prints_a_hostile_transcript_without_its_escapes(hostile_dir):
    """The tree of `explain` quotes the transcript's turns: an OSC 52 clipboard write and a
    clear-screen in them reached the terminal raw (model-free methods: no model loaded)."""
    path = named(hostile_dir, "t", "agent.json")  # the id is the name: it stays printable
    path.write_text(json.dumps([
        {"role": "system", "content": f"You are an agent {OSC52} [/]"},
        {"role": "user", "content": f"Find booking ZX9 {CLEAR} please [/]"},
        {"role": "assistant", "content": f"Booking ZX9 {OSC52} is fine [/]."}]))
    out = run("explain", path, "--method", "recency", "--method", "first-user",
              "--out", named(hostile_dir, "e", CLEAR))
    assert "Find booking ZX9 please [/]" in out and "Booking ZX9 is fine [/]." in out
