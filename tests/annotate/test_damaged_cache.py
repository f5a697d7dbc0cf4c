"""A damaged response cache (issue 22): a bad row is a miss, sent again, counted and replaced;
a file whose pages are garbled, or that is no database, is one line naming it (exit 3)."""

from __future__ import annotations

import json
import sqlite3

import pytest
from tests.support.annotate_data import good_propose_table, good_verify
from tests.support.annotate_fakes import FakeOpenAI, script_responder
from typer.testing import CliRunner

from mtcabench.annotate import annotate_propose
from mtcabench.annotate.llm import Answer, ResponseCache
from mtcabench.annotate.llm.cache import answer_of
from mtcabench.cli import app
from mtcabench.errors import ExitCode, InputError

runner = CliRunner()

#: Rows that are not an answer: not JSON, JSON of another shape, fields of the wrong type.
BAD_ROWS = ["{not json", "[1, 2]", '{"content": 3}', '{"content": "x", "prompt_tokens": "7"}',
            '{"content": "x", "extra": 1}', '{"content": "x", "completion_tokens": true}',
            '{"finish_reason": "stop"}', "null"]


def responder():
    return script_responder(good_propose_table(), default_verify=good_verify)


def _fill(tiny_path, out, fake):
    summary = annotate_propose(tiny_path, out, base_url=fake.base_url, model="fake",
                               progress=False)
    assert summary.complete and summary.accounting.requests == len(fake.chat_requests())
    return out.parent / "annotate-cache.sqlite"


def _propose(tiny_path, out, fake):
    """``annotate propose`` again through the CLI; the requests this run sent."""
    before = len(fake.chat_requests())
    result = runner.invoke(app, ["annotate", "propose", str(tiny_path), "-o", str(out),
                                 "--base-url", fake.base_url, "--model", "fake", "--no-progress"])
    return result, len(fake.chat_requests()) - before


@pytest.mark.parametrize("row", BAD_ROWS)
def test_a_row_that_is_not_an_answer_reads_as_none(row):
    assert answer_of(row) is None


def test_a_good_row_reads_back():
    assert answer_of('{"content": "{}", "finish_reason": null, "prompt_tokens": 3}') == Answer(
        content="{}", prompt_tokens=3)


def test_damaged_rows_are_sent_again_counted_and_replaced(tiny_path, tmp_path):
    out = tmp_path / "p.jsonl"
    with FakeOpenAI(responder()) as fake:
        cache = _fill(tiny_path, out, fake)
        with sqlite3.connect(cache) as db:
            keys = [k for (k,) in db.execute("SELECT key FROM answers ORDER BY key")]
            bad = dict(zip(keys[:2], BAD_ROWS[:2], strict=True))
            for key, row in bad.items():
                db.execute("UPDATE answers SET answer = ? WHERE key = ?", (row, key))
        out.unlink()
        result, sent = _propose(tiny_path, out, fake)
    assert len(keys) > len(bad)
    assert result.exit_code == 0, result.output
    assert sent == len(bad)  # the damaged rows only; the others were answers
    assert f"{len(bad)} (not answers: sent again, replaced)" in result.output
    summary = json.loads((tmp_path / "p-summary.json").read_text())
    assert summary["cache_rows_damaged"] == len(bad) and summary["cache_hits"] == 1
    with ResponseCache(cache) as reopened:
        assert all(reopened.get(k) is not None for k in keys) and reopened.damaged == 0


def _garble(path, at: int, size: int = 512) -> None:
    data = bytearray(path.read_bytes())
    data[at:at + size] = bytes((i * 37 + 11) % 256 for i in range(size))
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", ["garbled-page", "garbled-header", "not-a-database"])
def test_a_damaged_cache_file_is_one_line_before_any_request(tiny_path, tmp_path, damage):
    out = tmp_path / "p.jsonl"
    with FakeOpenAI(responder()) as fake:
        cache = _fill(tiny_path, out, fake)
        assert cache.stat().st_size >= 8192
        if damage == "garbled-page":
            _garble(cache, 4096 + 8)  # inside the table's page: its cells no longer parse
        elif damage == "garbled-header":
            _garble(cache, 0, 100)
        else:
            cache.write_bytes(b"PK\x03\x04 a zip file, not a database " * 300)
        out.unlink()
        result, sent = _propose(tiny_path, out, fake)
    assert result.exit_code == ExitCode.BAD_INPUT, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    line = result.output.strip()
    assert len(line.splitlines()) == 1 and str(cache) in line and "move it away" in line, line
    assert sent == 0 and not out.exists()


def test_the_library_raises_the_same_line(tmp_path):
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 5000)
    with pytest.raises(InputError, match="response cache is damaged"):
        ResponseCache(path).get("x")
