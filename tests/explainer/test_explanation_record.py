"""explain.json is a versioned record (``mtcabench.model.ExplanationRecord``), written through
the data model, and a file from before it had a version still reads (as version 1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.model import ExplanationRecord

LOG = Path(__file__).parents[1] / "transcripts" / "logs" / "support.anthropic.json"


def test_explain_writes_a_versioned_record_with_each_methods_header_parameters(tmp_path):
    res = CliRunner().invoke(app, ["explain", str(LOG), "--method", "recency", "--method",
                                   "first-user", "--top-k", "2", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "explain.json").read_text())
    record = ExplanationRecord.model_validate(data)
    assert data["kind"] == "explanation" and record.schema_version == 2
    assert set(record.methods) == {"recency", "first-user"}
    assert record.parameters["top_k"] == 2 and record.model is None
    assert record.notes["mtcabench_version"]
    # written through the record: what it reads back is what was written
    assert json.loads(record.model_dump_json()) == data


def test_an_unversioned_explanation_reads_as_version_1():
    old = {"kind": "explanation", "conversation": "c", "model": None, "scorer": None,
           "parameters": {"top_k": 3, "threshold": 0.05, "d_max": 6, "alpha": 0.5,
                          "turn_aggregate": "max"},
           "forward_passes": 0, "tokens": 0, "targets": []}
    record = ExplanationRecord.model_validate(old)
    assert record.schema_version == 1 and record.parameters["top_k"] == 3


def test_a_newer_explanation_is_refused():
    with pytest.raises(ValidationError, match="schema_version 4 of 'explanation' records"):
        ExplanationRecord.model_validate({"kind": "explanation", "schema_version": 4,
                                          "conversation": "c"})
