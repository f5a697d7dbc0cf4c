"""Hostile text in input files (issue 22): a NUL or an escape in an id is refused by the model;
a UTF-8 BOM at the start of a file is accepted, elsewhere named; a lone surrogate escape is
named with its line and column. Each is one line, exit 3."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode, InputError
from mtcabench.io import JSONError, iter_json_lines, loads, parse_json
from mtcabench.model import Candidate, Conversation

runner = CliRunner()


def conversation(cid: str = "c1", content: str = "hello") -> dict:
    return {"kind": "conversation", "id": cid, "source": "s", "domain": "d",
            "turns": [{"index": 0, "role": "user", "content": content}]}


@pytest.mark.parametrize("cid", ["a\x00b", "a\x1b]52;c;eA==\x07", "a\nb", "a\x85b", "a\u2028b"])
def test_an_id_with_a_control_character_is_refused_by_the_model(cid):
    with pytest.raises(ValidationError, match="control character"):
        Conversation.model_validate(conversation(cid))
    with pytest.raises(ValidationError, match="control character"):
        Candidate.model_validate({"id": f"{cid}#1:0-1", "conversation_id": "x",
                                  "annotator": {"name": "llm"}, "status": "rejected"})


def test_validate_refuses_a_nul_in_a_conversation_id_in_one_line(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(conversation("task\x00-1")) + "\n")
    res = runner.invoke(app, ["validate", str(path)])
    assert res.exit_code == ExitCode.BAD_INPUT, res.output
    line = res.output.strip()
    assert "\n" not in line and "\x00" not in line and "control character '\\x00'" in line, line


def test_printable_ids_stay_valid():
    for cid in ("taubench/airline/gpt-4o/task-3/trial-0", "ünïcode id with spaces 🎉"):
        assert Conversation.model_validate(conversation(cid)).id == cid


def test_a_bom_at_the_start_of_a_file_is_accepted(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + (json.dumps(conversation()) + "\n").encode())
    assert [n for n, _ in iter_json_lines(path)] == [1]
    assert parse_json(b"\xef\xbb\xbf[1]", "whole.json") == [1]
    res = runner.invoke(app, ["validate", str(path)])
    assert res.exit_code == 0, res.output


def test_a_bom_inside_a_file_is_named(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_bytes((json.dumps(conversation("a")) + "\n\ufeff"
                      + json.dumps(conversation("b")) + "\n").encode())
    with pytest.raises(InputError, match=r"c\.jsonl:2: .*byte order mark \(BOM\)"):
        list(iter_json_lines(path))


@pytest.mark.parametrize("text, escape, line, col", [
    ('{"a": "x\\ud800y"}', "\\ud800", 1, 9),
    ('{"a": "\\udc00"}', "\\udc00", 1, 8),
    ('{"b": 1,\n "a": "\\ud83d"}', "\\ud83d", 2, 8),
    ('{"a": "\\\\ud800 \\ud800\\u0041"}', "\\ud800", 1, 16),
])
def test_a_lone_surrogate_is_named_with_line_and_column(text, escape, line, col):
    with pytest.raises(JSONError) as info:
        loads(text)
    assert info.value.reason.startswith(f"lone surrogate {escape} at line {line} column {col}")
    assert loads('{"a": "\\ud83d\\ude00"}') == {"a": "\U0001f600"}  # a whole pair is a character


def test_validate_names_a_lone_surrogate(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(conversation(content="cut \ud83d"), ensure_ascii=True) + "\n")
    res = runner.invoke(app, ["validate", str(path)])
    assert res.exit_code == ExitCode.BAD_INPUT
    assert "c.jsonl:1: lone surrogate \\ud83d at line 1 column" in res.output


@pytest.mark.parametrize("encoding, name", [("utf-16", "UTF-16"), ("utf-16-be", None),
                                            ("utf-32", "UTF-32"), ("utf-32-le", None)])
def test_a_file_saved_as_utf16_or_utf32_is_named_by_its_encoding(tmp_path, encoding, name):
    """Our own case: an editor's "save as Unicode" writes UTF-16 with a byte order mark; the
    message names the encoding; without a mark, ASCII text in UTF-16/32 starts with a NUL."""
    conv_path, run_path = tmp_path / "c.jsonl", tmp_path / "gpt-4o-airline.json"
    conv_path.write_bytes((json.dumps(conversation()) + "\n").encode(encoding))
    run_path.write_bytes(json.dumps([]).encode(encoding))
    for args in (["validate", str(conv_path)],
                 ["ingest", "taubench", str(run_path), "-o", str(tmp_path / "o.jsonl")]):
        res = runner.invoke(app, args)
        assert res.exit_code == ExitCode.BAD_INPUT, res.output
        line = res.output.strip().splitlines()[-1]
        if name:
            assert f"{name} text, not UTF-8 (it starts with a {name} byte order mark); save it " \
                   "as UTF-8" in line, line
        else:
            assert "NUL byte: UTF-16 or UTF-32 text without a byte order mark?" in line, line
    assert not (tmp_path / "o.jsonl").exists()
