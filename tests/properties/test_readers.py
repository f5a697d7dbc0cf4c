"""Every reader, given arbitrary bytes or arbitrary JSON, either reads the file or raises an
InputError that names it (exit 3): never another exception, never a traceback.

What a reader accepts can also be written again and read back (the ingest readers).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from mtcabench.errors import ExitCode, InputError
from mtcabench.ingest import ingest_confetti, ingest_taubench, read_confetti, read_taubench
from mtcabench.transcripts._source import load_json
from mtcabench.io import (
    iter_json_lines,
    load_conversations,
    read_done_keys,
    read_records,
)
from mtcabench.model import Candidate, ReviewDecision
from mtcabench.release._inputs import read_decisions
from mtcabench.benchmark import read_manifest
from mtcabench.review import read_candidates
from mtcabench.scoring import read_submission
from mtcabench.stats import conversation_stats
from mtcabench.validate import validate_file

# JSON values: scalars (strings with every character JSON escapes), nested lists and objects.
scalars = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
           | st.text(max_size=8))
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=12)

# Objects shaped a little like our records, so that readers get past the first checks.
ROLES = st.sampled_from(["system", "user", "assistant", "tool", "robot"])
messages = st.fixed_dictionaries(
    {"role": ROLES},
    optional={"content": json_values | st.text(max_size=10)
              | st.lists(st.fixed_dictionaries({"type": st.sampled_from(["text", "image_url", "x"])},
                                               optional={"text": json_values}), max_size=3),
              "tool_calls": json_values, "tool_call_id": json_values, "name": json_values,
              "content_type": st.sampled_from(["text", "function_call", "tool_output", "odd"])})
runs = st.fixed_dictionaries({}, optional={"task_id": json_values, "trial": json_values,
                                            "traj": st.lists(messages, max_size=4) | json_values,
                                            "reward": json_values})
confetti_lines = st.fixed_dictionaries({}, optional={
    "id": json_values, "dialog_id": st.sampled_from(["u_1", "u_2", "v_1", "bad"]) | json_values,
    "question": st.lists(messages, max_size=4) | st.lists(st.lists(messages, max_size=3),
                                                          max_size=2) | json_values,
    "function": json_values})
record_like = st.fixed_dictionaries({}, optional={
    "kind": st.sampled_from(["conversation", "candidate", "review", "span", "prediction",
                             "submission", "release"]) | json_values,
    "schema_version": st.sampled_from([1, 2, 0, True, 1.0]) | json_values,
    "id": st.text(max_size=6) | json_values, "span_id": st.text(max_size=6) | json_values,
    "turns": st.lists(messages, max_size=3) | json_values, "source": json_values,
    "domain": json_values, "edges": json_values, "method": json_values, "graph": json_values})

raw_bytes = st.binary(max_size=200)


def lines_of(objects) -> bytes:
    return b"".join(json.dumps(o).encode() + b"\n" for o in objects)


files = (raw_bytes
         | st.lists(record_like | json_values, max_size=4).map(lines_of)
         | st.lists(json_values, max_size=3).map(lambda v: json.dumps(v).encode())
         | st.integers(150, 400).map(lambda d: b"[" * d + b"]" * d)  # nesting around the limit
         | st.tuples(st.lists(record_like, max_size=2), raw_bytes).map(
             lambda t: lines_of(t[0]) + t[1]))


def _consume(reader, path: Path):
    out = reader(path)
    return list(out) if not isinstance(out, (dict, list, set)) and hasattr(out, "__iter__") else out


READERS = {
    "iter_json_lines": iter_json_lines,
    "load_conversations": load_conversations,
    "read_records(candidate)": lambda p: read_records(p, Candidate),
    "read_records(review)": lambda p: read_records(p, ReviewDecision),
    "read_done_keys": read_done_keys,
    "read_candidates": read_candidates,
    "read_decisions": read_decisions,
    "read_submission": read_submission,
    "read_confetti": read_confetti,
    "read_taubench": read_taubench,
    "load_json": load_json,
    "validate_file": validate_file,
    "conversation_stats": conversation_stats,
}


def _only_input_errors(path: Path, name: str, reader) -> None:
    try:
        _consume(reader, path)
    except InputError as exc:
        assert exc.exit_code == ExitCode.BAD_INPUT
        assert exc.message.startswith(str(path)), (name, exc.message)
        assert "\n" not in exc.message, (name, exc.message)
        line = getattr(exc, "line", None)
        if line is not None:  # the line it names is one of the file's lines
            assert 1 <= line <= max(1, path.read_bytes().count(b"\n") + 1), (name, exc.message)


@given(files)
def test_every_reader_raises_only_input_errors_naming_the_file(data):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "in-put.json"
        path.write_bytes(data)
        for name, reader in READERS.items():
            _only_input_errors(path, name, reader)
        # release.json is read by `release verify`, from a folder.
        (Path(tmp) / "release.json").write_bytes(data)
        try:
            read_manifest(Path(tmp))
        except InputError as exc:
            assert str(Path(tmp)) in exc.message


@given(st.lists(runs | json_values, max_size=3))
def test_taubench_ingest_reads_or_refuses_and_what_it_writes_reads_back(runs_):
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "m-airline.json", Path(tmp) / "c.jsonl"
        src.write_text(json.dumps(runs_), encoding="utf-8")
        try:
            n = ingest_taubench([src], out, progress=False)
        except InputError as exc:
            assert src.name in exc.message and "\n" not in exc.message, exc.message
            assert not out.exists()
            return
        assert len(load_conversations(out)) == n


@given(st.lists(confetti_lines, max_size=4))
def test_confetti_ingest_reads_or_refuses_and_what_it_writes_reads_back(lines):
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "confetti.jsonl", Path(tmp) / "c.jsonl"
        src.write_bytes(lines_of(lines))
        try:
            n = ingest_confetti(src, out, progress=False)
        except InputError as exc:
            assert src.name in exc.message and "\n" not in exc.message, exc.message
            assert not out.exists()
            return
        assert len(load_conversations(out)) == n
