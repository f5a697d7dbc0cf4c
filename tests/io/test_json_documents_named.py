"""A file that is one JSON document (an explain.json, a score report, a release.json), given
where JSON Lines are read, is named for what it is, and the message says what is read there:
never "malformed JSON" (validate) or "a JSON dict" (score) (issue 37). One naming,
io.what_json_document, for both readers; score's case is in tests/scoring/test_bad_input.py."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode
from mtcabench.io import what_json_document
from mtcabench.model import ExplanationRecord

runner = CliRunner()


@pytest.fixture()
def explain_json(tmp_path):
    """An explain.json as `mtcabench explain` writes it: the record, indented."""
    path = tmp_path / "explain.json"
    record = ExplanationRecord(conversation="c1", model="m", scorer="avg-attention")
    path.write_text(json.dumps(record.model_dump(mode="json"), indent=1) + "\n")
    return path


def one_error(res) -> str:
    assert res.exit_code == ExitCode.BAD_INPUT, res.output
    assert "Traceback" not in res.output
    lines = [x for x in res.output.splitlines() if x.startswith("error:")]
    assert len(lines) == 1, res.output
    return " ".join(res.output.split())


def test_what_a_json_document_is(explain_json, tmp_path):
    assert what_json_document(explain_json) == (
        "an explanation written by `mtcabench explain` (explain.json), one JSON document of "
        "kind 'explanation'")
    other = tmp_path / "other.json"
    other.write_text('{\n "kind": "mystery"\n}\n')
    assert what_json_document(other) == "one JSON dict document"
    lines = tmp_path / "lines.jsonl"
    lines.write_text('{"a": 1}\n{"a": 2}\n')
    assert what_json_document(lines) is None  # JSON Lines, not one document


def test_validate_names_an_explain_json_and_what_it_reads(explain_json):
    out = one_error(runner.invoke(app, ["validate", str(explain_json)]))
    assert "this is an explanation written by `mtcabench explain`" in out
    assert "not a record file; validate reads record files: JSON Lines" in out
    assert "malformed JSON" not in out


def test_validate_names_a_one_line_explanation_too(tmp_path):
    path = tmp_path / "explain.jsonl"
    path.write_text(json.dumps(ExplanationRecord(conversation="c1").model_dump(mode="json"))
                    + "\n")
    out = one_error(runner.invoke(app, ["validate", str(path)]))
    assert "explain.jsonl:1: this is an explanation" in out and "unknown record kind" not in out
