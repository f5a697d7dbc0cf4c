"""Submissions are read strictly as the published schema says, streamed, and bounded (issue 12).

- mistyped fields are refused, never coerced (``"child": "10"``, ``"parent": true``,
  ``"score": "0.9"``), with the file, the line and the field;
- a span listing more edges than its conversation has (child, parent) turn pairs is refused;
- scoring memory does not grow with the submission: a file of long edge lists takes about
  what a small one does, on the same benchmark.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from mtcabench.benchmark import load_benchmark
from mtcabench.cli import app
from mtcabench.errors import ExitCode, InputError
from mtcabench.io import write_records
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
from mtcabench.scoring import read_submission, score_submission
from mtcabench.results.schema import submission_schema

runner = CliRunner()
HEADER = {"kind": "submission", "method": "tokengeist"}


def write(path: Path, lines: list) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines),
                    encoding="utf-8")
    return path


def refused(sub: Path, bench: Path, out: Path, *needles: str) -> str:
    res = runner.invoke(app, ["score", str(sub), "-b", str(bench), "-o", str(out),
                              "--resamples", "0", "--no-plot"])
    text = res.output.strip()
    assert res.exit_code == ExitCode.BAD_INPUT, text
    assert text.startswith("error:") and "\n" not in text and "Traceback" not in text, text
    for needle in needles:
        assert needle in text, text
    assert not out.exists(), "a refused score leaves no output folder"
    return text


def edge(child, parent, **extra) -> dict:
    return {"child": child, "parent": parent, **extra}


MISTYPED = {
    "child-string": (edge("4", 3), "edges.0.child"),
    "parent-true": (edge(4, True), "edges.0.parent"),
    "score-string": (edge(4, 3, score="0.9"), "edges.0.score"),
    "score-true": (edge(4, 3, score=True), "edges.0.score"),
    "child-null": (edge(None, 3), "edges.0.child"),
}


@pytest.mark.parametrize("case", sorted(MISTYPED))
def test_mistyped_edge_fields_are_refused_not_coerced(case, bench, tmp_path):
    folder, ids = bench
    bad, field = MISTYPED[case]
    sub = write(tmp_path / "sub.jsonl", [HEADER, {"span_id": ids["s3-time"], "edges": [bad]}])
    refused(sub, folder, tmp_path / "out", "sub.jsonl:2", ids["s3-time"], field)
    # The schema says the same.
    line = {"span_id": ids["s3-time"], "edges": [bad]}
    assert not jsonschema.Draft202012Validator(submission_schema()).is_valid(line)


@pytest.mark.parametrize("line, field", [
    ({"span_id": 7, "edges": []}, "span_id"),
    ({"span_id": "x", "edges": [], "skipped": 1}, "skipped"),
    ({"span_id": "x", "edges": [], "schema_version": True}, "schema_version"),
    ({"span_id": "x", "edges": {"child": 4}}, "edges"),
    ({"kind": "submission", "method": 5}, "method"),
    ({"kind": "submission", "method": "m", "parameters": []}, "parameters"),
    ({"kind": "submission", "method": "m", "created_at": 1700000000}, "created_at"),
])
def test_other_mistyped_fields_are_refused(line, field, tmp_path):
    sub = write(tmp_path / "sub.jsonl", [line])
    with pytest.raises(InputError, match=rf"sub\.jsonl:1.*{field}"):
        read_submission(sub)


def test_integral_numbers_are_integers_as_in_json_schema(bench, tmp_path):
    # JSON (and JSON Schema) do not tell 4 from 4.0: a number with no fraction is an integer.
    folder, ids = bench
    sub = write(tmp_path / "sub.jsonl", [HEADER, {"span_id": ids["s3-time"],
                                                  "edges": [edge(4.0, 3, score=1)],
                                                  "schema_version": 1.0}])
    report = score_submission(sub, folder, resamples=0)
    assert report.spans.predicted == 1
    sub = write(tmp_path / "sub.jsonl", [HEADER, {"span_id": ids["s3-time"],
                                                  "edges": [edge(4.5, 3)]}])
    with pytest.raises(InputError, match="edges.0.child"):
        score_submission(sub, folder, resamples=0)


def test_a_valid_header_time_is_read(tmp_path):
    sub = write(tmp_path / "sub.jsonl", [{**HEADER, "created_at": "2026-01-02T03:04:05Z"},
                                         {"span_id": "x", "edges": []}])
    assert read_submission(sub).header.created_at.year == 2026


def test_more_edges_than_turn_pairs_is_refused(bench, tmp_path):
    folder, ids = bench
    bench_ = load_benchmark(folder)
    span = bench_.span_index()[ids["s3-time"]]
    n = len(bench_.conversations[span.conversation_id].turns)
    pairs = n * (n - 1) // 2
    many = [edge(4, 3)] * (pairs + 1)  # duplicates are tolerated, but not beyond every pair
    sub = write(tmp_path / "sub.jsonl", [HEADER, {"span_id": ids["s3-time"], "edges": many}])
    refused(sub, folder, tmp_path / "out", "sub.jsonl:2", f"{pairs + 1} edges",
            f"{pairs} possible")
    # As many as there are pairs is still read (duplicates counted, scored once).
    write(sub, [HEADER, {"span_id": ids["s3-time"], "edges": [edge(4, 3)] * pairs}])
    report = score_submission(sub, folder, resamples=0)
    assert {w.code: w.count for w in report.warnings}["duplicate-edge"] == pairs - 1


def test_a_line_longer_than_any_valid_one_is_refused_unread(bench, tmp_path):
    folder, ids = bench
    huge = json.dumps({"span_id": ids["s3-time"], "skipped": "x" * (64 * 2**20), "edges": []})
    sub = write(tmp_path / "sub.jsonl", [HEADER, huge])
    refused(sub, folder, tmp_path / "out", "sub.jsonl:2", "longer than")


def _generated_benchmark(folder: Path, n_convs: int = 20, n_turns: int = 60,
                         spans_per_conv: int = 10) -> None:
    """Long user/assistant conversations, spans on assistant turns, gold edge to the question."""
    folder.mkdir()
    convs, spans = [], []
    for i in range(n_convs):
        cid = f"gen/c{i}"
        turns = [Turn(index=k, role=Role.USER if k % 2 == 0 else Role.ASSISTANT,
                      content=f"turn {k} of {i}") for k in range(n_turns)]
        convs.append(Conversation(id=cid, source="taubench", domain="d", turns=turns))
        for j in range(spans_per_conv):
            t = n_turns - 1 - 2 * j
            target = TargetSpan(turn=t, start=0, end=4, text="turn")
            graph = ProvenanceGraph(target=t, nodes=[t - 1, t], edges=[Edge(child=t, parent=t - 1)])
            spans.append(BenchmarkSpan(
                id=span_id(cid, target), conversation_id=cid, source="taubench", domain="d",
                span=target, dependency_type=DependencyType.DIRECT, graph=graph, depth=1,
                sources=[t - 1], decision_source=DecisionSource.AUTO, verdict=Verdict.ACCEPT))
    write_records(folder / "conversations.jsonl", convs)
    write_records(folder / "spans.jsonl", spans)


def _submission(path: Path, bench_, long: bool) -> Path:
    lines = [HEADER]
    for s in bench_.spans:
        t = s.graph.target
        edges = ([edge(c, p, score=0.123456) for c in range(1, t + 1) for p in range(c)]
                 if long else [edge(t, t - 1)])
        lines.append({"span_id": s.id, "edges": edges})
    return write(path, lines)


def _peak(sub: Path, bench_) -> int:
    tracemalloc.start()
    try:
        score_submission(sub, bench_, resamples=0)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_scoring_memory_does_not_grow_with_the_submission(tmp_path):
    _generated_benchmark(tmp_path / "bench")
    bench_ = load_benchmark(tmp_path / "bench")
    small = _submission(tmp_path / "small.jsonl", bench_, long=False)
    big = _submission(tmp_path / "big.jsonl", bench_, long=True)  # every valid edge
    longest = max(len(line) for line in big.read_bytes().splitlines())
    assert big.stat().st_size > 100 * longest  # many lines, each much smaller than the file
    peak_small, peak_big = _peak(small, bench_), _peak(big, bench_)
    # One line at a time: the larger file costs a few times one of its lines more (its
    # objects while it is checked), not a multiple of the file (before: 11x the file).
    assert peak_big < peak_small + 40 * longest, (peak_small, peak_big, big.stat().st_size)
    assert peak_big < big.stat().st_size / 2, (peak_big, big.stat().st_size)
