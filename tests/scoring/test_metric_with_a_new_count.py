"""A metric that needs a count the table does not have is one metric entry plus the count's
definition, and then reaches every reader of the metrics: the JSON and Markdown reports, the
per-span file, the floors, `show`, `view` (its document and the page in a browser) and the
dataset card.

The toy metric, *target share*, is the share of the distinct predicted edges that leave the
target turn (1 where nothing is predicted); its new count, ``target_edges``, is how many do.
On conftest's TOKENGEIST submission its values are worked out by hand below.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from mtcabench.benchmark import load_benchmark
from mtcabench.results import (
    COUNTS,
    METRICS,
    Count,
    Metric,
    ScoreReport,
    SpanScore,
    register_count,
    register_metric,
    unregister_count,
    unregister_metric,
)
from mtcabench.results.floors import floor_scores
from mtcabench.results.metrics import ratio_array
from mtcabench.scoring import run_scoring
from mtcabench.scoring.show import draw_spans
from mtcabench.scoring.view import view_data

ROOT = Path(__file__).resolve().parents[2]

#: The new count: distinct predicted edges whose child is the span's target turn.
TARGET_EDGES = Count("target_edges", "distinct predicted edges leaving the target turn",
                     lambda c: sum(1 for child, _ in c.predicted if child == c.span.graph.target))

#: The toy metric: one entry, naming the counts it needs.
TARGET_SHARE = Metric(
    "target_share", "target share", "target_edges / |P|: share of the predicted edges that "
    "leave the target turn (1 where nothing is predicted)",
    span=lambda c: c.target_edges / c.edge_predicted if c.edge_predicted else 1.0,
    micro=lambda s: ratio_array(s["target_edges"], s["edge_predicted"],
                                np.zeros_like(s["edge_predicted"])),
    card="target share", view="target share", counts=("target_edges", "edge_predicted"))

# Per span (conftest's TOKENGEIST against GOLD, in benchmark order): target edges over
# distinct predicted edges; s2-flight is missing and s3-seat predicts nothing (1 each).
BY_HAND = {"s1-reservations": 1 / 2, "s1-flight": 1 / 3, "s1-price": 1 / 3,
           "s2-remaining": 1 / 2, "s2-flight": 1.0, "s3-time": 2 / 3, "s3-seat": 1.0,
           "s1-route": 1 / 2}
MACRO = sum(BY_HAND.values()) / 8
MICRO = (1 + 1 + 1 + 1 + 0 + 2 + 0 + 1) / (2 + 3 + 3 + 2 + 0 + 3 + 0 + 2)  # 7 / 15


@pytest.fixture()
def toy():
    register_count(TARGET_EDGES)
    register_metric(TARGET_SHARE)
    try:
        yield TARGET_SHARE
    finally:
        unregister_metric(TARGET_SHARE.name)
        unregister_count(TARGET_EDGES.name)
    assert TARGET_SHARE.name not in METRICS and TARGET_EDGES.name not in COUNTS


def test_the_reports_and_the_per_span_file_hold_it(toy, bench, submissions, tmp_path):
    folder, ids = bench
    run_scoring([submissions[0]], str(folder), out=tmp_path, resamples=50, plot=False)
    report = ScoreReport.model_validate_json(
        (tmp_path / "tokengeist.score.json").read_text(encoding="utf-8"))
    overall = report.row("overall").metrics["target_share"]
    assert overall.macro.value == pytest.approx(MACRO)
    assert overall.micro.value == pytest.approx(MICRO)
    assert overall.macro.low <= overall.macro.value <= overall.macro.high
    assert report.definitions["target_share"] == TARGET_SHARE.definition
    # The floors' rows, with the same metric.
    for floor in report.floors:
        assert floor.row("overall").metrics["target_share"].macro.value is not None
    md = (tmp_path / "tokengeist.score.md").read_text(encoding="utf-8")
    assert "| target share (macro) |" in md and "| target share (micro) |" in md
    assert f"{MACRO:.3f} [" in md
    # The per-span file: the value and the new count behind it, after the others.
    import json

    lines = [json.loads(x) for x in
             (tmp_path / "tokengeist.spans.jsonl").read_text(encoding="utf-8").splitlines()]
    by_id = {x["span_id"]: x for x in lines}
    for name, value in BY_HAND.items():
        assert by_id[ids[name]]["target_share"] == pytest.approx(value)
    assert by_id[ids["s3-time"]]["target_edges"] == 2
    assert list(lines[0])[-1] == "target_edges"


def test_the_floors_score_it(toy, bench):
    folder, _ = bench
    benchmark = load_benchmark(folder)
    for name in ("recency", "first-user"):
        for span, score in zip(benchmark.spans, floor_scores(benchmark, name)):
            assert isinstance(score, SpanScore) and score.span_id == span.id
            assert score.target_share == score.value("target_share")
            assert 0 <= score.counts["target_edges"] <= score.counts["edge_predicted"]


def test_show_lists_it(toy, bench, submissions, tmp_path):
    folder, ids = bench
    views, paths = draw_spans([ids["s3-time"]], str(folder), submissions[0], out=tmp_path)
    assert views[0].metrics()["target_share"] == pytest.approx(2 / 3)
    page = paths[0].read_text(encoding="utf-8")
    assert "<tr><td>target share</td><td>0.667</td></tr>" in page


def test_the_view_document_holds_it(toy, bench, submissions):
    folder, ids = bench
    data = view_data(load_benchmark(folder), [submissions[0]])
    metrics = [m["name"] for m in data["metrics"]]
    assert metrics[-1] == "target_share" and metrics == list(METRICS)
    assert data["metrics"][-1]["view"] == "target share"
    row = {s["id"]: k for k, s in enumerate(data["spans"])}
    rows = data["methods"][0]["rows"]
    for name, value in BY_HAND.items():
        assert rows[row[ids[name]]]["values"][-1] == round(value, 4)


@pytest.mark.browser
@pytest.mark.slow
def test_the_view_page_shows_it(toy, bench, submissions, tmp_path, browser):
    from typer.testing import CliRunner

    from mtcabench.cli import app

    folder, ids = bench
    res = CliRunner().invoke(app, ["view", "--benchmark", str(folder), str(submissions[0]),
                                   "--out", str(tmp_path / "view")])
    assert res.exit_code == 0, res.output
    page = browser.new_page(viewport={"width": 1600, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((tmp_path / "view" / "index.html").as_uri())
    page.wait_for_selector("body[data-ready='1']", timeout=30000)
    # The table of spans: a column of its own, after the built-in ones.
    assert page.locator("#head div.num").all_inner_texts() == [
        "edge F1", "source hit", "evidence hit@3", "target share"]
    k = [s.id for s in load_benchmark(folder).spans].index(ids["s3-time"])
    cells = page.locator(f'#spacer .row[data-span="{ids["s3-time"]}"] div.num')
    assert cells.last.inner_text() == "0.67"
    # A span's page lists every metric, the toy one included.
    page.goto((tmp_path / "view" / "index.html").as_uri() + f"#span={k}")
    page.wait_for_selector("#span-id")
    heads = page.locator("#span table th").all_inner_texts()
    assert "target share" in heads and heads.index("target share") == 2 + len(METRICS) - 1
    assert not errors
    page.close()


def test_the_card_shows_it(toy, tmp_path):
    from mtcabench.io import write_records
    from mtcabench.release import build_release
    from tests.support import sample_reviews as reviews

    convs = reviews.sample_conversations()
    write_records(tmp_path / "c.jsonl", convs.values())
    write_records(tmp_path / "r.jsonl", reviews.sample_decisions(convs))
    built = build_release("0.1.0", tmp_path / "r.jsonl", tmp_path / "c.jsonl",
                          out=tmp_path / "release")
    card = (built.folder / "README.md").read_text(encoding="utf-8")
    floors = card[card.index("## Floors"):card.index("## Configurations")]
    block = floors[floors.index("Target share:\n"):].split("\n\n")[1].splitlines()
    assert [row.split("|")[1].strip() for row in block[2:]] == ["`recency`", "`first-user`",
                                                                  "`string-match`"]
    # Every cell is a value (or "-" for a type without spans), never left empty.
    assert all(cell.strip() for row in block[2:] for cell in row.split("|")[4:-1])


def test_a_count_is_needed_before_a_metric_and_kept_while_one_needs_it(toy):
    assert register_count(TARGET_EDGES) is TARGET_EDGES  # the same count again: harmless
    with pytest.raises(ValueError, match="exists already"):
        register_count(dataclasses.replace(TARGET_EDGES))
    with pytest.raises(ValueError, match="needed by target_share"):
        unregister_count("target_edges")
    assert "target_edges" in COUNTS
