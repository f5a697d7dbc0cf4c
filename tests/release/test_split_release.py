"""release build --split-by-task and --max-spans-per-conversation on the sample, made two
domains: splits by task (no task on two sides), a config per domain and `all`, each loading
with `datasets.load_dataset`, the cap drawn the same every time and stated on the card."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import datasets
import pytest
import yaml
from typer.testing import CliRunner

from mtcabench.benchmark import check_release, split_of, write_checksums
from mtcabench.cli import app
from mtcabench.io import write_records
from mtcabench.release import load_release

runner = CliRunner()
#: The sample's conversations keep their ids (tasks s1, s2: train; s3: test); a copy of each,
#: in a domain of its own, takes a numeric task: 5 (dev), 6 (test), 7 (train).
RETAIL = {"taubench/airline/sample/task-s1/trial-0": "taubench/retail/sample/task-5/trial-0",
          "taubench/airline/sample/task-s2/trial-0": "taubench/retail/sample/task-6/trial-0",
          "taubench/airline/sample/task-s3/trial-0": "taubench/retail/sample/task-7/trial-0"}


@pytest.fixture()
def two_domains(tmp_path: Path, reviews) -> dict[str, Path]:
    convs = reviews.sample_conversations()
    decisions = reviews.sample_decisions(convs)
    more_convs = [c.model_copy(update={"id": RETAIL[c.id], "domain": "retail"})
                  for c in convs.values()]
    more = [d.model_copy(update={"id": d.id.replace(d.conversation_id,
                                                    RETAIL[d.conversation_id]),
                                 "conversation_id": RETAIL[d.conversation_id]})
            for d in decisions]
    conv_path, rev_path = tmp_path / "conversations.jsonl", tmp_path / "reviewed.jsonl"
    write_records(conv_path, [*convs.values(), *more_convs])
    write_records(rev_path, [*decisions, *more])
    return {"conversations": conv_path, "reviewed": rev_path, "out": tmp_path / "release"}


def build(inputs: dict[str, Path], version: str, *extra: str) -> Path:
    res = runner.invoke(app, ["release", "build", "--version", version, "--reviewed",
                              str(inputs["reviewed"]), "--conversations",
                              str(inputs["conversations"]), "--out", str(inputs["out"]), *extra])
    assert res.exit_code == 0, res.output
    return inputs["out"] / version


def card_configs(folder: Path) -> dict[str, dict]:
    header = yaml.safe_load((folder / "README.md").read_text(encoding="utf-8").split("---\n")[1])
    return {c["config_name"]: c for c in header["configs"]}


def test_split_by_task_gives_splits_and_a_config_per_domain(two_domains):
    folder = build(two_domains, "2.0.0", "--split-by-task")
    manifest, problems = check_release(folder)
    assert problems == [] and manifest is not None
    configs = card_configs(folder)
    assert set(configs) == {"spans", "conversations", "all", "airline", "airline-conversations",
                            "retail", "retail-conversations", "taubench",
                            "taubench-conversations"}
    assert configs["retail"]["data_files"] == [
        {"split": "train", "path": ["data/spans/taubench/retail-train.parquet"]},
        {"split": "dev", "path": ["data/spans/taubench/retail-dev.parquet"]},
        {"split": "test", "path": ["data/spans/taubench/retail-test.parquet"]}]
    assert [d["split"] for d in configs["airline"]["data_files"]] == ["train", "test"]
    # every config and split loads with `datasets`, each row in its task's split only
    total = {}
    for name, config in configs.items():
        for entry in config["data_files"]:
            rows = datasets.load_dataset(str(folder), name, split=entry["split"])
            ids = rows["id" if name.endswith("conversations") else "conversation_id"]
            assert {split_of(i) for i in ids} == {entry["split"]}, (name, entry["split"])
            total[name] = total.get(name, 0) + len(rows)
    assert total["all"] == total["spans"] == total["airline"] + total["retail"] == 14
    assert total["conversations"] == 6
    assert {c.name: c.rows for c in manifest.configs}["retail"] == 7
    # the loader of mtcabench reads every split
    assert len(load_release(folder).spans) == 14
    st = manifest.statistics
    assert st["splits"]["retail"] == {"train": {"tasks": 1, "conversations": 1, "spans": 1},
                                      "dev": {"tasks": 1, "conversations": 1, "spans": 4},
                                      "test": {"tasks": 1, "conversations": 1, "spans": 2}}
    # the real runs with a span, per domain (here every conversation: no counterfactual)
    assert st["real_conversations"] == {"airline": 3, "retail": 3}
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert "Split by task: all the runs of one task" in card
    assert ("The conversations are those with a released span: **6 real runs** (airline 3, "
            "retail 3) and 0 counterfactual copies of them.") in card
    assert "Each config has one split" not in card
    assert "| retail | `sample` |" in card  # spans by domain x agent x type


def test_the_card_counts_spans_past_the_context_when_asked(two_domains, loaded):
    # `loaded`: the default model's files are on this machine (its tokenizer counts).
    folder = build(two_domains, "2.0.0", "--split-by-task", "--count-context")
    ctx = json.loads((folder / "release.json").read_text())["statistics"]["context"]
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert "### Spans past the model's context" in card
    # The sample is short: no span passes 8,192 tokens.
    assert ctx["computed"] and ctx["limit"] == 8192
    assert ctx["by_domain"] == {"taubench/airline": {"spans": 7, "past": 0},
                                "taubench/retail": {"spans": 7, "past": 0}}
    assert "| taubench/retail | 7 | 0 | 0.0% |" in card


def test_the_context_is_counted_only_when_asked_and_refused_when_it_cannot_be(
        two_domains, monkeypatch, tmp_path):
    # Not asked: no count and no section, whatever is installed here (the same files on every
    # machine that builds this release).
    folder = build(two_domains, "2.0.0", "--split-by-task")
    assert "context" not in json.loads((folder / "release.json").read_text())["statistics"]
    assert "Spans past the model's context" not in (folder / "README.md").read_text()
    # Asked where the model's files are not: one line saying why, and nothing written.
    monkeypatch.setenv("MTCABENCH_MODEL_CACHE", str(tmp_path / "no-models"))
    out = tmp_path / "bare"
    res = runner.invoke(app, ["release", "build", "--version", "2.0.0", "--reviewed",
                              str(two_domains["reviewed"]), "--conversations",
                              str(two_domains["conversations"]), "--out", str(out),
                              "--split-by-task", "--count-context"])
    assert res.exit_code == 3, res.output
    assert "--count-context: the default model's files are not on this machine" in res.output
    assert not (out / "2.0.0").exists()


def test_without_the_option_a_release_keeps_one_split(two_domains):
    folder = build(two_domains, "1.9.0")
    assert set(card_configs(folder)) == {"spans", "conversations", "taubench",
                                         "taubench-conversations"}
    text = (folder / "release.json").read_text()
    assert '"splits"' not in text and "Each config has one split, `test`." in (
        folder / "README.md").read_text()


def test_the_cap_draws_the_same_spans_every_time_and_is_stated(two_domains, tmp_path):
    folder = build(two_domains, "2.0.0", "--split-by-task", "--max-spans-per-conversation", "1")
    spans = load_release(folder).spans
    assert len(spans) == 6 and len({s.conversation_id for s in spans}) == 6
    cap = json.loads((folder / "release.json").read_text())["statistics"]["cap"]
    assert cap == {"max_spans_per_conversation": 1, "seed": 0, "removed": 8,
                   "removed_by_domain": {"airline": 4, "retail": 4},
                   "conversations_capped_by_domain": {"airline": 2, "retail": 2}}
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert "At most **1 spans per conversation**" in card and "| retail | 2 | 4 |" in card
    again = build({**two_domains, "out": tmp_path / "again"}, "2.0.0", "--split-by-task",
                  "--max-spans-per-conversation", "1")

    def digests(f: Path) -> dict[str, str]:
        return {p.relative_to(f).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(f.rglob("*")) if p.is_file()}

    assert digests(again) == digests(folder)
    other = build({**two_domains, "out": tmp_path / "seed"}, "2.0.0",
                  "--max-spans-per-conversation", "1", "--cap-seed", "3")
    assert {s.id for s in load_release(other).spans} != {s.id for s in spans}


def test_a_cap_below_one_is_refused(two_domains):
    res = runner.invoke(app, ["release", "build", "-v", "2.0.0", "-r",
                              str(two_domains["reviewed"]), "-c",
                              str(two_domains["conversations"]), "-o", str(two_domains["out"]),
                              "--max-spans-per-conversation", "0"])
    assert res.exit_code != 0 and "--max-spans-per-conversation" in res.output
    assert not two_domains["out"].exists()


def test_a_domain_that_cannot_name_a_config_is_refused(two_domains):
    path = two_domains["conversations"]
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    for x in lines:
        if x["domain"] == "retail":
            x["domain"] = "all"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    res = runner.invoke(app, ["release", "build", "-v", "2.0.0", "-r",
                              str(two_domains["reviewed"]), "-c", str(path), "-o",
                              str(two_domains["out"]), "--split-by-task"])
    assert res.exit_code == 5, res.output
    # the name rule refuses it where the conversation is read (any layout), naming the line
    assert "taubench/retail/sample/task-5/trial-0 (" in res.output
    assert "[record-schema] domain: the domain 'all' is the name of a config" in res.output
    assert not two_domains["out"].exists()


def test_verify_refuses_a_card_whose_splits_name_other_files(two_domains):
    folder = build(two_domains, "2.0.0", "--split-by-task")
    card = folder / "README.md"
    text = card.read_text(encoding="utf-8")
    # the dev file of retail named as a dev file of another name in every config holding it
    card.write_text(text.replace("- data/spans/taubench/retail-dev.parquet",
                                 "- data/spans/taubench/retail-dev2.parquet"), encoding="utf-8")
    write_checksums(folder)
    _, problems = check_release(folder)
    retail = [p for p in problems if "config 'retail' names" in p]
    assert len(problems) == 4 and len(retail) == 1
    assert "dev: data/spans/taubench/retail-dev2.parquet" in retail[0]
    assert "dev: data/spans/taubench/retail-dev.parquet" in retail[0]


def test_hallucinations_by_rule_read_the_hand_check_of_any_rules_version(monkeypatch):
    """A later rules version's hand-check file (lineage-v4's, say) is read as lineage-v3's:
    per rule the checked, the correct, the share and its Wilson interval; a checked span's
    rule is its own ``rule`` there, else its candidate's rationale's head."""
    from types import SimpleNamespace

    from mtcabench import resources
    from mtcabench.release._card import hallucination_rules, wilson
    from mtcabench.release._splits import _handchecked

    check = {"data": "tau2-bench retail", "spans": [
        {"id": "a", "dependency_type": "hallucination", "rule": "record claim",
         "verdict": "correct"},
        {"id": "b", "dependency_type": "hallucination", "verdict": "edge-error"},
        {"id": "c", "dependency_type": "direct", "verdict": "correct"}]}
    monkeypatch.setattr(resources, "lineage_handcheck",
                        lambda v: check if v.split("+")[0] == "lineage-v9" else None)
    spans = [SimpleNamespace(annotator=SimpleNamespace(rules_version="lineage-v9+retail"))]
    rules = _handchecked({"record claim": {"spans": 3, "by_domain": {"retail": 3},
                                           "origin": "real"}},
                         spans, {"b": SimpleNamespace(rationale="contradiction: 'x' where")})
    assert rules["record claim"]["handcheck"] == {"lineage-v9": {
        "checked": 1, "correct": 1, "data": "tau2-bench retail", "share": 1.0,
        "wilson": list(wilson(1, 1))}}
    assert rules["contradiction"]["spans"] == 0
    assert rules["contradiction"]["handcheck"]["lineage-v9"]["correct"] == 0
    card = "\n".join(hallucination_rules(rules))
    assert "| record claim | real | 3 | retail 3 | `lineage-v9` | 1/1 | 100.0% | 20.7%-100.0% |" \
        in card
    assert "- `lineage-v9` was checked on: tau2-bench retail" in card
