"""Every bad input through the CLI: one clear line naming file, line and reason; no traceback,
no report written. Tolerated issues are counted in the report instead (test_scoring_cli.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode

runner = CliRunner()
HEADER = {"kind": "submission", "method": "tokengeist"}


def write_jsonl(path: Path, objects: list[dict]) -> Path:
    path.write_text("".join(json.dumps(o) + "\n" for o in objects), encoding="utf-8")
    return path


def edges(*pairs, score=None) -> list[dict]:
    return [{"child": c, "parent": p, **({"score": score} if score is not None else {})}
            for c, p in pairs]


def assert_one_clear_line(res, *needles: str, code: int = ExitCode.BAD_INPUT) -> str:
    out = res.output.strip()
    assert res.exit_code == code, out
    assert "Traceback" not in out
    assert res.exception is None or isinstance(res.exception, SystemExit)
    assert out.startswith("error:") and "\n" not in out, out
    for needle in needles:
        assert needle in out, out
    return out


def score(sub: Path, bench: Path, out: Path):
    res = runner.invoke(app, ["score", str(sub), "--benchmark", str(bench), "--out", str(out),
                              "--resamples", "10"])
    # Nothing half-written: a refused submission leaves no report behind.
    assert not list(out.glob("*.json")) if out.exists() else True
    return res


@pytest.fixture
def ids(bench):
    return bench[1]


def case_lines(ids) -> dict[str, tuple[list, tuple[str, ...]]]:
    """name -> (file lines (dicts, or raw strings), what the message must say)."""
    t = ids["s3-time"]  # conversation s3 has turns 0..8; the target is turn 4
    return {
        "unknown-span": ([HEADER, {"span_id": "taubench/airline/sample/task-s9/trial-0#4:1-2",
                                   "edges": []}],
                         (":2", "task-s9", "not in the benchmark")),
        "duplicate-span": ([HEADER, {"span_id": t, "edges": edges((4, 3))},
                            {"span_id": t, "edges": []}],
                           (":3", "duplicate span id", "line 2")),
        "turn-does-not-exist": ([HEADER, {"span_id": t, "edges": edges((4, 3), (3, 40))}],
                                (":2", "edge 3->40", "turn 40 does not exist", "0 to 8")),
        "negative-turn": ([{"span_id": t, "edges": edges((4, -1))}],
                          (":1", "turn -1 does not exist")),
        "points-forwards": ([HEADER, {"span_id": t, "edges": edges((3, 4))}],
                            (":2", "edge 3->4 points forwards")),
        "self-loop": ([HEADER, {"span_id": t, "edges": edges((4, 4))}],
                      (":2", "edge 4->4 points forwards")),
        "after-target": ([HEADER, {"span_id": t, "edges": edges((6, 5))}],
                         (":2", "after the target turn 4")),
        "nan-score": ([HEADER, '{"span_id": "' + t + '", "edges": [{"child": 4, '
                               '"parent": 3, "score": NaN}]}'],
                      (":2", "a number JSON cannot carry (NaN or Infinity)")),
        "infinite-score": ([HEADER, '{"span_id": "' + t + '", "edges": [{"child": 4, '
                                    '"parent": 3, "score": Infinity}]}'],
                           (":2", "a number JSON cannot carry (NaN or Infinity)")),
        "malformed-json": ([HEADER, {"span_id": t, "edges": []}, '{"span_id": "x", "edges": ['],
                           (":3", "malformed JSON")),
        "not-an-object": ([HEADER, "[1, 2]"], (":2", "expected a JSON object, got list")),
        "missing-span-id": ([HEADER, {"edges": []}], (":2", "span_id", "required")),
        "edge-not-integer": ([HEADER, {"span_id": t, "edges": [{"child": "four", "parent": 3}]}],
                             (":2", "edges.0.child")),
        "unknown-edge-field": ([HEADER, {"span_id": t, "edges": [{"child": 4, "parent": 3,
                                                                  "weight": 1}]}],
                               (":2", "weight", "xtra")),
        "header-not-first": ([{"span_id": t, "edges": []}, HEADER],
                             (":2", "header is only allowed on the first line")),
        "header-without-method": ([{"kind": "submission"}], (":1", "method")),
        "skipped-with-edges": ([HEADER, {"span_id": t, "edges": edges((4, 3)),
                                         "skipped": "too long"}],
                               (":2", "marked skipped", "either edges or a skipped reason")),
        "unknown-kind": ([{"kind": "guess", "span_id": t}], (":1", "unknown record kind 'guess'")),
        "newer-version": ([HEADER, {"span_id": t, "edges": [], "schema_version": 99}],
                          (":2", "schema_version 99", "upgrade mtcabench")),
    }


CASES = list(case_lines({"s3-time": "x"}))


@pytest.mark.parametrize("case", CASES)
def test_bad_submission_line(case, bench, ids, tmp_path):
    lines, needles = case_lines(ids)[case]
    sub = tmp_path / "sub.jsonl"
    sub.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines),
                   encoding="utf-8")
    res = score(sub, bench[0], tmp_path / "out")
    out = assert_one_clear_line(res, "sub.jsonl", *needles)
    assert not (tmp_path / "out" / "sub.score.json").exists(), out


def test_conversations_file_as_submission(bench, tmp_path):
    folder, _ = bench
    res = score(folder / "conversations.jsonl", folder, tmp_path / "out")
    assert_one_clear_line(res, "conversations.jsonl:1", "this is a conversations file",
                          "not a submission")


def test_spans_file_as_submission(bench, tmp_path):
    folder, _ = bench
    res = score(folder / "spans.jsonl", folder, tmp_path / "out")
    assert_one_clear_line(res, "spans.jsonl:1", "a benchmark spans file")


def test_score_report_as_submission(bench, submissions, tmp_path):
    folder, _ = bench
    ok = runner.invoke(app, ["score", str(submissions[1]), "-b", str(folder), "-o",
                             str(tmp_path / "r"), "--resamples", "0", "--no-plot"])
    assert ok.exit_code == 0, ok.output
    res = score(tmp_path / "r" / "flat.score.json", folder, tmp_path / "out")
    assert_one_clear_line(res, "flat.score.json", "this is a score report", "JSON Lines")


def test_explain_json_as_submission(bench, tmp_path):
    from mtcabench.model import ExplanationRecord

    sub = tmp_path / "explain.json"  # as `mtcabench explain` writes it: the record, indented
    sub.write_text(json.dumps(ExplanationRecord(conversation="c1").model_dump(mode="json"),
                              indent=1), encoding="utf-8")
    res = score(sub, bench[0], tmp_path / "out")
    out = assert_one_clear_line(res, "explain.json: this is an explanation written by "
                                "`mtcabench explain`", "not a submission; score reads a "
                                "submission: JSON Lines")
    assert "a JSON dict" not in out


def test_json_document_as_submission(bench, tmp_path):
    sub = tmp_path / "sub.json"
    sub.write_text(json.dumps([{"span_id": "x", "edges": []}], indent=2), encoding="utf-8")
    res = score(sub, bench[0], tmp_path / "out")
    assert_one_clear_line(res, "sub.json", "one JSON list document", "not a submission")


def test_binary_file_as_submission(bench, tmp_path):
    sub = tmp_path / "chart.png"
    sub.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe")
    res = score(sub, bench[0], tmp_path / "out")
    assert_one_clear_line(res, "chart.png:1", "not UTF-8")


def test_empty_file_and_folder_and_missing_file(bench, tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")
    assert_one_clear_line(score(empty, bench[0], tmp_path / "o"), "empty file, no predictions")
    assert_one_clear_line(score(tmp_path, bench[0], tmp_path / "o"), "is a folder")
    assert_one_clear_line(score(tmp_path / "nope.jsonl", bench[0], tmp_path / "o"),
                          "nope.jsonl: no such file")


def test_bad_benchmark(submissions, tmp_path):
    res = score(submissions[0], tmp_path, tmp_path / "out")
    assert_one_clear_line(res, "not a benchmark folder")


def test_compare_with_a_bad_second_file(bench, submissions, tmp_path):
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"span_id": bench[1]["s3-time"],
                                                 "edges": edges((4, 3), (3, 4))}])
    res = runner.invoke(app, ["score", "-b", str(bench[0]), "--compare", str(submissions[0]),
                              str(bad), "-o", str(tmp_path / "out")])
    assert_one_clear_line(res, "bad.jsonl:1", "edge 3->4 points forwards")
    assert not list((tmp_path / "out").glob("*"))  # nothing written for the good one either


def test_bad_options(bench, submissions, tmp_path):
    res = runner.invoke(app, ["score", str(submissions[0]), "-b", str(bench[0]),
                              "--average", "median", "-o", str(tmp_path)])
    assert_one_clear_line(res, "--average must be macro, micro or both")
    res = runner.invoke(app, ["score", "-b", str(bench[0]), "-o", str(tmp_path)])
    assert_one_clear_line(res, "give a submission file")
    res = runner.invoke(app, ["score", str(submissions[0]), "-b", str(bench[0]),
                              "--resamples", "-5", "-o", str(tmp_path)])
    assert_one_clear_line(res, "--resamples must be 0 or more")
    res = runner.invoke(app, ["score", str(submissions[0]), "-b", str(bench[0]),
                              "--seed", "-1", "-o", str(tmp_path)])
    assert_one_clear_line(res, "--seed must be 0 or more")


def test_a_resample_count_past_the_bound_is_refused_before_anything_is_read(
        submissions, tmp_path, monkeypatch):
    # It used to draw for minutes and then run out of memory, blaming "an input". Refused up
    # front: the benchmark is not even read (here it does not exist).
    import mtcabench.scoring.run as run_module

    monkeypatch.setattr(run_module, "as_benchmark", lambda b: pytest.fail("benchmark read"))
    res = runner.invoke(app, ["score", str(submissions[0]), "-b", str(tmp_path / "none"),
                              "--resamples", "1000000000", "-o", str(tmp_path / "out")])
    assert_one_clear_line(res, "--resamples must be 0 or more (0: no intervals) and at most "
                          "100,000", "got 1000000000")
    assert not (tmp_path / "out").exists()


def test_show_unknown_span_suggests_close_ids(bench, tmp_path):
    folder, ids = bench
    typo = ids["s3-time"].replace("62-70", "62-71")
    res = runner.invoke(app, ["show", typo, "-b", str(folder), "-o", str(tmp_path)])
    assert_one_clear_line(res, "is not in the benchmark", "did you mean", ids["s3-time"])
    res = runner.invoke(app, ["show", ids["s3-time"], "-b", str(folder), "-o", str(tmp_path),
                              "--text", "png"])
    assert_one_clear_line(res, "--text must be mermaid, dot or none")


def test_show_checks_the_submission_like_score(bench, tmp_path):
    folder, ids = bench
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"span_id": ids["s3-time"],
                                                 "edges": edges((4, 30))}])
    res = runner.invoke(app, ["show", ids["s3-time"], "-b", str(folder), "-s", str(bad),
                              "-o", str(tmp_path)])
    assert_one_clear_line(res, "bad.jsonl:1", "turn 30 does not exist")


def test_a_refused_score_leaves_no_output_folder(bench, ids, tmp_path):
    sub = write_jsonl(tmp_path / "sub.jsonl", [HEADER, {"span_id": ids["s3-time"],
                                                        "edges": edges((4, 40))}])
    out = tmp_path / "new" / "score"
    assert_one_clear_line(score(sub, bench[0], out), "turn 40 does not exist")
    assert not (tmp_path / "new").exists()
