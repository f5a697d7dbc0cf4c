"""The file policy: what already sits at an output path is not trusted. A symbolic link, a
FIFO or a device at --out is refused (never followed, written into or renamed over); an input
that is a pipe or a folder is named for what it is, not "no such file"."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode, InputError
from mtcabench.io import atomic_write, check_output_path, input_file, iter_json_lines

runner = CliRunner()


def _log(tmp_path: Path) -> Path:
    log = tmp_path / "chat.json"
    log.write_text(json.dumps([{"role": "user", "content": "hi"},
                               {"role": "assistant", "content": "hello"}]), encoding="utf-8")
    return log


def test_an_output_that_is_a_fifo_is_refused_and_left_a_fifo(tmp_path):
    fifo = tmp_path / "out.jsonl"
    os.mkfifo(fifo)
    res = runner.invoke(app, ["ingest", "transcripts", str(_log(tmp_path)), "--out", str(fifo)])
    assert res.exit_code == ExitCode.BAD_INPUT, res.output
    assert "named pipe" in res.output and "Traceback" not in res.output
    assert Path(fifo).is_fifo()


def test_an_output_that_is_a_device_is_refused(tmp_path):
    with pytest.raises(InputError, match="is a device"):
        check_output_path("/dev/null")


def test_an_output_that_is_a_link_is_refused_and_its_target_kept(tmp_path):
    victim = tmp_path / "precious.jsonl"
    victim.write_text("keep me\n", encoding="utf-8")
    link = tmp_path / "out.jsonl"
    link.symlink_to(victim)
    res = runner.invoke(app, ["ingest", "transcripts", str(_log(tmp_path)), "--out", str(link)])
    assert res.exit_code == ExitCode.BAD_INPUT, res.output
    assert "symbolic link" in res.output
    assert link.is_symlink() and victim.read_text(encoding="utf-8") == "keep me\n"


def test_dev_stdout_is_not_an_output_file():
    # Checked only (never written here: on the old code a write renamed over /dev/stdout).
    with pytest.raises(InputError, match="symbolic link|is a device|named pipe"):
        check_output_path("/dev/stdout")


def test_a_regular_output_is_still_replaced(tmp_path):
    out = tmp_path / "out.txt"
    out.write_text("old", encoding="utf-8")
    with atomic_write(out) as fh:
        fh.write("new")
    assert out.read_text(encoding="utf-8") == "new"


def test_an_input_that_is_a_pipe_is_named_as_such(tmp_path):
    fifo = tmp_path / "log.json"
    os.mkfifo(fifo)
    res = runner.invoke(app, ["ingest", "transcripts", str(fifo), "--out",
                              str(tmp_path / "o.jsonl")])
    assert res.exit_code == ExitCode.BAD_INPUT
    assert "named pipe" in res.output and "no such file" not in res.output
    with pytest.raises(InputError, match="named pipe"):
        list(iter_json_lines(fifo))


def test_inputs_are_named_for_what_they_are(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        input_file(tmp_path / "missing.json")
    with pytest.raises(InputError, match="is a folder"):
        input_file(tmp_path)
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(InputError, match="symbolic link to nothing"):
        input_file(tmp_path / "dangling")
    real = _log(tmp_path)
    (tmp_path / "link.json").symlink_to(real)
    assert input_file(tmp_path / "link.json") == tmp_path / "link.json"
