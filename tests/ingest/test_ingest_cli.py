"""Ingest through the CLI: the real TauBench file, the sample, ConFETTI, and every bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode
from mtcabench.io import load_conversations
from mtcabench.model import Role

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def test_help_lists_stage_groups():
    res = invoke("--help")
    assert res.exit_code == 0
    for group in ("raw", "ingest", "annotate", "review", "release", "trace", "score", "stats"):
        assert group in res.output


def test_ingest_real_taubench_file(taubench_airline, tmp_path):
    out = tmp_path / "c.jsonl"
    res = invoke("ingest", "taubench", taubench_airline, "--out", out)
    assert res.exit_code == 0, res.output
    convs = load_conversations(out)
    assert len(convs) == 200
    conv = convs["taubench/airline/gpt-4o/task-0/trial-0"]
    assert conv.agent_model == "gpt-4o" and conv.metadata["reward"] is not None
    # Every tool result links to the assistant turn that issued its call.
    n_tool = 0
    for c in convs.values():
        for t in c.turns:
            if t.role is Role.TOOL:
                n_tool += 1
                call_turn = c.turns[c.call_turn(t.index)]
                assert any(call.id == t.tool_call_id for call in call_turn.tool_calls)
    assert n_tool == 1164


def test_ingest_sample_and_stats(sample_path, tmp_path):
    out = tmp_path / "s.jsonl"
    assert invoke("ingest", "taubench", sample_path, "-o", out).exit_code == 0
    convs = load_conversations(out)
    assert sorted(convs) == [f"taubench/airline/sample/task-s{i}/trial-0" for i in (1, 2, 3)]
    res = invoke("stats", out, "--json")
    stats = json.loads(res.output)
    assert stats["conversations"] == 3 and stats["by_domain"] == {"taubench/airline": 3}
    assert stats["turns_by_role"]["tool"] == 6
    assert invoke("validate", out).exit_code == 0


def write_runs(path: Path, runs) -> Path:
    path.write_text(json.dumps(runs), encoding="utf-8")
    return path


def good_run(task="1", trial=0):
    return {"task_id": task, "trial": trial, "reward": 1, "info": {}, "traj": [
        {"role": "user", "content": "id u_1"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "f", "content": "{}"},
        {"role": "assistant", "content": "done"},
    ]}


def assert_clear_failure(res, out: Path, *needles: str):
    assert res.exit_code == ExitCode.BAD_INPUT, res.output
    assert "Traceback" not in res.output
    errors = [line for line in res.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, res.output  # one clear line (a progress bar may precede it)
    for needle in needles:
        assert needle in res.output, res.output
    assert not out.exists()
    assert not list(out.parent.glob(f".{out.name}.*"))  # no temporary file left


BAD_INPUTS = {
    "malformed-json": (lambda p: p.write_text('[{"task_id": 1,'), ["malformed JSON"]),
    "no-traj": (lambda p: write_runs(p, [good_run(), {"task_id": "2", "trial": 0}]),
                ["run 1", "task 2", "'traj'"]),
    "tool-call-id": (lambda p: write_runs(p, [dict(good_run(), traj=[
        {"role": "user", "content": "x"},
        {"role": "tool", "tool_call_id": "nope", "name": "f", "content": "{}"}])]),
        ["task-1", "'nope'", "no earlier turn issued"]),
    "empty-conversation": (lambda p: write_runs(p, [dict(good_run(), traj=[])]),
                           ["empty conversation"]),
    "not-utf8": (lambda p: p.write_bytes(b'[{"task_id": "\xff\xfe"}]'), ["not UTF-8"]),
    "duplicate-id": (lambda p: write_runs(p, [good_run("1", 0), good_run("1", 0)]),
                     ["duplicate conversation id", "task-1/trial-0"]),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_taubench_input_is_one_clear_error(case, tmp_path):
    make, needles = BAD_INPUTS[case]
    src = tmp_path / "m-airline.json"
    make(src)
    out = tmp_path / "out.jsonl"
    res = invoke("ingest", "taubench", src, "--out", out)
    assert_clear_failure(res, out, src.name, *needles)


def test_output_folder_missing_is_clear(tmp_path):
    src = write_runs(tmp_path / "m-airline.json", [good_run()])
    out = tmp_path / "missing" / "out.jsonl"
    res = invoke("ingest", "taubench", src, "--out", out)
    assert res.exit_code == ExitCode.BAD_INPUT and "does not exist" in res.output
    assert not out.parent.exists()


def test_existing_output_survives_failed_rerun(tmp_path):
    out = tmp_path / "out.jsonl"
    good = write_runs(tmp_path / "m-airline.json", [good_run()])
    assert invoke("ingest", "taubench", good, "--out", out).exit_code == 0
    before = out.read_bytes()
    bad = write_runs(tmp_path / "n-airline.json", [good_run(), {"task_id": 3}])
    assert invoke("ingest", "taubench", bad, "--out", out).exit_code == ExitCode.BAD_INPUT
    assert out.read_bytes() == before


# ConFETTI: no upstream copy exists here; these records follow the layout that
# mtcabench/transcripts/_confetti.py documents.
def confetti_line(n, dialog, k, messages):
    return {"id": f"conversationsclean_{n}", "dialog_id": f"{dialog}_{k}", "question": messages,
            "function": [{"name": "get_weather", "parameters": {"type": "object"}}]}


DIALOG = [
    {"role": "user", "content": "Weather in Paris?", "content_type": "text"},
    {"role": "assistant", "content": 'get_weather(city="Paris")', "content_type": "function_call"},
    {"role": "assistant", "content": "It is sunny in Paris.", "content_type": "text"},
    {"role": "user", "content": "And Rome?", "content_type": "text"},
]


def write_jsonl(path: Path, lines) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def test_confetti_dialog_rebuilt_from_prefixes(tmp_path):
    src = write_jsonl(tmp_path / "c.json", [
        confetti_line(0, "u-1", 0, DIALOG[:1]),
        confetti_line(1, "u-1", 1, DIALOG[:4]),
        confetti_line(2, "u-2", 0, [[DIALOG[0]]]),  # BFCL nesting
    ])
    out = tmp_path / "out.jsonl"
    res = invoke("ingest", "confetti", src, "--out", out)
    assert res.exit_code == 0, res.output
    convs = load_conversations(out)
    conv = convs["confetti/u-1"]
    assert [t.role.value for t in conv.turns] == ["user", "assistant", "assistant", "user"]
    assert conv.turns[1].tool_calls[0].name == "get_weather"
    assert conv.turns[1].tool_calls[0].arguments == {"city": "Paris"}
    assert conv.metadata["record_ids"] == ["conversationsclean_0", "conversationsclean_1"]
    assert len(convs["confetti/u-2"].turns) == 1


def test_confetti_json_calls(tmp_path):
    msgs = DIALOG[:1] + [{"role": "assistant", "content_type": "tool_call",
                          "content": [{"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}]}]
    src = write_jsonl(tmp_path / "c.json", [confetti_line(0, "u-3", 1, msgs)])
    out = tmp_path / "o.jsonl"
    assert invoke("ingest", "confetti", src, "-o", out).exit_code == 0
    assert load_conversations(out)["confetti/u-3"].turns[1].tool_calls[0].arguments == {"city": "Oslo"}


@pytest.mark.parametrize("bad,needle", [
    ({"id": "x", "question": []}, "no 'dialog_id' field"),
    (confetti_line(0, "u", 0, [{"role": "user", "content": "hi", "content_type": "image"}]),
     "unknown message shape"),
    (confetti_line(0, "u", 0, [{"role": "robot", "content": "hi", "content_type": "text"}]),
     "unknown role"),
    (confetti_line(0, "nounderscore", "x", DIALOG[:1]), "is not <uuid>_<turn>"),
])
def test_confetti_unknown_shape_names_the_line(bad, needle, tmp_path):
    src = write_jsonl(tmp_path / "c.json", [confetti_line(0, "ok", 0, DIALOG[:1]), bad])
    out = tmp_path / "o.jsonl"
    res = invoke("ingest", "confetti", src, "-o", out)
    assert_clear_failure(res, out, f"{src}:2", needle)


def test_confetti_disagreeing_prefix_is_refused(tmp_path):
    other = [dict(DIALOG[0], content="Weather in Lyon?")]
    src = write_jsonl(tmp_path / "c.json", [confetti_line(0, "u", 0, other),
                                            confetti_line(1, "u", 1, DIALOG[:2])])
    out = tmp_path / "o.jsonl"
    assert_clear_failure(invoke("ingest", "confetti", src, "-o", out), out, f"{src}:1",
                         "disagrees with the longest prefix")
