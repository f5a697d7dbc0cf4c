"""Every failure a user's input or the machine can cause is one line with its exit code, from
one mapping (errors.from_exception, used by the CLI's root group): broken .eval archives, a
lock path that is a folder or a FIFO, a full disk named only in an error's text, a seed out of
range, a malformed Inspect message, a file name that is not UTF-8. Tracebacks are left to bugs."""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode, InputError, NoSpace, ServiceError, from_exception
from mtcabench.io import claim_output

runner = CliRunner()


def one_line(text: str) -> str:
    """The one error line of a command's output."""
    assert "Traceback" not in text, text
    errors = [line for line in text.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, text
    return errors[0]


def ingest(tmp_path: Path, *paths: Path):
    return runner.invoke(app, ["ingest", "transcripts", *map(str, paths),
                               "--out", str(tmp_path / "out.jsonl")])


# ---------------------------------------------------------------- the one mapping


@pytest.mark.parametrize("exc, code, words", [
    (OSError("IOError: No space left on device"), ExitCode.NO_SPACE, "no space left"),
    (OSError("Disk quota exceeded while writing"), ExitCode.NO_SPACE, "quota"),
    (OSError(errno.ENOSPC, "No space left on device", "/x/data.parquet"), ExitCode.NO_SPACE,
     "/x/data.parquet"),
    (IsADirectoryError(errno.EISDIR, "Is a directory", "/x/.lock"), ExitCode.BAD_INPUT,
     "is a folder"),
    (OSError(errno.EINVAL, "Invalid argument", "/x/fifo"), ExitCode.BAD_INPUT, "/x/fifo"),
    (FileExistsError(errno.EEXIST, "File exists", "/x/models"), ExitCode.BAD_INPUT,
     "already exists"),
    (ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused"), ExitCode.SERVICE,
     "refused"),
    (MemoryError(), ExitCode.BAD_INPUT, "memory"),
    (sqlite3.OperationalError("database or disk is full"), ExitCode.NO_SPACE, "could not grow"),
    (UnicodeEncodeError("utf-8", "a\udcffb", 1, 2, "surrogates not allowed"),
     ExitCode.BAD_INPUT, "not UTF-8"),
], ids=["nospace-text", "quota-text", "nospace-errno", "eisdir", "einval", "eexist",
        "connection", "memory", "sqlite-full", "surrogate"])
def test_machine_and_input_failures_map_to_one_line_and_their_code(exc, code, words):
    mapped = from_exception(exc)
    assert mapped is not None and mapped.exit_code == code
    assert words.lower() in mapped.message.lower()
    assert "\n" not in mapped.message


@pytest.mark.parametrize("exc", [KeyError("x"), TypeError("bug"), RuntimeError("bug"),
                                 AssertionError()])
def test_bugs_keep_their_traceback(exc):
    assert from_exception(exc) is None


def test_a_disk_full_error_without_errno_exits_7_from_any_command(tmp_path, monkeypatch):
    """pyarrow's and datasets' IOError carries no errno: the text names the full disk."""
    import mtcabench.ingest._entry as entry

    def full(*a, **k):
        raise OSError("IOError: [parquet] No space left on device")

    monkeypatch.setattr(entry, "write_conversations", full)
    log = tmp_path / "chat.json"
    log.write_text(json.dumps([{"role": "user", "content": "hi"}]), encoding="utf-8")
    res = ingest(tmp_path, log)
    assert res.exit_code == ExitCode.NO_SPACE
    assert "no space left on device" in one_line(res.output)


# ---------------------------------------------------------------- .eval archives


def _sample(k: int = 1) -> bytes:
    return json.dumps({"id": k, "epoch": 1, "messages": [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}).encode()


def _archive(path: Path, data: bytes, *, method: int = zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", method) as z:
        z.writestr("header.json", b"{}")
        z.writestr("samples/1_epoch_1.json", data)
    return path


def _patch(path: Path, member: str, fix) -> None:
    """Edit the local header and central directory entry of ``member`` in place."""
    raw = bytearray(path.read_bytes())
    name = member.encode()
    for sig, off_flags, off_method, off_name in ((b"PK\x03\x04", 6, 8, 30),
                                                  (b"PK\x01\x02", 8, 10, 46)):
        pos = 0
        while (pos := raw.find(sig, pos)) >= 0:
            if raw[pos + off_name: pos + off_name + len(name)] == name:
                fix(raw, pos + off_flags, pos + off_method)
            pos += 4
    path.write_bytes(bytes(raw))


def test_an_encrypted_eval_member_is_one_line(tmp_path):
    path = _archive(tmp_path / "enc.eval", _sample())

    def encrypted(raw, flags, _method):
        raw[flags] |= 0x1

    _patch(path, "samples/1_epoch_1.json", encrypted)
    res = ingest(tmp_path, path)
    assert res.exit_code == ExitCode.BAD_INPUT
    line = one_line(res.output)
    assert "samples/1_epoch_1.json" in line and "encrypted" in line


def test_an_unsupported_compression_method_is_one_line(tmp_path):
    path = _archive(tmp_path / "method.eval", _sample())

    def method(raw, _flags, method_at):
        raw[method_at:method_at + 2] = (99).to_bytes(2, "little")  # AE-x / unknown

    _patch(path, "samples/1_epoch_1.json", method)
    res = ingest(tmp_path, path)
    assert res.exit_code == ExitCode.BAD_INPUT
    line = one_line(res.output)
    assert "samples/1_epoch_1.json" in line and "compression" in line


def test_broken_deflate_data_is_one_line(tmp_path):
    data = _sample() * 40
    path = _archive(tmp_path / "deflate.eval", data)
    raw = bytearray(path.read_bytes())
    at = raw.find(b"samples/1_epoch_1.json") + len("samples/1_epoch_1.json")
    for k in range(at + 2, at + 40):  # the start of the compressed stream: garbage
        raw[k] = 0xFF
    path.write_bytes(bytes(raw))
    res = ingest(tmp_path, path)
    assert res.exit_code == ExitCode.BAD_INPUT
    assert "samples/1_epoch_1.json" in one_line(res.output)


def test_an_eval_member_past_the_bound_is_refused_before_it_is_read(tmp_path, monkeypatch):
    import mtcabench.transcripts._inspect as inspect_reader

    monkeypatch.setattr(inspect_reader, "MAX_MEMBER_BYTES", 4096)
    sample = json.loads(_sample())
    sample["messages"][0]["content"] = "x" * 100_000
    path = _archive(tmp_path / "big.eval", json.dumps(sample).encode())
    res = ingest(tmp_path, path)
    assert res.exit_code == ExitCode.BAD_INPUT
    line = one_line(res.output)
    assert "samples/1_epoch_1.json" in line and "more than the 4096" in line
    assert not (tmp_path / "out.jsonl").exists()


def test_a_member_whose_header_lies_about_its_size_is_one_line(tmp_path):
    """zipfile reads no more than the header's size; the CRC then fails: damaged, one line."""
    import mtcabench.transcripts._inspect as inspect_reader

    path = tmp_path / "bomb.eval"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("samples/1_epoch_1.json", b"0" * (16 << 20))
    assert path.stat().st_size < 1 << 20
    with zipfile.ZipFile(path) as z:
        info = z.getinfo("samples/1_epoch_1.json")
        info.file_size = 10  # the header lies low
        with pytest.raises(InputError, match="damaged member"):
            inspect_reader.read_member(z, info, "bomb.eval", limit=1 << 20)
        info.file_size = 16 << 20
        with pytest.raises(InputError, match="unpacks to 16777216 bytes"):
            inspect_reader.read_member(z, info, "bomb.eval", limit=1 << 20)


def test_a_truncated_eval_archive_is_named_as_damaged(tmp_path):
    whole = _archive(tmp_path / "whole.eval", _sample()).read_bytes()
    cut = tmp_path / "cut.eval"
    cut.write_bytes(whole[:60])
    res = ingest(tmp_path, cut)
    assert res.exit_code == ExitCode.BAD_INPUT
    assert "not a readable .eval archive" in one_line(res.output)


def test_an_eval_member_that_is_not_utf8_says_so(tmp_path):
    path = _archive(tmp_path / "latin.eval", b'{"id": 1, "messages": [], "x": "caf\xe9"}')
    res = ingest(tmp_path, path)
    assert res.exit_code == ExitCode.BAD_INPUT
    line = one_line(res.output)
    assert "samples/1_epoch_1.json" in line and "not UTF-8" in line


# ---------------------------------------------------------------- Inspect messages


@pytest.mark.parametrize("calls", [5, "call", {"id": "x"}])
def test_tool_calls_that_are_not_a_list_are_one_line(tmp_path, calls):
    log = tmp_path / "inspect.json"
    log.write_text(json.dumps({"version": 2, "eval": {}, "samples": [{"id": 1, "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "ok", "tool_calls": calls}]}]}), encoding="utf-8")
    res = ingest(tmp_path, log)
    assert res.exit_code == ExitCode.BAD_INPUT
    assert "tool_calls is a" in one_line(res.output)


# ---------------------------------------------------------------- file names and paths


def test_a_log_whose_name_is_not_utf8_is_ingested_with_a_readable_id(tmp_path):
    folder = os.fsencode(tmp_path)
    name = folder + b"/run-\xff\xfe.json"
    with open(name, "wb") as fh:
        fh.write(json.dumps([{"role": "user", "content": "hi"},
                             {"role": "assistant", "content": "hello"}]).encode())
    path = Path(os.fsdecode(name))
    res = ingest(tmp_path, path)
    assert res.exit_code == 0, res.output
    record = json.loads((tmp_path / "out.jsonl").read_text(encoding="utf-8"))
    assert record["id"] == "run-\ufffd\ufffd"


def test_a_lock_path_that_is_a_folder_is_one_line(tmp_path):
    (tmp_path / ".out.lock").mkdir()
    with pytest.raises(InputError, match="lock file of .* is a folder"):
        with claim_output(tmp_path / "out"):
            pass


def test_a_lock_path_that_is_a_fifo_is_refused_without_hanging(tmp_path):
    os.mkfifo(tmp_path / ".out.lock")
    with pytest.raises(InputError, match="named pipe"):
        with claim_output(tmp_path / "out"):
            pass


def test_a_lock_path_that_is_a_link_is_never_followed(tmp_path):
    victim = tmp_path / "precious.txt"
    victim.write_text("keep me", encoding="utf-8")
    (tmp_path / ".out.lock").symlink_to(victim)
    with pytest.raises(InputError, match="symbolic link"):
        with claim_output(tmp_path / "out"):
            pass
    assert victim.read_text(encoding="utf-8") == "keep me"
    dangling = tmp_path / ".other.lock"
    dangling.symlink_to(tmp_path / "elsewhere" / "made.txt")
    with pytest.raises(InputError, match="symbolic link"):
        with claim_output(tmp_path / "other"):
            pass
    assert not (tmp_path / "elsewhere").exists()


def test_a_release_build_with_a_planted_lock_link_leaves_its_target(tmp_path):
    victim = tmp_path / "precious.txt"
    victim.write_text("keep me", encoding="utf-8")
    (tmp_path / "release").mkdir()
    (tmp_path / "release" / ".1.0.0.lock").symlink_to(victim)
    res = runner.invoke(app, ["release", "build", "--version", "1.0.0", "--reviewed",
                              str(tmp_path / "r.jsonl"), "--conversations",
                              str(tmp_path / "c.jsonl"), "--out", str(tmp_path / "release")])
    assert res.exit_code != 0 and "Traceback" not in res.output
    assert victim.read_text(encoding="utf-8") == "keep me"


def test_a_model_cache_that_is_a_file_is_refused_before_converting(tmp_path, monkeypatch):
    from mtcabench.evaluate.attribution import _loading

    cache = tmp_path / "models"
    cache.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv("MTCABENCH_MODEL_CACHE", str(cache))
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    with pytest.raises(InputError, match="model cache folder .* is a file"):
        _loading.resolve_model(str(gguf))


def test_service_errors_and_input_errors_are_distinct_classes():
    assert isinstance(from_exception(ConnectionResetError(errno.ECONNRESET, "reset")),
                      ServiceError)
    assert isinstance(from_exception(OSError(errno.ENOSPC, "full")), NoSpace)
