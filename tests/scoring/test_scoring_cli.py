"""`mtcabench score` and `show` on a hand-built benchmark: exact numbers, files, pictures.

Per-span values of the two submissions in conftest.py, worked out by hand
(edge P, R, F1; source P, R):

    span             tokengeist                      flat
    s1-reservations  1, 1, 1; 1, 1                   1, 1/2, 2/3; 1, 1
    s1-flight        1, 1, 1; 1, 1                   1, 1/3, 1/2; 0, 0   (no source predicted)
    s1-price         1/3, 1/2, 0.4; 1, 1             1, 1/2, 2/3; 1, 1
    s2-remaining     1, 1/2, 2/3; 1, 1/2             1, 1/2, 2/3; 1, 1
    s2-flight        missing: 0, 0, 0; 0, 0          1, 1/2, 2/3; 1, 1
    s3-time (hal.)   2/3, 1, 0.8; 1/2, 1             0, 0, 0; 0, 0
    s3-seat (hal.)   empty gold, empty pred: all 1   empty gold, edge 4->1: all 0
    s1-route         duplicate edge: 1, 1, 1; 1, 1   skipped: 0, 0, 0; 0, 0
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.results.report import Comparison, ScoreReport
from mtcabench.scoring import compare_submissions, score_submission

runner = CliRunner()


def invoke(*args) -> object:
    return runner.invoke(app, [str(a) for a in args])


def score_cli(sub: Path, bench: Path, out: Path, *extra) -> ScoreReport:
    res = invoke("score", sub, "--benchmark", bench, "--out", out, "--resamples", 200, *extra)
    assert res.exit_code == 0, res.output
    name = sub.name.removesuffix(".jsonl")
    return ScoreReport.model_validate_json((out / f"{name}.score.json").read_text())


@pytest.mark.slow  # a few seconds: a fresh interpreter or a whole run
def test_tokengeist_numbers_by_hand(bench, submissions, tmp_path):
    folder, _ = bench
    report = score_cli(submissions[0], folder, tmp_path)
    overall = report.row("overall").metrics
    macro = {k: v.macro.value for k, v in overall.items()}
    micro = {k: v.micro.value for k, v in overall.items()}
    assert macro["edge_precision"] == pytest.approx((1 + 1 + 1 / 3 + 1 + 0 + 2 / 3 + 1 + 1) / 8)
    assert macro["edge_recall"] == pytest.approx((1 + 1 + .5 + .5 + 0 + 1 + 1 + 1) / 8)
    assert macro["edge_f1"] == pytest.approx((1 + 1 + .4 + 2 / 3 + 0 + .8 + 1 + 1) / 8)
    assert macro["source_precision"] == pytest.approx(6.5 / 8)
    assert macro["source_recall"] == pytest.approx(6.5 / 8)
    assert macro["hallucinated_source_recall"] == pytest.approx(1.0)
    # Micro: edge hits 12 of 15 predicted, of 17 gold; sources 6 of 7, of 8.
    assert micro["edge_precision"] == pytest.approx(12 / 15)
    assert micro["edge_recall"] == pytest.approx(12 / 17)
    assert micro["edge_f1"] == pytest.approx(2 * (12 / 15) * (12 / 17) / (12 / 15 + 12 / 17))
    assert micro["source_precision"] == pytest.approx(6 / 7)
    assert micro["source_recall"] == pytest.approx(6 / 8)
    # Breakdowns: hallucination spans s3-time and s3-seat.
    hal = report.row("dependency_type", "hallucination")
    assert hal.spans == 2 and hal.metrics["edge_precision"].macro.value == pytest.approx(5 / 6)
    assert report.row("dependency_type", "direct").metrics[
        "hallucinated_source_recall"].macro.value is None
    assert report.row("depth", "0").spans == 1 and report.row("depth", "3").spans == 1
    assert report.row("source", "taubench").spans == 8
    # The missing span is scored as empty and counted; the duplicate edge is counted.
    assert report.spans.missing == 1 and report.row("overall").missing == 1
    warnings = {w.code: w.count for w in report.warnings}
    assert warnings == {"duplicate-edge": 1, "missing-span": 1}
    # Intervals hold the estimate.
    e = overall["edge_f1"].macro
    assert e.low <= e.value <= e.high and e.low < e.high


def test_flat_numbers_by_hand(bench, submissions, tmp_path):
    folder, _ = bench
    report = score_submission(submissions[1], folder, resamples=0)
    o = report.row("overall").metrics
    assert o["edge_precision"].macro.value == pytest.approx(5 / 8)
    assert o["edge_recall"].macro.value == pytest.approx((.5 + 1 / 3 + .5 + .5 + .5) / 8)
    assert o["edge_precision"].micro.value == pytest.approx(6 / 8)
    assert o["source_precision"].micro.value == pytest.approx(5 / 7)
    assert o["hallucinated_source_recall"].macro.value == 0.0
    assert o["edge_f1"].macro.low is None  # no resamples, no intervals
    assert report.spans.skipped == 1 and report.spans.missing == 0
    assert {w.code for w in report.warnings} == {"skipped-span"}


def test_compare_writes_everything_and_prints_the_table(bench, submissions, tmp_path):
    folder, _ = bench
    tg, flat = submissions
    res = invoke("score", "--benchmark", folder, "--compare", tg, flat, "--out", tmp_path,
                 "--resamples", 300)
    assert res.exit_code == 0, res.output
    assert "A = tokengeist/avg-attention vs B = flat/avg-attention" in res.output
    assert "A-B +0.338" in res.output  # macro edge F1: 0.7333 - 0.3958
    assert "macro average" in res.output
    names = {p.name for p in tmp_path.iterdir()}
    assert {"tokengeist.score.json", "tokengeist.score.md", "tokengeist.spans.jsonl",
            "flat.score.json", "flat.score.md", "flat.spans.jsonl",
            "compare-tokengeist-vs-flat.json", "compare-tokengeist-vs-flat.md",
            "by-dependency-type.png", "by-dependency-type.svg"} <= names
    cmp = Comparison.model_validate_json((tmp_path / "compare-tokengeist-vs-flat.json")
                                         .read_text())
    d = cmp.row("overall").metrics["edge_f1"]["macro"]
    assert d.a.value == pytest.approx(0.73333, abs=1e-4)
    assert d.b.value == pytest.approx(0.39583, abs=1e-4)
    assert d.difference.value == pytest.approx(d.a.value - d.b.value)
    assert d.difference.low < d.difference.value < d.difference.high
    # Hallucination spans: tokengeist recovers the priming source on both, flat on neither.
    hal = cmp.row("dependency_type", "hallucination").metrics["hallucinated_source_recall"]
    assert hal["macro"].difference.value == 1.0 and hal["macro"].difference.p_value == 0.0
    md = (tmp_path / "compare-tokengeist-vs-flat.md").read_text()
    assert "| overall | 8 |" in md and "Micro average" in md and "p<0.0033" in md
    # The same numbers through the Python API (what the demo calls).
    api = compare_submissions(tg, flat, folder, resamples=300)
    assert api.row("overall").metrics["edge_f1"]["macro"] == d
    assert api.a.floors == cmp.a.floors and [f.method for f in api.a.floors] == [
        "recency", "first-user", "string-match"]
    spans = [json.loads(x) for x in (tmp_path / "tokengeist.spans.jsonl").read_text().splitlines()]
    assert len(spans) == 8 and sorted(s["status"] for s in spans).count("missing") == 1


@pytest.mark.slow
def test_two_comparisons_with_dotted_names_never_overwrite_each_other(bench, submissions,
                                                                     tmp_path):
    """`trace` names its files run.<method>.jsonl: the comparison's name keeps B's method."""
    folder, _ = bench
    tg = tmp_path / "run.tokengeist.jsonl"
    flat = tmp_path / "run.flat.jsonl"
    other = tmp_path / "run.flat-again.jsonl"
    tg.write_text(submissions[0].read_text())
    flat.write_text(submissions[1].read_text())
    other.write_text(submissions[0].read_text())
    out = tmp_path / "score"
    for b in (flat, other):
        res = invoke("score", "--benchmark", folder, "--compare", tg, b, "--out", out,
                     "--resamples", 50, "--no-floors")
        assert res.exit_code == 0, res.output
    first = Comparison.model_validate_json(
        (out / "compare-run.tokengeist-vs-run.flat.json").read_text())
    second = Comparison.model_validate_json(
        (out / "compare-run.tokengeist-vs-run.flat-again.json").read_text())
    assert (out / "compare-run.tokengeist-vs-run.flat.md").is_file()
    assert (out / "compare-run.tokengeist-vs-run.flat-again.md").is_file()
    edge_f1 = [c.row("overall").metrics["edge_f1"]["macro"].difference.value
               for c in (first, second)]
    assert edge_f1[0] == pytest.approx(0.7333 - 0.3958, abs=1e-3) and edge_f1[1] == 0.0


def test_report_markdown_states_averages_and_warnings(bench, submissions, tmp_path):
    folder, _ = bench
    score_cli(submissions[0], folder, tmp_path)
    md = (tmp_path / "tokengeist.score.md").read_text()
    assert "## Macro average" in md and "## Micro average" in md
    assert "edge F1 (macro)" in md and "edge F1 (micro)" in md
    assert "`missing-span` x1" in md and "`duplicate-edge` x1" in md
    assert "| overall | 8 | 1 | 0.750 [" in md  # spans, scored empty, macro edge P


@pytest.mark.slow
def test_several_submissions_chart(bench, submissions, tmp_path):
    folder, _ = bench
    res = invoke("score", *submissions, "--benchmark", folder, "--out", tmp_path,
                 "--resamples", 50, "--average", "both")
    assert res.exit_code == 0, res.output
    assert "edge F1" in res.output and "(micro)" in res.output and "(macro)" in res.output
    png, svg = tmp_path / "by-dependency-type.png", tmp_path / "by-dependency-type.svg"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
    text = svg.read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text
    for label in ("tokengeist/avg-attention", "flat/avg-attention", "hallucination",
                  "multi-source", "edge F1 (macro average)"):
        assert label in text  # matplotlib keeps text as text in SVG (svg.fonttype 'path'?)


def test_reruns_agree_and_seed_matters(bench, submissions):
    folder, _ = bench
    a = score_submission(submissions[0], folder, resamples=100, seed=3)
    b = score_submission(submissions[0], folder, resamples=100, seed=3)
    c = score_submission(submissions[0], folder, resamples=100, seed=4)
    assert a.rows == b.rows and a.rows != c.rows


# --------------------------------------------------------------------------- show


def test_show_draws_gold_and_predicted_edges(bench, submissions, tmp_path):
    folder, ids = bench
    sid = ids["s3-time"]  # gold 4->3, 3->2; tokengeist adds 4->1
    res = invoke("show", sid, "--benchmark", folder, "--submission", submissions[0],
                 "--out", tmp_path)
    assert res.exit_code == 0, res.output
    assert 't4 -->|"gold+predicted 0.90"| t3' in res.output
    assert 't4 -->|"predicted only 0.70"| t1' in res.output
    assert 't3 -->|"gold+predicted 0.80"| t2' in res.output
    page = next(tmp_path.glob("*.html")).read_text()
    assert "<svg" in page and "<mark>18:25:00</mark>" in page
    assert page.count('class="edge gold both"') == 2
    assert page.count('class="edge pred extra"') == 1
    assert "hallucination" in page and "halluc. source R" in page


def test_show_dot_svg_and_missing_span(bench, submissions, tmp_path):
    folder, ids = bench
    sid = ids["s2-flight"]  # missing from tokengeist: gold only, drawn as missed
    res = invoke("show", sid, "--benchmark", folder, "-s", submissions[0], "-o", tmp_path,
                 "--format", "svg", "--text", "dot")
    assert res.exit_code == 0, res.output
    assert "t6 -> t5" in res.output and "gold only (missed)" in res.output
    assert "style=dashed" in res.output
    svg = next(tmp_path.glob("*.svg")).read_text()
    assert "(missing)" in svg and svg.count('class="edge gold missed"') == 2
    assert 'class="edge pred' not in svg


def test_show_gold_only(bench, tmp_path):
    folder, ids = bench
    res = invoke("show", ids["s2-remaining"], "-b", folder, "-o", tmp_path)
    assert res.exit_code == 0, res.output
    for edge in ("t6 -->|\"gold\"| t5", "t6 -->|\"gold\"| t3", "t5 -->|\"gold\"| t4",
                 "t3 -->|\"gold\"| t2"):
        assert edge in res.output
    assert "predicted" not in res.output
    page = next(tmp_path.glob("*.html")).read_text()
    assert page.count('class="edge gold gold"') == 4 and "gold edge" in page


def test_outsider_submission_without_header(bench, tmp_path):
    # Lines with just span_id and edges, no header, no kind: accepted, named after the file,
    # counted as a warning; reports go to score/ beside the submission by default.
    folder, ids = bench
    sub = tmp_path / "my-method.jsonl"
    sub.write_text("".join(json.dumps({"span_id": sid, "edges": []}) + "\n"
                           for sid in ids.values()), encoding="utf-8")
    res = invoke("score", sub, "--benchmark", folder, "--resamples", 0, "--no-plot")
    assert res.exit_code == 0, res.output
    assert "my-method on" in res.output and "no-header x1" in res.output
    report = ScoreReport.model_validate_json(
        (tmp_path / "score" / "my-method.score.json").read_text())
    assert report.submission.method is None and report.submission.label == "my-method"
    assert [w.code for w in report.warnings] == ["no-header"]
    # Empty predictions everywhere: only the empty-gold hallucination span (s3-seat) scores.
    assert report.row("overall").metrics["edge_f1"].macro.value == pytest.approx(1 / 8)
    assert not (tmp_path / "score" / "by-dependency-type.png").exists()  # --no-plot


@pytest.mark.parametrize("named, warned", [
    ("release/0.9.0", True),  # another folder (one that is not here either)
    ("hf://datasets/org/mtcabench@1.0.0", True),  # a Hub dataset
    ("bench\u0000", True),  # no path at all (a NUL character)
    (None, False),  # the same folder, as given
    ("..", False),  # the same folder, by another spelling (resolved in the test)
])
def test_a_header_naming_another_benchmark_is_a_warning(bench, tmp_path, named, warned):
    folder, ids = bench
    if named is None:
        named = str(folder)
    elif named == "..":
        named = str(folder / "sub" / "..")
    header = {"kind": "submission", "method": "flat", "benchmark": named}
    sub = tmp_path / "other.jsonl"
    sub.write_text("".join(json.dumps(o) + "\n" for o in
                           [header, *({"span_id": sid, "edges": []} for sid in ids.values())]),
                   encoding="utf-8")
    res = invoke("score", sub, "--benchmark", folder, "--resamples", 0, "--no-plot")
    assert res.exit_code == 0, res.output
    report = ScoreReport.model_validate_json(
        (tmp_path / "score" / "other.score.json").read_text())
    codes = [w.code for w in report.warnings]
    if warned:
        assert codes == ["other-benchmark"]
        assert report.warnings[0].examples == [f"header: {named}; scored against: {folder}"]
        shown = " ".join(res.output.split())
        assert "other-benchmark x1 (header: " in shown and "\x00" not in shown
        if named.isprintable():
            assert f"other-benchmark x1 (header: {named}; scored against:" in shown
    else:
        assert codes == [] and "other-benchmark" not in res.output
