"""A release built from the 200 real TauBench airline runs with lineage-v2: all four types.

The pipeline of the README, command by command (ingest -> annotate lineage -> review
auto-accept -> release build), on the real file that tests/conftest.py finds (never copied
into the repository). Checked: spans of every dependency type, the counts of the card and the
manifest against the annotator's own summary, and the card's statement of the rules the
spans carry with their hand-checked precision per type.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.io import read_records
from mtcabench.model import Candidate

runner = CliRunner()

#: What lineage-v2 proposes on the 200 runs (tests/lineage/test_taubench.py pins the same).
BY_TYPE = {"direct": 3227, "chained": 771, "multi-source": 103, "hallucination": 4}


def invoke(*args):
    res = runner.invoke(app, [str(a) for a in args])
    assert res.exit_code == 0, res.output
    return res


@pytest.fixture(scope="module")
def real_release(taubench_release):
    return taubench_release  # built by tests/conftest.py, shared with tests/scoring


def test_the_release_has_spans_of_all_four_types(real_release):
    d, folder = real_release
    manifest = json.loads((folder / "release.json").read_text())
    by_type = manifest["statistics"]["by_dependency_type"]
    assert by_type == BY_TYPE and all(n > 0 for n in by_type.values())
    assert by_type == json.loads((d / "s.json").read_text())["by_type"]
    lineage = [a for a in manifest["recipe"]["annotators"] if a["name"] == "lineage"]
    assert lineage == [{"name": "lineage", "rules_version": "lineage-v2", "count": 4105}]
    assert {c.annotator.rules_version for c in read_records(d / "candidates.jsonl", Candidate)} \
        == {"lineage-v2"}
    invoke("release", "verify", folder)


def test_the_card_states_the_rules_and_the_hand_checked_precision(real_release):
    _, folder = real_release
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert "| multi-source | combines two or more independent sources | 103 | 103 | 2.5% |" in card
    assert "| hallucination | unsupported or wrong; the graph holds the turns that primed it " \
           "| 4 | 4 | 0.1% |" in card
    section = card[card.index("## Lineage rules `lineage-v2`"):card.index("## Sources")]
    assert "4105 released spans were proposed by the lineage annotator" in section
    assert "**Edge rule.** A copied value links to the latest earlier turn that carries it" \
        in section
    assert "handcheck-lineage-v2.json" in section
    # dependency type | spans in this release | hand-checked | correct | precision | type
    assert "| direct | 3227 | 26 | 26 | 100.0% | 100.0% |" in section
    assert "| chained | 771 | 6 | 6 | 100.0% | 100.0% |" in section
    assert "| multi-source | 103 | 32 | 30 | 93.8% | 100.0% |" in section
    assert "| hallucination | 4 | 4 | 4 | 100.0% | 100.0% |" in section


def _manifest(rules_version: str):
    from types import SimpleNamespace

    return SimpleNamespace(
        recipe={"annotators": [{"name": "lineage", "rules_version": rules_version, "count": 3},
                               {"name": "llm", "model": "m", "count": 2}]},
        statistics={"by_dependency_type": {"direct": 3, "chained": 0, "multi-source": 2,
                                           "hallucination": 0}})


def test_the_lineage_section_names_other_settings_and_unknown_rules():
    from mtcabench.release._card import lineage_section

    text = "\n".join(lineage_section(_manifest("lineage-v2+1a2b3c4d")))
    assert "## Lineage rules `lineage-v2+1a2b3c4d`" in text
    assert "the rules `lineage-v2` with other settings" in text
    assert "**Edge rule.**" in text and "| multi-source | 2 | 32 | 30 | 93.8% |" in text
    v1 = "\n".join(lineage_section(_manifest("lineage-v1")))
    assert "Rules\n`lineage-v1` (kept to reproduce earlier releases)" in v1
    assert "The rules `lineage-v1` have no hand-checked sample." in v1
    unknown = "\n".join(lineage_section(_manifest("lineage-v9")))
    assert "No statement of the rules `lineage-v9` ships" in unknown
    assert lineage_section(_manifest("")) == []
