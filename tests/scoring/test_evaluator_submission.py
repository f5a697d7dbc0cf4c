"""A submission written by the reference evaluator (real SmolLM2 model) on the sample is
read, checked and scored without a warning: the two stages agree on the format."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.results.report import Comparison

pytestmark = [pytest.mark.model, pytest.mark.slow]


def test_evaluator_submissions_score_and_compare(bench, tmp_path):
    from mtcabench.evaluate import trace_benchmark

    folder, ids = bench
    outs = {"tokengeist": tmp_path / "tokengeist.jsonl", "flat": tmp_path / "flat.jsonl"}
    trace_benchmark(folder, outs, scorer="avg-attention", progress=False)
    res = CliRunner().invoke(app, ["score", "--benchmark", str(folder), "--compare",
                                   str(outs["tokengeist"]), str(outs["flat"]),
                                   "--out", str(tmp_path / "score"), "--resamples", "200"])
    assert res.exit_code == 0, res.output
    assert "A = tokengeist/avg-attention vs B = flat/avg-attention" in res.output
    cmp = Comparison.model_validate_json(
        (tmp_path / "score" / "compare-tokengeist-vs-flat.json").read_text())
    for report in (cmp.a, cmp.b):
        assert report.spans.benchmark == len(ids) == 8
        assert report.spans.missing == 0
        assert report.spans.predicted + report.spans.skipped == 8
        assert report.warnings == [] or {w.code for w in report.warnings} == {"skipped-span"}
        assert report.submission.model and report.submission.parameters
        for metric in report.row("overall").metrics.values():
            for est in (metric.macro, metric.micro):
                assert est.value is None or 0.0 <= est.value <= 1.0
    # Spot-check one span: the evaluator's edges are what the per-span file scored.
    sid = ids["s3-time"]
    line = next(json.loads(x) for x in outs["tokengeist"].read_text().splitlines()
                if sid in x)
    per_span = next(json.loads(x) for x in
                    (tmp_path / "score" / "tokengeist.spans.jsonl").read_text().splitlines()
                    if sid in x)
    assert per_span["edge_predicted"] == len({(e["child"], e["parent"]) for e in line["edges"]})
