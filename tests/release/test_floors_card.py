"""The card's Floors section: the model-free floors on the released spans, and evaluator rows
from `mtcabench score` reports (`release build --scores`)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from typer.testing import CliRunner

from mtcabench.baselines import FLOORS
from mtcabench.cli import app
from mtcabench.model import DependencyType
from mtcabench.release import build_release
from mtcabench.scoring import floor_reports, run_scoring
from mtcabench.benchmark import load_benchmark

runner = CliRunner()
TYPES = [t.value for t in DependencyType]


def section(folder: Path) -> str:
    card = (folder / "README.md").read_text(encoding="utf-8")
    return card[card.index("## Floors"):card.index("## Configurations")]


def table(text: str, title: str) -> dict[str, list[str]]:
    """Rows of one Floors table (``Edge F1:`` or ``Source recall:``) by method cell."""
    block = text[text.index(f"{title}:\n"):].split("\n\n")[1]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in block.splitlines()]
    return {r[0]: r[1:] for r in rows[2:]}


def digests(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def build(sample_inputs, out: Path, *extra: str):
    res = runner.invoke(app, ["release", "build", "--version", "0.1.0",
                              "--reviewed", str(sample_inputs["reviewed"]),
                              "--conversations", str(sample_inputs["conversations"]),
                              "--out", str(out), *extra])
    return res


def test_card_floors_match_the_scorer_on_the_released_spans(sample_inputs):
    built = build_release("0.1.0", sample_inputs["reviewed"], sample_inputs["conversations"],
                          out=sample_inputs["out"])
    text = section(built.folder)
    assert "No evaluator scores were given" in text
    # The command that writes the floors as submissions names every floor of the registry.
    assert ("`mtcabench trace --method recency --method first-user --method string-match`"
            in " ".join(text.split()))
    assert list(FLOORS) == ["recency", "first-user", "string-match"]
    header = text[text.index("Edge F1:\n"):].split("\n\n")[1].splitlines()[0]
    assert "overall (7)" in header and "direct (4)" in header and "hallucination (1)" in header
    # The numbers are what `mtcabench score` computes for the floors on this release.
    floors = {f.method: f for f in floor_reports(load_benchmark(built.folder), resamples=0)}
    for title, metric in (("Edge F1", "edge_f1"), ("Source recall", "source_recall")):
        rows = table(text, title)
        assert set(rows) == {"`recency`", "`first-user`", "`string-match`"}
        for name, floor in floors.items():
            kind, empty, *values = rows[f"`{name}`"]
            assert kind == "model-free floor" and empty == "0"
            expected = [floor.row("overall").metrics[metric].macro.value] + [
                floor.row("dependency_type", t).metrics[metric].macro.value for t in TYPES]
            assert values == [f"{v:.3f}" for v in expected]
    # By hand: recency finds every span's tool result on the sample's gold (0.929 source
    # recall: the multi-source span's second source is missed); first-user's turn 1 is no gold
    # source of these spans.
    assert table(text, "Source recall")["`recency`"][2] == f"{6.5 / 7:.3f}"
    assert table(text, "Edge F1")["`first-user`"][2:] == ["0.000"] * 5


def test_card_with_score_reports(sample_inputs, tmp_path):
    out = sample_inputs["out"]
    built = build_release("0.1.0", sample_inputs["reviewed"], sample_inputs["conversations"],
                          out=out)
    # A submission on the release: the gold itself for the first spans, nothing for the last.
    lines = [{"kind": "submission", "method": "tokengeist", "scorer": "avg-attention",
              "model": "smollm2-135m-instruct", "parameters": {"top_k": 3, "alpha": 0.5}}]
    for s in built.spans[:5]:
        lines.append({"span_id": s.id, "edges": [{"child": e.child, "parent": e.parent}
                                                 for e in s.graph.edges]})
    sub = tmp_path / "tokengeist.jsonl"
    sub.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    report = run_scoring([sub], built.folder, out=tmp_path / "score", resamples=50,
                         plot=False).reports[0]
    path = tmp_path / "score" / "tokengeist.score.json"

    res = build(sample_inputs, out, "--force", "--scores", str(path))
    assert res.exit_code == 0, res.output
    text = section(out / "0.1.0")
    assert "No evaluator scores were given" not in text
    label = "`tokengeist` / `avg-attention` on `smollm2-135m-instruct`"
    for title, metric in (("Edge F1", "edge_f1"), ("Source recall", "source_recall")):
        kind, empty, *values = table(text, title)[label]
        assert kind == "evaluator" and empty == "2"  # two spans missing, scored empty
        assert values[0] == f"{report.row('overall').metrics[metric].macro.value:.3f}"
        assert values[0] == f"{5 / 7:.3f}"  # exact on 5 of 7 spans, empty on 2
    assert f"- {label}: `{{\"alpha\": 0.5, \"top_k\": 3}}`" in text
    # Two builds with the same inputs and report: byte-identical.
    first = digests(out / "0.1.0")
    again = build(sample_inputs, tmp_path / "again", "--scores", str(path))
    assert again.exit_code == 0, again.output
    assert digests(tmp_path / "again" / "0.1.0") == first


def test_score_reports_that_are_not_this_release_are_refused(sample_inputs, tmp_path, reviews):
    out = sample_inputs["out"]
    built = build_release("0.1.0", sample_inputs["reviewed"], sample_inputs["conversations"],
                          out=out)
    # A report of a benchmark holding only some of the spans.
    small = tmp_path / "small"
    small.mkdir()
    from mtcabench.io import write_records

    write_records(small / "conversations.jsonl", reviews.sample_conversations().values())
    write_records(small / "spans.jsonl", built.spans[:3])
    sub = tmp_path / "flat.jsonl"
    sub.write_text(json.dumps({"kind": "submission", "method": "flat"}) + "\n", encoding="utf-8")
    run_scoring([sub], small, out=tmp_path / "score", resamples=0, plot=False)
    mismatched = tmp_path / "score" / "flat.score.json"
    not_a_report = tmp_path / "release.json"  # a JSON record of another kind
    not_a_report.write_bytes((out / "0.1.0" / "release.json").read_bytes())
    before = digests(out / "0.1.0")
    res = build(sample_inputs, out, "--force", "--scores", str(mismatched),
                "--scores", str(not_a_report))
    assert res.exit_code == 5, res.output
    assert re.search(r"flat\.score\.json: \[score-report\] the report scores 3 spans", res.output)
    assert "this release has 7" in res.output
    assert "release.json: [score-report] not a score report" in res.output
    assert digests(out / "0.1.0") == before  # refused: the old release is untouched
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    res = build(sample_inputs, out, "--force", "--scores", str(broken))
    assert res.exit_code == 3 and "broken.json" in res.output
