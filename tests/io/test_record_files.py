"""Records refuse the wrong kind and unknown versions; files are written atomically."""

from __future__ import annotations

import json

import pytest

from mtcabench.errors import InputError
from mtcabench.io import RecordAppender, atomic_write, read_done_keys, read_records, write_records
from mtcabench.model import (
    Candidate,
    Conversation,
    Role,
    SubmissionEntry,
    ToolCall,
    Turn,
)


def tiny_conv(cid: str = "t/1") -> Conversation:
    return Conversation(id=cid, source="t", domain="d", turns=[
        Turn(index=0, role=Role.USER, content="hi"),
        Turn(index=1, role=Role.ASSISTANT, content="Looking.",
             tool_calls=[ToolCall(id="a", name="f", arguments={"x": "é"})]),
        Turn(index=2, role=Role.TOOL, content="ok", tool_call_id="a"),
    ])


def test_turn_text_renders_tool_calls_after_content():
    conv = tiny_conv()
    assert conv.turns[1].text == 'Looking.\nf({"x": "é"})'
    assert conv.turns[0].text == "hi"


def test_round_trip_keeps_kind_and_version(tmp_path):
    path = tmp_path / "c.jsonl"
    assert write_records(path, [tiny_conv("t/1"), tiny_conv("t/2")]) == 2
    first = json.loads(path.read_text().splitlines()[0])
    assert first["kind"] == "conversation" and first["schema_version"] == 1
    back = list(read_records(path, Conversation))
    assert [c.id for c in back] == ["t/1", "t/2"] and back[0] == tiny_conv("t/1")


def test_reader_refuses_unknown_version_with_clear_message(tmp_path):
    path = tmp_path / "c.jsonl"
    obj = json.loads(tiny_conv().model_dump_json())
    obj["schema_version"] = 7
    path.write_text(json.dumps(obj) + "\n")
    with pytest.raises(InputError, match=r"c\.jsonl:1 \(record t/1\).*schema_version 7.*upgrade"):
        list(read_records(path, Conversation))


def test_reader_refuses_wrong_kind(tmp_path):
    path = tmp_path / "c.jsonl"
    write_records(path, [tiny_conv()])
    with pytest.raises(InputError, match="'conversation' record, expected 'prediction'"):
        list(read_records(path, SubmissionEntry))


def test_conversation_rules():
    with pytest.raises(ValueError, match="no turns"):
        Conversation(id="x", source="t", domain="d", turns=[])
    with pytest.raises(ValueError, match="which no earlier turn issued"):
        Conversation(id="x", source="t", domain="d", turns=[
            Turn(index=0, role=Role.TOOL, content="r", tool_call_id="zz")])
    with pytest.raises(ValueError, match="a system turn issues tool calls; only assistant "
                       "and user turns do"):
        Turn(index=0, role=Role.SYSTEM, tool_calls=[ToolCall(id="a", name="f")])


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    path = tmp_path / "out.jsonl"
    with pytest.raises(RuntimeError), atomic_write(path) as fh:
        fh.write("partial\n")
        raise RuntimeError("crash")
    assert list(tmp_path.iterdir()) == []


def test_atomic_write_missing_folder_is_clear(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        write_records(tmp_path / "nope" / "x.jsonl", [])


def test_appender_recovers_from_truncated_line(tmp_path):
    path = tmp_path / "cand.jsonl"
    rec = Candidate(id="s1", conversation_id="c", annotator={"name": "lineage"})
    with RecordAppender(path) as app:
        app.write(rec)
    with path.open("a") as fh:
        fh.write('{"kind": "candidate", "id": "s2", "conv')  # crash mid-line
    assert read_done_keys(path) == {"s1"}
    with RecordAppender(path) as app:
        app.write(rec.model_copy(update={"id": "s3"}))
    assert [r.id for r in read_records(path, Candidate)] == ["s1", "s3"]
