"""`mtcabench annotate lineage`: files in and out, the printed summary, options, bad input."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode
from mtcabench.ingest import read_taubench, write_conversations
from mtcabench.io import read_records
from mtcabench.model import Candidate

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture()
def sample_conversations(sample_path, tmp_path):
    path = tmp_path / "conversations.jsonl"
    write_conversations(path, read_taubench(sample_path))
    return path


def test_writes_candidates_and_prints_summary(sample_conversations, tmp_path):
    out, summary = tmp_path / "candidates.jsonl", tmp_path / "summary.json"
    res = invoke("annotate", "lineage", "--in", sample_conversations, "--out", out,
                 "--summary-json", summary)
    assert res.exit_code == 0, res.output
    cands = list(read_records(out, Candidate))
    assert len(cands) == 21
    assert {c.annotator.label for c in cands} == {"lineage:lineage-v4"}
    assert "spans by type:  direct 17, chained 2, multi-source 1, hallucination 1" in res.output
    assert "spans by depth:" in res.output and "skipped by rule:" in res.output
    assert "unsupported-value 1" in res.output
    assert json.loads(summary.read_text())["spans"] == 21


def test_options_change_the_rules(sample_conversations, tmp_path):
    out = tmp_path / "c.jsonl"
    res = invoke("annotate", "lineage", "--in", sample_conversations, "--out", out,
                 "--stop-word", "JFK", "--stop-word", "SEA", "--min-length", "4")
    assert res.exit_code == 0, res.output
    cands = list(read_records(out, Candidate))
    texts = [c.span.text for c in cands]
    assert {c.annotator.rules_version[:11] for c in cands} == {"lineage-v4+"}
    assert "JFK" not in texts and "SEA" not in texts and "ORD" not in texts
    assert "HAT136" in texts and "151" not in texts  # 3 characters < 4


def test_rules_v1_reproduces_the_earlier_output(sample_conversations, tmp_path):
    out, summary = tmp_path / "v1.jsonl", tmp_path / "v1.json"
    res = invoke("annotate", "lineage", "--rules", "lineage-v1", "--in", sample_conversations,
                 "--out", out, "--summary-json", summary)
    assert res.exit_code == 0, res.output
    cands = list(read_records(out, Candidate))
    assert {c.annotator.label for c in cands} == {"lineage:lineage-v1"}
    assert "lineage lineage-v1: 21 spans" in res.output
    assert "spans by type:  direct 16, chained 3, multi-source 1, hallucination 1" in res.output
    # v1's summary lists v1's reasons and settings only, as it always did
    d = json.loads(summary.read_text())
    assert "clause-one-source" not in d["skipped"] and "clause_spans" not in d["settings"]
    res = invoke("annotate", "lineage", "--rules", "lineage-v1", "--stop-word", "JFK",
                 "--in", sample_conversations, "--out", tmp_path / "v1o.jsonl")
    assert {c.annotator.rules_version[:11]
            for c in read_records(tmp_path / "v1o.jsonl", Candidate)} == {"lineage-v1+"}


def test_unknown_rules_version_is_a_usage_error(sample_conversations, tmp_path):
    out = tmp_path / "c.jsonl"
    res = invoke("annotate", "lineage", "--rules", "lineage-v9", "--in", sample_conversations,
                 "--out", out)
    assert res.exit_code == ExitCode.USAGE
    assert "lineage-v9" in res.output and "lineage-v1, lineage-v2, lineage-v3, lineage-v4" in res.output
    assert not out.exists()


def test_missing_input_is_one_clear_error(tmp_path):
    out = tmp_path / "c.jsonl"
    res = invoke("annotate", "lineage", "--in", tmp_path / "nope.jsonl", "--out", out)
    assert res.exit_code == ExitCode.BAD_INPUT
    assert "nope.jsonl: no such file" in res.output and "Traceback" not in res.output
    assert not out.exists()


def test_malformed_line_names_file_and_line(sample_conversations, tmp_path):
    bad = tmp_path / "bad.jsonl"
    lines = sample_conversations.read_text().splitlines()
    bad.write_text(lines[0] + "\n{not json\n")
    out = tmp_path / "c.jsonl"
    res = invoke("annotate", "lineage", "--in", bad, "--out", out)
    assert res.exit_code == ExitCode.BAD_INPUT
    assert "bad.jsonl:2" in res.output
    assert not out.exists()  # nothing half-written


def test_conversation_without_assistant_text_is_counted(tmp_path):
    conv = {"id": "t/quiet", "source": "test", "domain": "airline", "turns": [
        {"index": 0, "role": "user", "content": "Hello HAT001?"},
        {"index": 1, "role": "assistant", "content": "",
         "tool_calls": [{"id": "c1", "name": "f", "arguments": {"flight": "HAT001"}}]},
        {"index": 2, "role": "tool", "content": "Transfer successful", "tool_call_id": "c1"}]}
    path = tmp_path / "quiet.jsonl"
    path.write_text(json.dumps(conv) + "\n")
    out = tmp_path / "c.jsonl"
    res = invoke("annotate", "lineage", "--in", path, "--out", out)
    assert res.exit_code == 0, res.output
    assert "1 conversations without any" in res.output
    assert "1 not JSON" in res.output
    assert out.read_text() == ""
