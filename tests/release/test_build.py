"""release build on the sample's reviewed decisions: folder, card, statistics, rule, reproducibility."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from pathlib import Path

import pyarrow.parquet as pq
import yaml
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.io import write_records
from mtcabench.model import (
    Annotator,
    Candidate,
    DecisionSource,
    Edge,
    ProvenanceGraph,
    Verdict,
)
from mtcabench.benchmark import verify_checksums
from mtcabench.release import SELECTION_RULE, build_release, decide

runner = CliRunner()


def card_header(folder: Path) -> dict:
    text = (folder / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1])


def file_digests(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_cli_build_writes_a_hub_ready_folder(sample_inputs, reviews):
    res = runner.invoke(app, ["release", "build", "--version", "0.1.0",
                              "--reviewed", str(sample_inputs["reviewed"]),
                              "--conversations", str(sample_inputs["conversations"]),
                              "--out", str(sample_inputs["out"])])
    assert res.exit_code == 0, res.output
    folder = sample_inputs["out"] / "0.1.0"
    assert "7 spans in 3 conversations" in res.output
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()) == [
        "CHANGELOG.md", "CHECKSUMS.sha256", "README.md",
        "data/conversations/taubench.parquet", "data/spans/taubench.parquet", "release.json"]
    # Nothing else in the output folder (no temporary folder left over).
    assert [p.name for p in sample_inputs["out"].iterdir()] == ["0.1.0"]
    assert verify_checksums(folder) == []

    header = card_header(folder)
    configs = {c["config_name"]: c for c in header["configs"]}
    assert set(configs) == {"spans", "conversations", "taubench", "taubench-conversations"}
    assert configs["spans"]["default"] is True
    assert configs["spans"]["data_files"] == [{"split": "test", "path": ["data/spans/taubench.parquet"]}]
    infos = {i["config_name"]: i for i in header["dataset_info"]}
    edges = next(f for f in infos["spans"]["features"] if f["name"] == "graph")["struct"][2]
    assert edges["name"] == "edges" and [x["name"] for x in edges["list"]] == [
        "child", "parent", "kind", "score", "evidence"]
    assert infos["spans"]["splits"] == [{"name": "test", "num_bytes": infos["spans"]["splits"][0]["num_bytes"],
                                         "num_examples": 7}]
    assert header["license"] == ["mit"]
    assert header["size_categories"] == ["n<1K"]
    assert header["task_categories"]
    # Some decisions were automatic: the card says so and names the machine as a creator.
    assert "machine-generated" in header["annotations_creators"]
    body = (folder / "README.md").read_text(encoding="utf-8")
    assert "1 of 7 spans (14.3%) were accepted automatically, with no human reviewer" in body
    assert "| hallucination |" in body and "| acceptance rate | 77.8% |" in body
    assert "| edit rate (of released) | 14.3% |" in body
    assert "`" + "a" * 64 + "`" in body  # the prompt hash of the recipe
    assert SELECTION_RULE.splitlines()[0] in body
    assert "First release in this folder: 7 spans in 3 conversations." in (
        folder / "CHANGELOG.md").read_text(encoding="utf-8")


def test_released_spans_follow_the_selection_rule(sample_inputs, reviews):
    built = build_release("0.1.0", sample_inputs["reviewed"], sample_inputs["conversations"],
                          out=sample_inputs["out"])
    convs = reviews.sample_conversations()
    by_words = {s.span.text: s for s in built.spans}
    expected_words = {reviews.SPANS[i][2]: src for i, src in reviews.RELEASED.items()}
    assert {w: s.decision_source.value for w, s in by_words.items()} == expected_words
    # Span 5: rejected by ben, accepted by ana and carla -> released, all three decided.
    assert by_words["HAT227"].reviewers == ["ana@example.org", "ben@example.org",
                                           "carla@example.org"]
    assert by_words["HAT136"].verdict is Verdict.ACCEPT_WITH_EDITS
    assert by_words["HAT136"].depth == 3 and by_words["HAT136"].sources == [7]
    assert by_words["$72"].sources == [3, 5]
    assert by_words["18:25:00"].reviewers == []  # accepted automatically, nobody reviewed it
    # Rows come in a fixed order: conversation, turn, offsets.
    table = pq.read_table(built.folder / "data/spans/taubench.parquet")
    keys = [(r["conversation_id"], r["span"]["turn"], r["span"]["start"]) for r in table.to_pylist()]
    assert keys == sorted(keys)
    manifest = json.loads((built.folder / "release.json").read_text())
    assert manifest["review"]["decisions_by_source"] == {"human": 11, "auto": 3}
    assert manifest["review"]["reviewers"] == 3
    assert manifest["statistics"]["by_dependency_type"] == {
        "direct": 4, "chained": 1, "multi-source": 1, "hallucination": 1}
    assert manifest["statistics"]["by_depth"] == {"2": 6, "3": 1}
    assert manifest["parquet_writer"]["compression"] == "zstd"
    assert manifest["statistics"]["conversations_by_source"] == {"taubench": len(convs)}


def test_decide_rule_cases(reviews):
    convs = reviews.sample_conversations()
    c = convs[reviews.S1]
    args = (c, 4, "4WQ150 and VAAOXJ", reviews.SPANS[0][3], [(4, 3)], [3])
    t = reviews.T0
    auto = reviews.decision(*args, source=DecisionSource.AUTO, at=t)
    ana_no = reviews.decision(*args, verdict=Verdict.REJECT, at=t + timedelta(hours=1))
    ben_yes = reviews.decision(*args, reviewer="ben@example.org", at=t + timedelta(hours=2))
    # A person's rejection overrides an earlier automatic acceptance.
    assert not decide("x", [(1, auto), (2, ana_no)]).released
    # One against one: the latest counted decision settles it.
    out = decide("x", [(1, ana_no), (2, ben_yes)])
    assert out.released and out.chosen is ben_yes and out.split
    # Each voter counts once, with the latest decision (by time, not file order).
    ana_yes_later = reviews.decision(*args, at=t + timedelta(hours=3))
    assert decide("x", [(5, ana_yes_later), (6, ana_no)]).released
    assert decide("x", [(5, ana_yes_later), (6, ana_no)]).counted == [ana_yes_later]
    # Automatic only: released, with decision source auto.
    only_auto = decide("x", [(1, auto)])
    assert only_auto.released and only_auto.chosen.decision_source is DecisionSource.AUTO


def test_build_twice_gives_byte_identical_files(sample_inputs):
    a = build_release("1.0.0", sample_inputs["reviewed"], sample_inputs["conversations"],
                      out=sample_inputs["out"] / "a")
    b = build_release("1.0.0", sample_inputs["reviewed"], sample_inputs["conversations"],
                      out=sample_inputs["out"] / "b")
    first = file_digests(a.folder)
    assert first == file_digests(b.folder)
    c = build_release("1.0.0", sample_inputs["reviewed"], sample_inputs["conversations"],
                      out=sample_inputs["out"] / "a", force=True)
    assert file_digests(c.folder) == first


def test_changelog_against_previous_release(sample_inputs, reviews, tmp_path):
    convs = reviews.sample_conversations()
    decisions = reviews.sample_decisions(convs)
    # 0.1.0: without the s2 conversation's spans; the HAT136 gold before the reviewer's edit.
    first = [d for d in decisions if d.conversation_id != reviews.S2]
    hat = next(d for d in first if d.span.text == "HAT136")
    first[first.index(hat)] = hat.model_copy(update={"graph": ProvenanceGraph(
        target=10, nodes=[6, 7, 10],
        edges=[Edge(child=10, parent=7), *[e for e in hat.graph.edges if e.child == 7]])})
    old_reviewed = tmp_path / "reviewed-0.1.jsonl"
    write_records(old_reviewed, first)
    out = sample_inputs["out"]
    build_release("0.1.0", old_reviewed, sample_inputs["conversations"], out=out)
    build_release("0.10.0", sample_inputs["reviewed"], sample_inputs["conversations"], out=out)
    built = build_release("0.9.0", sample_inputs["reviewed"], sample_inputs["conversations"],
                          out=out)
    # 0.9.0 compares with 0.1.0 (highest below it), not with 0.10.0.
    assert built.manifest.previous_version == "0.1.0"
    log = (built.folder / "CHANGELOG.md").read_text(encoding="utf-8")
    s2 = reviews.S2
    assert "- spans added: 2" in log and f"- `{s2}#6:7-13`" in log
    assert "- conversations added: 1" in log and f"- `{s2}`" in log
    assert f"`{hat.id}`: edges +[8->7, 10->8] -[10->7]; nodes [6, 7, 10] -> [6, 7, 8, 10]" in log
    assert log.index("## 0.9.0") < log.index("## 0.1.0")  # the earlier history follows


def test_candidates_feed_the_recipe(sample_inputs, reviews, tmp_path):
    convs = reviews.sample_conversations()
    proposer = Annotator(name="llm", model="SmolLM2-135M-Instruct", prompt_version="propose-v1",
                         prompt_hash="b" * 64)
    cands = [Candidate(id=d.id, conversation_id=d.conversation_id, span=d.span,
                       dependency_type=d.dependency_type, graph=d.graph,
                       annotator=reviews.ANNOTATOR, proposal_annotator=proposer)
             for d in reviews.sample_decisions(convs)]
    cands.append(Candidate(id="rejected-1", conversation_id=reviews.S1, annotator=reviews.ANNOTATOR,
                           status="rejected", proposal_annotator=proposer))
    path = tmp_path / "candidates.jsonl"
    write_records(path, {c.id: c for c in cands}.values())
    built = build_release("0.1.0", sample_inputs["reviewed"], sample_inputs["conversations"],
                          out=sample_inputs["out"], candidates=path)
    rc = built.manifest.recipe["candidates"]
    assert rc["total"] == 10 and rc["rejected_by_checks"] == 1
    assert rc["proposers"] == [{"name": "llm", "model": "SmolLM2-135M-Instruct",
                                "prompt_version": "propose-v1", "prompt_hash": "b" * 64,
                                "count": 10}]
    body = (built.folder / "README.md").read_text(encoding="utf-8")
    assert "Candidates: 10 produced, 9 passed the deterministic checks, 1 were rejected" in body
    assert "`" + "b" * 64 + "`" in body
