"""Conversation metadata from one allow-list for every reader: each format's conversations
hold only METADATA_KEYS, and a credential planted in a TauBench run's settings never reaches
the records (issue 37, defect 1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.model import METADATA_KEYS, conversation_metadata
from mtcabench.transcripts import read_conversations

from tests.support.tau2_runs import telecom, write

ROOT = Path(__file__).resolve().parents[2]
LOGS = sorted((ROOT / "tests" / "transcripts" / "logs").glob("*.json"))


@pytest.mark.parametrize("path", [*LOGS, ROOT / "examples" / "refund_agent.json",
                                  ROOT / "examples" / "telecom_run.json",
                                  ROOT / "raw" / "sample" / "sample-airline.json"],
                         ids=lambda p: p.name)
def test_every_reader_writes_only_allow_listed_metadata(path):
    for conv in read_conversations(path):
        assert set(conv.metadata) <= set(METADATA_KEYS), (path.name, conv.metadata)
        assert conv.metadata["origin"]["file"] == path.name


def test_a_key_off_the_list_is_a_reader_s_bug():
    assert conversation_metadata(origin={"file": "a"}, reward=None) == {"origin": {"file": "a"}}
    with pytest.raises(ValueError, match="not on the allow-list.*llm_args"):
        conversation_metadata(origin={}, llm_args={"api_key": "x"})


SECRET = "sk-ant-PLANTED-9f8e7d6c5b4a"


def test_a_credential_in_a_taubench_run_s_info_never_reaches_the_records(tmp_path):
    run = {"task_id": 3, "trial": 0, "reward": 0.5, "traj": [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
        "info": {"api_key": SECRET, "task": {"user_id": "u", "instruction": SECRET,
                                             "actions": [{"name": "f", "kwargs": {"a": 1}}],
                                             "outputs": ["hello"], "auth": SECRET},
                 "user_settings": {"headers": {"Authorization": f"Bearer {SECRET}"}}}}
    src = tmp_path / "m-airline.json"
    src.write_text(json.dumps([run]))
    out = tmp_path / "c.jsonl"
    res = CliRunner().invoke(app, ["ingest", "taubench", str(src), "--out", str(out)])
    assert res.exit_code == 0, res.output
    record = json.loads(out.read_text())
    assert "PLANTED" not in out.read_text()
    assert record["metadata"] == {
        "origin": {"file": "m-airline.json", "run": 0}, "reward": 0.5,
        "expected_actions": [{"name": "f", "arguments": {"a": 1}, "requestor": "assistant"}],
        "expected_outputs": ["hello"]}


def test_ingest_transcripts_keeps_a_tau2_run_s_settings_out_too(tmp_path):
    run = telecom()
    run["info"]["agent_info"]["llm_args"]["api_key"] = SECRET
    src = write(tmp_path / "tel.json", run)
    out = tmp_path / "c.jsonl"
    res = CliRunner().invoke(app, ["ingest", "transcripts", str(src), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert SECRET not in out.read_text() and "llm_args" not in out.read_text()
