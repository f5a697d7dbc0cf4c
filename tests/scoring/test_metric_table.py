"""The metrics are a table: one new entry is a new metric everywhere, and the docs list them.

A toy metric, edge Jaccard (|P & G| / |P or G| over edges), is registered as docs/scoring.md
shows it; the score report (JSON and Markdown), the floors' rows and the dataset card's
Floors section then hold it, with values worked out by hand on the hand-written submission.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from mtcabench.benchmark import load_benchmark
from mtcabench.results import METRICS, Metric, ScoreReport, SpanScore, register_metric
from mtcabench.results.metrics import markdown_table, ratio_array, unregister_metric
from mtcabench.scoring import run_scoring, score_spans

ROOT = Path(__file__).resolve().parents[2]


def _jaccard(c):
    union = c.edge_predicted + c.edge_gold - c.edge_hits
    return c.edge_hits / union if union else 1.0


JACCARD = Metric(
    "edge_jaccard", "edge J", "|P & G| / |P or G| over distinct (child, parent) edges",
    span=_jaccard,
    micro=lambda s: ratio_array(s["edge_hits"], s["edge_predicted"] + s["edge_gold"]
                                - s["edge_hits"], np.zeros_like(s["edge_hits"])),
    card="edge Jaccard", counts=("edge_hits", "edge_predicted", "edge_gold"))


@pytest.fixture()
def jaccard():
    register_metric(JACCARD)
    try:
        yield JACCARD
    finally:
        unregister_metric(JACCARD.name)
    assert JACCARD.name not in METRICS and not hasattr(SpanScore, JACCARD.name)


def test_a_registered_metric_is_in_the_report(jaccard, bench, submissions, tmp_path):
    folder, _ = bench
    run_scoring([submissions[0]], str(folder), out=tmp_path, resamples=50, plot=False)
    report = ScoreReport.model_validate_json(
        (tmp_path / "tokengeist.score.json").read_text(encoding="utf-8"))
    # Per span (conftest's TOKENGEIST against GOLD): 1, 1, 1/4, 2/4, 0 (missing), 2/3,
    # 1 (both empty), 1; summed: 12 hits of a union of 15 + 17 - 12 = 20 edges.
    overall = report.row("overall").metrics["edge_jaccard"]
    assert overall.macro.value == pytest.approx((1 + 1 + .25 + .5 + 0 + 2 / 3 + 1 + 1) / 8)
    assert overall.micro.value == pytest.approx(12 / 20)
    assert overall.macro.low <= overall.macro.value <= overall.macro.high
    assert report.definitions["edge_jaccard"] == JACCARD.definition
    assert list(report.row("overall").metrics)[-1] == "edge_jaccard"  # after the others
    hal = report.row("dependency_type", "hallucination").metrics["edge_jaccard"]
    assert hal.macro.value == pytest.approx((2 / 3 + 1) / 2)
    # The floors are scored with it too.
    assert report.floor("recency").row("overall").metrics["edge_jaccard"].macro.value is not None
    md = (tmp_path / "tokengeist.score.md").read_text(encoding="utf-8")
    assert "edge J (macro)" in md and "edge J (micro)" in md
    # The per-span scores read it as an attribute and by name, like the table's own metrics.
    scored = score_spans(submissions[0], load_benchmark(folder))
    assert [s.edge_jaccard for s in scored.scores] == [s.value("edge_jaccard")
                                                        for s in scored.scores]


def test_a_metric_name_is_taken_once(jaccard):
    assert register_metric(JACCARD) is JACCARD  # the same metric again: harmless
    with pytest.raises(ValueError, match="exists already"):
        register_metric(dataclasses.replace(JACCARD))
    with pytest.raises(ValueError, match="not a count column"):
        register_metric(Metric("x", "x", "x", span=lambda c: 0.0,
                               micro=lambda s: s["edge_hits"], only="nothing",
                               counts=("edge_hits",)))
    with pytest.raises(ValueError, match="register the count first"):
        register_metric(Metric("x", "x", "x", span=lambda c: 0.0,
                               micro=lambda s: s["nothing"], counts=("nothing",)))
    assert "x" not in METRICS


def test_the_card_shows_a_metric_with_a_card_title(jaccard, tmp_path):
    # The release stage reads the same table: a metric with a card title gets its own table
    # in the Floors section, for every floor.
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
    block = floors[floors.index("Edge Jaccard:\n"):].split("\n\n")[1].splitlines()
    assert [row.split("|")[1].strip() for row in block[2:]] == ["`recency`", "`first-user`",
                                                                  "`string-match`"]


def test_the_docs_list_every_metric():
    page = (ROOT / "docs" / "scoring.md").read_text(encoding="utf-8")
    table = markdown_table()
    assert table in page, ("docs/scoring.md's table of metrics differs from METRICS; paste:\n"
                           + table)


def test_a_metric_or_count_registered_again_follows_the_registries_one_rule():
    """The same entry again is harmless (a module imported twice); another under a taken
    name is an error, as in mtcabench.registry."""
    import dataclasses

    from mtcabench.results.metrics import COUNTS, METRICS, register_count, register_metric

    name = next(iter(METRICS))
    assert register_metric(METRICS[name]) is METRICS[name]
    count = next(iter(COUNTS))
    assert register_count(COUNTS[count]) is COUNTS[count]
    with pytest.raises(ValueError, match="exists already"):
        register_metric(dataclasses.replace(METRICS[name]))
    with pytest.raises(ValueError, match="exists already"):
        register_count(dataclasses.replace(COUNTS[count]))
