"""OpenAI-style message content given as a list of parts is read, not refused (issue 12)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode
from mtcabench.ingest import ContentError, message_text, read_taubench
from mtcabench.io import load_conversations

runner = CliRunner()


def test_plain_and_missing_content():
    assert message_text("hello") == "hello"
    assert message_text(None) == ""
    assert message_text("") == ""


def test_text_parts_are_joined_in_order():
    parts = [{"type": "text", "text": "first"}, {"type": "text", "text": "second"}]
    assert message_text(parts) == "first\nsecond"
    assert message_text([]) == ""
    # The Responses API's part types and an assistant's refusal are text too.
    assert message_text([{"type": "input_text", "text": "a"}, {"type": "output_text", "text": "b"},
                         {"type": "refusal", "refusal": "no"}]) == "a\nb\nno"


@pytest.mark.parametrize("part, placeholder", [
    ({"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}, "[image]"),
    ({"type": "input_image", "image_url": "https://example.org/x.png"}, "[image]"),
    ({"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}, "[audio]"),
    ({"type": "file", "file": {"file_id": "f1"}}, "[file]"),
])
def test_non_text_parts_are_kept_as_placeholders(part, placeholder):
    assert message_text([{"type": "text", "text": "look:"}, part]) == f"look:\n{placeholder}"


@pytest.mark.parametrize("content, why", [
    ([{"type": "txt", "text": "x"}], "part 0: unknown content part type 'txt'"),
    ([{"text": "x"}], "part 0: a content part without a type"),
    ([{"type": "text", "text": 5}], "part 0: a text part whose text is int"),
    (["bare string"], "part 0: expected an object"),
    ({"type": "text", "text": "x"}, "content is dict"),
    (7, "content is int"),
])
def test_unknown_shapes_are_refused_with_the_part(content, why):
    with pytest.raises(ContentError, match=why.replace("[", r"\[")):
        message_text(content)


def run_with(content) -> dict:
    return {"task_id": "1", "trial": 0, "reward": 1, "info": {}, "traj": [
        {"role": "system", "content": [{"type": "text", "text": "You are an agent."}]},
        {"role": "user", "content": content},
        {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
    ]}


def test_taubench_ingest_reads_content_parts(tmp_path):
    src = tmp_path / "m-airline.json"
    src.write_text(json.dumps([run_with([
        {"type": "text", "text": "My id is u_1."},
        {"type": "image_url", "image_url": {"url": "https://example.org/boarding-pass.png"}},
        {"type": "text", "text": "Cancel it."}])]), encoding="utf-8")
    out = tmp_path / "c.jsonl"
    res = runner.invoke(app, ["ingest", "taubench", str(src), "-o", str(out)])
    assert res.exit_code == 0, res.output
    conv = next(iter(load_conversations(out).values()))
    assert conv.turns[0].text == "You are an agent."
    assert conv.turns[1].text == "My id is u_1.\n[image]\nCancel it."
    assert conv.turns[2].text == "Done."


def test_taubench_ingest_refuses_an_unknown_part_naming_it(tmp_path):
    src = tmp_path / "m-airline.json"
    src.write_text(json.dumps([run_with([{"type": "video", "video": "x"}])]), encoding="utf-8")
    out = tmp_path / "c.jsonl"
    res = runner.invoke(app, ["ingest", "taubench", str(src), "-o", str(out)])
    assert res.exit_code == ExitCode.BAD_INPUT, res.output
    line = [x for x in res.output.splitlines() if x.startswith("error:")][0]
    assert "m-airline.json" in line and "run 0" in line and "message 1" in line
    assert "unknown content part type 'video'" in line
    assert not out.exists()


def test_reader_function_agrees(tmp_path):
    src = tmp_path / "m-airline.json"
    src.write_text(json.dumps([run_with([{"type": "text", "text": "hi"}])]), encoding="utf-8")
    assert [t.text for t in next(read_taubench(src)).turns] == ["You are an agent.", "hi", "Done."]
