"""The shared mechanisms of issue 22, round 2: one redaction, one name policy, one writer
discipline (a full disk for real, file sets that appear whole, one writer per output)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import urllib.parse
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtcabench.lineage import propose_lineage
from mtcabench.cli import app
from mtcabench.errors import ExitCode, InputError, NoSpace, OutputBusy
from mtcabench.ingest import read_taubench
from mtcabench.io import (
    NAME_MAX,
    all_or_nothing,
    atomic_write,
    claim_output,
    derived_name,
    write_records,
)
from mtcabench.redact import REDACTED, clip, redact, register_secret

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "raw" / "sample" / "sample-airline.json"
runner = CliRunner()


def one_line(text: str) -> str:
    """The one error line of a command's output (a progress bar may come before it)."""
    assert "Traceback" not in text, text
    errors = [line for line in text.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and text.strip().endswith(errors[0]), text
    return errors[0]


# ---------------------------------------------------------------- one redaction


KEY = "sk-hardening2-0123456789abcdefABCDEF"


@pytest.mark.parametrize("spelling", [
    lambda k: k,
    lambda k: "".join(f"\\u{ord(c):04x}" for c in k),  # JSON escapes
    lambda k: "".join(f"\\u{ord(c):04X}" for c in k),
    lambda k: urllib.parse.quote(k, safe=""),
    lambda k: "".join(f"%{ord(c):02x}" for c in k),  # every character URL-encoded
    lambda k: "".join(f"&#{ord(c)};" for c in k),  # HTML entities
    lambda k: k[:5] + "".join(f"\\u{ord(c):04x}" for c in k[5:12]) + k[12:],  # mixed
], ids=["plain", "json-escaped", "json-escaped-upper", "url", "url-all", "html", "mixed"])
def test_every_spelling_of_a_held_secret_is_redacted(spelling, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    text = f'{{"error": "you sent {spelling(KEY)} here"}}'
    out = redact(text)
    assert REDACTED in out and KEY[:8] not in out and spelling(KEY) not in out, out


def test_a_message_is_redacted_before_it_is_cut(monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_" + "Z" * 40)
    message = "x" * 280 + " Authorization: Bearer hf_" + "Z" * 40
    out = clip(message, 300)
    assert "ZZZZ" not in out and len(out) <= 300


def test_authorization_header_values_are_redacted_even_when_unknown():
    for text in ("Authorization: Bearer abcdefghijklmnop", '{"authorization": "Token qwertyuiop12"}',
                 "headers={'Authorization': 'Basic dXNlcjpwYXNzd29yZA=='}"):
        out = redact(text)
        assert REDACTED in out and not any(s in out for s in ("abcdefgh", "qwertyui", "dXNlcjpw"))


def test_errors_and_records_carry_no_registered_secret(tmp_path):
    secret = "flag-given-key-8c1f0e2d9b"
    register_secret(secret)
    assert secret not in InputError(f"server said {secret}").message
    from mtcabench.model import Conversation, Turn, Role

    conv = Conversation(id="c", source="test", domain="airline", turns=[
        Turn(index=0, role=Role.USER, content="my key is " + secret)])
    write_records(tmp_path / "c.jsonl", [conv])
    assert secret not in (tmp_path / "c.jsonl").read_text()


# ---------------------------------------------------------------- one name policy


def test_derived_names_fit_are_distinct_and_never_hidden():
    long_a, long_b = "a" * 300 + "x", "a" * 300 + "y"
    na, nb = derived_name(long_a, ".score.json"), derived_name(long_b, ".score.json")
    assert len(na.encode()) <= NAME_MAX and len(nb.encode()) <= NAME_MAX and na != nb
    assert not derived_name(".hidden#1:0-4", ".html").startswith(".")
    assert not derived_name("-rf", ".html").startswith("-")
    assert len(derived_name("é" * 200, ".html").encode()) <= NAME_MAX


def test_a_legal_long_output_name_is_written(tmp_path):
    """A 249-byte name is legal; its temporary file must fit too (it was 14 bytes longer)."""
    target = tmp_path / ("n" * 243 + ".jsonl")
    assert len(target.name) == 249
    with atomic_write(target) as fh:
        fh.write("x\n")
    assert target.read_text() == "x\n" and os.listdir(tmp_path) == [target.name]


def test_cli_output_names_long_but_legal_and_too_long(tmp_path):
    legal = tmp_path / ("o" * 243 + ".jsonl")
    res = runner.invoke(app, ["ingest", "taubench", str(SAMPLE), "-o", str(legal)])
    assert res.exit_code == 0, res.output
    assert legal.stat().st_size > 0
    too_long = tmp_path / ("o" * 250 + ".jsonl")
    res = runner.invoke(app, ["ingest", "taubench", str(SAMPLE), "-o", str(too_long)])
    assert res.exit_code == ExitCode.BAD_INPUT, res.output
    assert "longer than the 255" in one_line(res.output)
    assert sorted(os.listdir(tmp_path)) == [legal.name]


# ---------------------------------------------------------------- all or nothing


def test_a_file_set_appears_whole_or_not_at_all(tmp_path):
    with pytest.raises(RuntimeError), all_or_nothing():
        for name in ("a.json", "b.md"):
            with atomic_write(tmp_path / name) as fh:
                fh.write(name)
        assert os.listdir(tmp_path) != []  # written, but only as temporary files
        assert not (tmp_path / "a.json").exists()
        raise RuntimeError("the third file failed")
    assert os.listdir(tmp_path) == []
    with all_or_nothing():
        for name in ("a.json", "b.md"):
            with atomic_write(tmp_path / name) as fh:
                fh.write(name)
    assert sorted(os.listdir(tmp_path)) == ["a.json", "b.md"]


# ---------------------------------------------------------------- one writer per output


_HOLDER = textwrap.dedent("""
    import sys, time
    from mtcabench.io import claim_output
    with claim_output(sys.argv[1]):
        print("holding", flush=True)
        time.sleep(30)
""")


def test_a_second_writer_of_an_output_is_refused_naming_the_first(tmp_path):
    target = tmp_path / "out.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(target)], env=env,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        with pytest.raises(OutputBusy) as err, claim_output(target):
            pass
        assert f"pid {holder.pid}" in err.value.message
        assert err.value.exit_code == ExitCode.BUSY
    finally:
        holder.kill()
        holder.wait()
    # The kernel dropped the dead holder's lock: the output can be claimed again.
    with claim_output(target):
        pass
    assert os.listdir(tmp_path) == []  # the lock file goes with the claim


# ---------------------------------------------------------------- a full disk, for real


@pytest.fixture
def inputs(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    convs = list(read_taubench(SAMPLE))
    write_records(folder / "conversations.jsonl", convs)
    write_records(folder / "candidates.jsonl", list(propose_lineage(convs)))
    return folder


@pytest.mark.parametrize("command", ["ingest", "lineage", "auto-accept"])
def test_a_full_disk_is_one_line_and_leaves_nothing(command, inputs, small_disk):
    out = small_disk.path / "out.jsonl"
    args = {
        "ingest": ["ingest", "taubench", str(SAMPLE), "-o", str(out)],
        "lineage": ["annotate", "lineage", "-i", str(inputs / "conversations.jsonl"), "-o",
                    str(out)],
        "auto-accept": ["review", "auto-accept", "-c", str(inputs / "candidates.jsonl"),
                        "--conversations", str(inputs / "conversations.jsonl"), "-o", str(out)],
    }[command]
    proc, left = small_disk.run(args, size_kb=4)
    assert proc.returncode == ExitCode.NO_SPACE, proc.stderr
    line = one_line(proc.stderr)
    assert "no space left on device" in line and "out.jsonl" in line, line
    assert left == [], left


def test_no_space_error_codes_are_documented():
    # The exit codes live in the CLI reference of the documentation site (the README is a
    # quick start that links to it).
    reference = " ".join((ROOT / "docs" / "cli.md").read_text().split())
    assert "7 no space left" in reference and "8 another" in reference
    res = runner.invoke(app, ["--help"])
    assert "7 no space left" in " ".join(res.output.split())
    assert NoSpace("x").exit_code == 7 and OutputBusy("x").exit_code == 8
    assert json.loads(json.dumps({"codes": [ExitCode.NO_SPACE, ExitCode.BUSY]})) == {
        "codes": [7, 8]}


# ---------------------------------------------------------------- cases of our own


def test_a_read_only_output_folder_is_one_line(small_disk):
    proc, left = small_disk.run(["ingest", "taubench", str(SAMPLE), "-o",
                                 str(small_disk.path / "out.jsonl")], size_kb=64, read_only=True)
    assert proc.returncode == ExitCode.BAD_INPUT, proc.stderr
    assert "read-only file system" in one_line(proc.stderr)
    assert left == []


def test_an_output_folder_whose_name_is_too_long_is_one_line(tmp_path):
    out = tmp_path / ("d" * 300) / "out.jsonl"
    res = runner.invoke(app, ["ingest", "taubench", str(SAMPLE), "-o", str(out)])
    assert res.exit_code == ExitCode.BAD_INPUT, res.output
    assert "longer than the file system allows" in one_line(res.output)
    assert os.listdir(tmp_path) == []


def test_a_password_in_a_url_is_redacted_in_messages():
    line = InputError("cannot reach https://mtca:s3cretPassw0rd@llm.example/v1 (ConnectError)")
    assert "s3cretPassw0rd" not in line.message and "mtca:[redacted]@llm.example" in line.message


_BUG = textwrap.dedent("""
    import os, sys
    import mtcabench.cli.validate as validate_cli
    from mtcabench.cli import main
    def broken(*args, **kwargs):
        raise RuntimeError("a bug that quotes the header: Authorization: Bearer "
                           + os.environ["OPENAI_API_KEY"])
    validate_cli.validate_file = broken
    sys.argv = ["mtcabench", "validate", sys.argv[1]]
    main()
""")


def test_even_a_bugs_traceback_shows_no_secret(tmp_path):
    key = "sk-traceback-" + "q" * 30
    convs = tmp_path / "c.jsonl"
    write_records(convs, read_taubench(SAMPLE))
    proc = subprocess.run([sys.executable, "-c", _BUG, str(convs)], capture_output=True,
                          text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": key})
    assert proc.returncode == 1 and "Traceback" in proc.stderr, proc.stderr
    assert "RuntimeError: a bug that quotes the header" in proc.stderr
    assert "qqqqqqqq" not in proc.stderr and "[redacted]" in proc.stderr
