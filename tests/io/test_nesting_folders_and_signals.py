"""The shared readers and writer under hostile input and faults (issue 12).

- deeply nested JSON is one clear line naming the file and line, exit 3, in every reader;
- an output path that is an existing folder is one clear line, exit 3, in every writer;
- SIGTERM and SIGHUP during a write leave no hidden temporary file, as SIGINT does.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode, InputError
from mtcabench.io import (
    MAX_JSON_DEPTH,
    RecordAppender,
    atomic_write,
    iter_json_lines,
    parse_json,
    read_done_keys,
    write_records,
)
from mtcabench.model import (
    BenchmarkSpan,
    Conversation,
    DecisionSource,
    DependencyType,
    Edge,
    ProvenanceGraph,
    Role,
    TargetSpan,
    Turn,
    Verdict,
    span_id,
)

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()

DEEP = "[" * 100_000 + "]" * 100_000


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def one_clear_line(res, *needles: str, code: int = ExitCode.BAD_INPUT) -> str:
    out = res.output
    assert res.exit_code == code, out
    assert "Traceback" not in out and "RecursionError" not in out, out
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    errors = [line for line in out.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, out
    for needle in needles:
        assert needle in errors[0], out
    return errors[0]


def conv(cid: str = "t/1") -> Conversation:
    return Conversation(id=cid, source="taubench", domain="d", turns=[
        Turn(index=0, role=Role.USER, content="hi"),
        Turn(index=1, role=Role.ASSISTANT, content="hello")])


def conv_line(cid: str = "t/1") -> str:
    return conv(cid).model_dump_json(exclude_none=True)


# --------------------------------------------------------------------------- nesting


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 300, 1_000, 100_000])
def test_parse_json_refuses_deep_nesting_with_the_line(depth, tmp_path):
    text = '{"a": ' + "[" * depth + "]" * depth + "}"
    with pytest.raises(InputError, match=r"f\.json:7: .*nested more than \d+ levels"):
        parse_json(text, "f.json", line=7)


def test_parse_json_accepts_the_documented_depth():
    assert parse_json("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH, "f.json") is not None


def test_whole_document_reader_names_the_line_of_the_nesting(tmp_path):
    text = '[\n{"a": 1},\n{"b": ' + "[" * 5000 + "]" * 5000 + "}\n]"
    with pytest.raises(InputError, match=r"f\.json:3: .*nested"):
        parse_json(text, "f.json")


def test_iter_json_lines_deep_line_names_its_line(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(conv_line() + "\n" + DEEP + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"c\.jsonl:2: .*nested"):
        list(iter_json_lines(path))


def test_nesting_just_below_the_limit_survives_a_write(tmp_path):
    # Anything a reader accepts can be written again (pydantic refuses to serialise much
    # deeper values): the limit is below every downstream one.
    deep = json.loads("[" * (MAX_JSON_DEPTH - 5) + "]" * (MAX_JSON_DEPTH - 5))
    c = conv().model_copy(update={"metadata": {"x": deep}})
    src = tmp_path / "c.jsonl"
    src.write_text(json.dumps(c.model_dump(mode="json")) + "\n", encoding="utf-8")
    from mtcabench.io import load_conversations
    back = load_conversations(src)
    assert write_records(tmp_path / "again.jsonl", back.values()) == 1


def test_read_done_keys_deep_line_is_clear(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(DEEP + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"c\.jsonl:1"):
        read_done_keys(path)


def _deep_file(tmp_path: Path, name: str, first: str | None = None) -> Path:
    path = tmp_path / name
    path.write_text((first + "\n" if first else "") + DEEP + "\n", encoding="utf-8")
    return path


def _cases(tmp_path: Path):
    """command -> (argv, the file that must be named with its line)."""
    good = tmp_path / "good.jsonl"
    good.write_text(conv_line() + "\n", encoding="utf-8")
    deep_convs = _deep_file(tmp_path, "deep.jsonl", conv_line())
    deep_tau = tmp_path / "m-airline.json"
    deep_tau.write_text("[\n" + DEEP + "\n]", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "conversations.jsonl").write_text(conv_line() + "\n", encoding="utf-8")
    (bench / "spans.jsonl").write_text(DEEP + "\n", encoding="utf-8")
    sub = _deep_file(tmp_path, "sub.jsonl", json.dumps({"kind": "submission", "method": "m"}))
    release = tmp_path / "rel"
    release.mkdir()
    (release / "release.json").write_text("\n" + DEEP, encoding="utf-8")
    manifest = tmp_path / "manifest.json"
    manifest.write_text('{\n"files": ' + DEEP + "\n}", encoding="utf-8")
    report = tmp_path / "deep.score.json"
    report.write_text('{"kind": "score-report",\n"rows": ' + DEEP + "}", encoding="utf-8")
    return {
        "ingest taubench": (["ingest", "taubench", deep_tau, "-o", out], "m-airline.json:2"),
        "ingest confetti": (["ingest", "confetti", _deep_file(tmp_path, "confetti.jsonl"),
                             "-o", out], "confetti.jsonl:1"),
        "validate": (["validate", deep_convs], "deep.jsonl:2"),
        "stats": (["stats", deep_convs], "deep.jsonl:2"),
        "annotate lineage": (["annotate", "lineage", "--in", deep_convs, "-o", out],
                             "deep.jsonl:2"),
        "score submission": (["score", sub, "-b", tmp_path / "okbench", "-o", tmp_path / "s"],
                             "sub.jsonl:2"),
        "score benchmark": (["score", sub, "-b", bench, "-o", tmp_path / "s"], "spans.jsonl:1"),
        "review auto-accept": (["review", "auto-accept", "-c", _deep_file(tmp_path, "cand.jsonl"),
                                "--conversations", good, "-o", out], "cand.jsonl:1"),
        "review auto-accept conversations": (
            ["review", "auto-accept", "-c", good, "--conversations", deep_convs, "-o", out],
            "deep.jsonl:2"),
        "release build": (["release", "build", "--version", "1.0.0", "--reviewed",
                           _deep_file(tmp_path, "reviewed.jsonl"), "--conversations", good,
                           "--out", tmp_path / "releases"], "reviewed.jsonl:1"),
        "release verify": (["release", "verify", release], "release.json:2"),
        "release build --scores": (["release", "build", "--version", "1.0.0", "--reviewed",
                                    good, "--conversations", good, "--scores", report,
                                    "--out", tmp_path / "releases"], "deep.score.json:2"),
        "raw list": (["raw", "list", "--manifest", manifest], "manifest.json:2"),
        "trace-merge": (["trace-merge", sub, "-o", out], "sub.jsonl:2"),
    }


CASES = ["ingest taubench", "ingest confetti", "validate", "stats", "annotate lineage",
         "score submission", "score benchmark", "review auto-accept",
         "review auto-accept conversations", "release build", "release verify",
         "release build --scores", "raw list", "trace-merge"]


@pytest.mark.parametrize("case", CASES)
def test_every_reader_refuses_deep_nesting_with_file_and_line(case, tmp_path):
    okbench = tmp_path / "okbench"
    okbench.mkdir()
    (okbench / "conversations.jsonl").write_text(conv_line() + "\n", encoding="utf-8")
    target = TargetSpan(turn=1, start=0, end=5, text="hello")
    write_records(okbench / "spans.jsonl", [BenchmarkSpan(
        id=span_id("t/1", target), conversation_id="t/1", source="taubench", domain="d",
        span=target, dependency_type=DependencyType.DIRECT,
        graph=ProvenanceGraph(target=1, nodes=[0, 1], edges=[Edge(child=1, parent=0)]),
        depth=1, sources=[0], decision_source=DecisionSource.AUTO, verdict=Verdict.ACCEPT)])
    argv, where = _cases(tmp_path)[case]
    res = invoke(*argv)
    one_clear_line(res, where, "nested")
    assert not (tmp_path / "out.jsonl").exists()


# --------------------------------------------------------------------------- folder outputs


def test_atomic_write_refuses_a_folder(tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(InputError, match=r"d: is a folder.*file"), atomic_write(tmp_path / "d"):
        pass
    assert [p.name for p in tmp_path.iterdir()] == ["d"]


def test_write_records_and_appender_refuse_a_folder(tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(InputError, match="is a folder"):
        write_records(tmp_path / "d", [conv()])
    with pytest.raises(InputError, match="is a folder"):
        RecordAppender(tmp_path / "d")
    assert [p.name for p in tmp_path.iterdir()] == ["d"]


def test_cli_output_folder_is_one_clear_line(tmp_path, sample_path):
    (tmp_path / "d").mkdir()
    res = invoke("ingest", "taubench", sample_path, "-o", tmp_path / "d")
    one_clear_line(res, "is a folder")
    assert list((tmp_path / "d").iterdir()) == []


# --------------------------------------------------------------------------- signals

_WRITER = """
import sys, time
from mtcabench.io import atomic_write
with atomic_write(sys.argv[1]) as fh:
    fh.write("partial\\n")
    fh.flush()
    print("writing", flush=True)
    time.sleep(60)
"""


def _default_signals() -> None:
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_signal_mid_write_leaves_no_temporary_file(sig, tmp_path):
    target = tmp_path / "out.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # The writer starts from the default dispositions, as a process started from a terminal
    # does: under nohup or a background job (as CI may run us) SIGHUP and SIGINT are inherited
    # as ignored, and atomic_write rightly leaves an ignored signal ignored.
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(target)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_default_signals)
    try:
        assert proc.stdout.readline().strip() == "writing"
        assert list(tmp_path.glob(".out.jsonl.*.tmp")), "the writer should be mid-write"
        proc.send_signal(sig)
        proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode != 0
    assert list(tmp_path.iterdir()) == [], list(tmp_path.iterdir())


def test_signal_handlers_are_restored_after_the_write(tmp_path):
    # From the defaults, as in a fresh process: a library loaded earlier in this test
    # session (Ray) may have set handlers of its own, which the writer rightly leaves alone.
    previous = {sig: signal.signal(sig, signal.SIG_DFL) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        with atomic_write(tmp_path / "x") as fh:
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
            assert signal.getsignal(signal.SIGHUP) is not signal.SIG_DFL
            fh.write("x")
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_DFL
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def test_a_handler_the_program_set_is_left_alone(tmp_path):
    def mine(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, mine)
    try:
        with atomic_write(tmp_path / "x") as fh:
            assert signal.getsignal(signal.SIGTERM) is mine
            fh.write("x")
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, old)


@pytest.mark.slow  # a few seconds: a fresh interpreter or a whole run
def test_sigterm_mid_ingest_leaves_nothing(tmp_path, sample_path):
    """The CLI: SIGTERM while ingest writes leaves neither output nor temporary file."""
    runs = json.loads(sample_path.read_text(encoding="utf-8"))
    src = tmp_path / "m-airline.json"
    # Many copies of the sample runs with distinct task ids: a write that takes a while.
    many = [dict(r, task_id=f"{r['task_id']}-{k}") for k in range(3000) for r in runs]
    src.write_text(json.dumps(many), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "mtcabench", "ingest", "taubench", str(src),
                             "-o", str(out)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob(".out.jsonl.*.tmp")) and time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail("ingest ended before it could be stopped")
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m-airline.json"]
