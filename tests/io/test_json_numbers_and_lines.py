"""Numbers JSON cannot carry (NaN, Infinity, 1e999) are refused with where they are, never
written back as null; JSON Lines are split at \\n only, so a raw U+2028 or U+0085 inside a
string (valid JSON) reads."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode, InputError
from mtcabench.io import JSONError, iter_json_lines, loads, non_finite, split_lines
from mtcabench.transcripts import conversations_from_value, read_conversations

runner = CliRunner()


@pytest.mark.parametrize("text, where", [
    ('{"a": NaN}', "NaN or Infinity"),
    ('{"a": [1, Infinity]}', "NaN or Infinity"),
    ('{"a": -Infinity}', "NaN or Infinity"),
    ('{"a": {"b": 1e999}}', "$.a.b"),
    ('[-1.5E+400]', "$[0]"),
    ('{"a": 1' + "0" * 400 + '.0}', "$.a"),
])
def test_numbers_json_cannot_carry_are_refused(text, where):
    with pytest.raises(JSONError) as info:
        loads(text)
    assert where in info.value.reason


@pytest.mark.parametrize("text", ['{"a": 1e308}', '{"a": "1e999 as text"}', '{"a": 1e-999}',
                                  '{"a": 12345678901234567890123}', '"NaN"'])
def test_numbers_json_carries_still_read(text):
    value = loads(text)
    assert non_finite(value) is None


def _chat_with_arguments(arguments: str) -> str:
    return json.dumps([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "f", "arguments": arguments}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"}])


@pytest.mark.parametrize("arguments", ['{"x": NaN}', '{"x": Infinity}', '{"x": 1e999}'])
def test_tool_call_arguments_with_nan_are_refused_not_written_as_null(tmp_path, arguments):
    log = tmp_path / "chat.json"
    log.write_text(_chat_with_arguments(arguments), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    res = runner.invoke(app, ["ingest", "transcripts", str(log), "--out", str(out)])
    assert res.exit_code == ExitCode.BAD_INPUT, res.output
    assert "arguments" in res.output and "Traceback" not in res.output
    assert not out.exists()


def test_a_whole_file_with_nan_is_refused_naming_the_file(tmp_path):
    log = tmp_path / "chat.json"
    log.write_text('[{"role": "user", "content": "hi", "x": NaN}]', encoding="utf-8")
    with pytest.raises(InputError, match=r"chat\.json.*NaN or Infinity"):
        read_conversations(log)


def test_python_arguments_with_nan_are_refused():
    messages = [{"role": "user", "content": "go"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "c1", "type": "function",
                     "function": {"name": "f", "arguments": {"x": [1.0, math.nan]}}}]}]
    with pytest.raises(InputError, match=r"arguments\.x\[1\] is NaN or infinite"):
        conversations_from_value(messages)


# ---------------------------------------------------------------- one reading of lines


@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\u0085"])
def test_json_lines_with_a_raw_line_separator_in_a_string_read(tmp_path, char):
    log = tmp_path / "chat.jsonl"
    lines = [{"role": "user", "content": f"before{char}after"},
             {"role": "assistant", "content": "ok"}]
    log.write_text("\n".join(json.dumps(m, ensure_ascii=False) for m in lines) + "\n",
                   encoding="utf-8")
    assert char in log.read_text(encoding="utf-8")
    conv = read_conversations(log)[0]
    assert conv.turns[0].content == f"before{char}after"
    assert [n for n, _ in iter_json_lines(log)] == [1, 2]


def test_split_lines_splits_at_newline_only():
    assert split_lines("a\u2028b\r\nc\x85d\n") == ["a\u2028b", "c\x85d", ""]


def test_the_tools_own_conversation_files_round_trip_with_separators(tmp_path):
    conv = conversations_from_value([{"role": "user", "content": "x\u2028y\u0085z"}])[0]
    from mtcabench.io import load_conversations, write_records

    path = tmp_path / "c.jsonl"
    write_records(path, [conv])
    assert load_conversations(path)[conv.id].turns[0].content == "x\u2028y\u0085z"
    assert read_conversations(path)[0].turns[0].content == "x\u2028y\u0085z"


def test_checksum_lists_split_at_newline_only(tmp_path):
    from mtcabench.benchmark._checksums import read_checksums

    (tmp_path / "CHECKSUMS.sha256").write_text("ab  data/a\u2028b.parquet\ncd  c.json\n",
                                         encoding="utf-8")
    assert read_checksums(tmp_path) == {"data/a\u2028b.parquet": "ab", "c.json": "cd"}
