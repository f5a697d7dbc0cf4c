"""The README's main command, end to end on the sample, with its embedded services.

Starts the embedded llama.cpp server and Label Studio, so it is the slowest test (about a
minute); it is what keeps the README's first command true.
"""

from __future__ import annotations

import json

import pytest

from mtcabench.benchmark import load_benchmark
from mtcabench.demo import run_demo
from mtcabench.io import read_records
from mtcabench.model import Candidate, DecisionSource, ReviewDecision

pytestmark = [pytest.mark.slow, pytest.mark.llm_server, pytest.mark.label_studio,
              pytest.mark.model]


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory, monkeypatch_module):
    # No keys or URLs: the demo must use its embedded defaults.
    for var in ("OPENAI_API_KEY", "LABEL_STUDIO_URL", "LABEL_STUDIO_API_KEY"):
        monkeypatch_module.delenv(var, raising=False)
    return run_demo(tmp_path_factory.mktemp("demo"))


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def test_every_stage_wrote_its_files(demo_run):
    for key in ("conversations", "candidates", "reviewed", "release", "submission.tokengeist",
                "submission.flat", "score"):
        assert demo_run.files[key].exists(), key
    candidates = list(read_records(demo_run.files["candidates"], Candidate))
    assert sum(c.status == "ok" for c in candidates) >= 20  # lineage finds 21 on the sample


def test_review_server_was_pushed_to_and_is_closed(demo_run):
    assert demo_run.review is not None
    assert demo_run.review.push.imported + demo_run.review.push.already_present >= 20
    assert demo_run.review.server is None  # the embedded server was stopped at the end


def test_release_says_its_decisions_were_automatic(demo_run):
    decisions = list(read_records(demo_run.files["reviewed"], ReviewDecision))
    assert decisions and all(d.decision_source is DecisionSource.AUTO for d in decisions)
    bench = load_benchmark(demo_run.files["release"])
    assert len(bench.spans) == len(decisions)
    assert all(s.decision_source is DecisionSource.AUTO for s in bench.spans)
    card = (demo_run.files["release"] / "README.md").read_text()
    assert "automatic" in card.lower()


def test_tokengeist_recovers_more_sources_than_flat_on_chained_spans(demo_run):
    # The paper's point on the sample: flat attribution stops at the intermediate turn.
    comparison = json.loads(next(demo_run.files["score"].glob("compare-*.json")).read_text())
    assert comparison["a"]["submission"]["method"] == "tokengeist"
    assert comparison["b"]["submission"]["method"] == "flat"
    rows = {(r["breakdown"], r["group"]): r for r in comparison["rows"]}
    recall = rows[("dependency_type", "chained")]["metrics"]["source_recall"]["macro"]
    assert recall["a"]["value"] > recall["b"]["value"], recall
    assert rows[("overall", "all")]["spans"] == len(load_benchmark(demo_run.files["release"]).spans)
