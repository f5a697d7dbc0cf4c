"""Names from a submission and a benchmark are text in a ``.score.md`` report, as they are in
the HTML pages: no raw markup, and a ``|`` does not shift a table's cells (issue 48)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from mtcabench.benchmark import load_benchmark
from mtcabench.cli import app
from mtcabench.terminal import markdown, markdown_code

HOSTILE = '<script>window.x=1</script><img src=x onerror="a()"> a|b [l](http://e) *e* `c`'


def test_markdown_text_is_never_markup():
    text = markdown(HOSTILE)
    assert "<" not in text and ">" not in text
    assert "a\\|b" in text and "\\[l\\]" in text and "\\*e\\*" in text and "\\`c\\`" in text
    assert markdown("medical_triage gpt-4.1") == "medical_triage gpt-4.1"  # names unchanged
    assert markdown("line\nbreak") == "line\\\\nbreak"  # one line
    assert markdown_code("gpt-4o") == "`gpt-4o`" and markdown_code("a`b|c") == "a\\`b\\|c"


def test_a_score_report_shows_hostile_names_as_text(sample_benchmark, tmp_path):
    span = load_benchmark(sample_benchmark).spans[0]
    sub = tmp_path / "sub.jsonl"
    sub.write_text(json.dumps({"kind": "submission", "method": HOSTILE, "scorer": "x|y",
                               "model": "<b>m</b>"}) + "\n"
                   + json.dumps({"span_id": span.id, "edges": [{"child": span.span.turn,
                                                                "parent": 0}]}) + "\n")
    res = CliRunner().invoke(app, ["score", str(sub), "--benchmark", str(sample_benchmark),
                                   "--out", str(tmp_path / "out"), "--resamples", "50"])
    assert res.exit_code == 0, res.output
    md = (tmp_path / "out" / "sub.score.md").read_text(encoding="utf-8")
    assert "<script>" not in md and "<img" not in md and "<b>" not in md
    assert "&lt;script&gt;" in md and "scorer x\\|y" in md
    for line in md.splitlines():  # every table row has its header's number of cells
        if line.startswith("| group"):
            cells = len(line.split(" | "))
        elif line.startswith("| "):
            assert len([c for c in line.split(" | ")]) == cells, line
