"""Issue 48 at release build and publish: a task id of any length splits, names and credentials
from the data are refused in every column (keys and header pairs too), the cap's seed is a
seed, a span keeps its conversation's domain, model files are checked before --count-context
believes them, and names from the data are text in the card."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtcabench.benchmark import load_benchmark, split_of
from mtcabench.cli import app
from mtcabench.errors import ExitCode, InputError
from mtcabench.release import build_release, plan_publish

runner = CliRunner()
KEY = "sk-proj-" + "Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7" * 2


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def build_args(inputs, *extra):
    return ["release", "build", "--version", "2.0.0", "--reviewed", inputs["reviewed"],
            "--conversations", inputs["conversations"], "--out", inputs["out"], *extra]


def renamed(inputs, reviews, new_id: str) -> None:
    """Give the sample's conversation S1 (and its spans) the id ``new_id``, in both files."""
    for key in ("conversations", "reviewed"):
        path = inputs[key]
        path.write_text(path.read_text().replace(reviews.S1, new_id))


def with_metadata(inputs, reviews, metadata: dict) -> None:
    path = inputs["conversations"]
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    for x in lines:
        if x["id"] == reviews.S1:
            x["metadata"] = {**x.get("metadata", {}), **metadata}
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_a_task_id_of_5000_digits_is_split_and_released(sample_inputs, reviews):
    task = "7" * 4999 + "3"
    renamed(sample_inputs, reviews, f"taubench/airline/sample/task-{task}/trial-{'0' * 30}1")
    res = invoke(*build_args(sample_inputs, "--split-by-task"))
    assert res.exit_code == 0, res.output
    assert split_of(f"x/task-{task}/trial-0") == "train"  # 3 mod 5: its last digit's bucket
    assert split_of(f"x/task-{task[:-1]}6/trial-0") == "test"  # 6 mod 5 = 1
    assert split_of(f"x/task-{task[:-1]}5/trial-{'9' * 5000}") is None  # a dev trial unused


@pytest.mark.parametrize("new_id", [
    "taubench/airline/http://admin:SECRET@host:8000/v1/task-s1/trial-0",
])
def test_a_credential_in_an_id_is_refused_in_every_column(sample_inputs, reviews, new_id):
    renamed(sample_inputs, reviews, new_id)
    res = invoke(*build_args(sample_inputs))
    assert res.exit_code == ExitCode.INVALID, res.output
    assert "SECRET" not in res.output
    assert "[no-credentials] id looks like a credential" in res.output  # the conversation
    assert "conversation_id, id look like a credential" in res.output  # its spans
    assert not sample_inputs["out"].exists()


@pytest.mark.parametrize("metadata, field", [
    ({"expected_actions": [{"name": "set", "arguments": {KEY: "on"}}]},
     "metadata.expected_actions[0].arguments.<key 0>"),
    ({"info": {"llm_args": {"headers": [["x-api-key", "abcd1234efgh5678"]]}}},
     "metadata.info.llm_args.headers[0][1]"),
    ({"info": {"base_url": "http://admin:hunter2hunter2@host:8000/v1"}}, "metadata.info.base_url"),
])
def test_a_credential_as_a_key_or_in_a_header_pair_is_refused(sample_inputs, reviews, metadata,
                                                              field):
    with_metadata(sample_inputs, reviews, metadata)
    res = invoke(*build_args(sample_inputs))
    assert res.exit_code == ExitCode.INVALID, res.output
    out = " ".join(res.output.split())
    assert f"{reviews.S1}: [no-credentials] {field} looks like a credential" in out, out
    assert KEY not in res.output and "abcd1234" not in res.output and "hunter2" not in out


def test_publish_reads_keys_too(sample_inputs, reviews, monkeypatch):
    # A folder built before the check (here: the check bypassed) still holds the key.
    import mtcabench.release._build as build_module

    monkeypatch.setattr(build_module, "credential_violations", lambda records: [])
    with_metadata(sample_inputs, reviews, {"expected_actions": [{"arguments": {KEY: 1}}]})
    built = build_release("1.0.0", sample_inputs["reviewed"], sample_inputs["conversations"],
                          out=sample_inputs["out"])
    with pytest.raises(InputError, match=re.escape("arguments.<key 0> looks like a credential")):
        plan_publish(built.folder, "o/n")


@pytest.mark.parametrize("seed", ["-1", str(2**64), str(2**32)])
def test_the_cap_seed_is_a_seed(sample_inputs, seed):
    res = invoke(*build_args(sample_inputs, "--max-spans-per-conversation", "1",
                             "--cap-seed", seed))
    assert res.exit_code == ExitCode.BAD_INPUT, res.output
    assert "--cap-seed: seed must be 0 or more (a whole number, at most 4294967295)" in res.output
    assert "Traceback" not in res.output and not sample_inputs["out"].exists()


def test_a_span_of_another_domain_than_its_conversation_is_refused(sample_benchmark, tmp_path):
    folder = tmp_path / "bench"
    shutil.copytree(sample_benchmark, folder)
    spans = folder / "spans.jsonl"
    lines = [json.loads(x) for x in spans.read_text().splitlines()]
    lines[0]["domain"] = "retail"
    spans.write_text("".join(json.dumps(x) + "\n" for x in lines))
    with pytest.raises(InputError, match=r"domain 'retail', but its conversation .* is of "
                                         r"domain 'airline'"):
        load_benchmark(folder)


def _model_cache(tmp_path: Path, config: dict, tokenizer: dict) -> Path:
    folder = tmp_path / "models" / "smollm2-135m-instruct"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "tokenizer.json").write_text(json.dumps(tokenizer))
    return tmp_path / "models"


TOKENIZER = {"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": []},
             "added_tokens": []}


@pytest.mark.parametrize("config, tokenizer, says", [
    ({"max_position_embeddings": -5}, TOKENIZER, "max_position_embeddings is -5, not a number "
                                                 "of tokens from 1"),
    ({"max_position_embeddings": 0}, TOKENIZER, "max_position_embeddings is 0"),
    ({"max_position_embeddings": "8k"}, TOKENIZER, "max_position_embeddings is '8k'"),
    ({"max_position_embeddings": 8192}, {"model": {"vocab": {"a": 0}}},
     "added_tokens is not a list"),
    ({"max_position_embeddings": 8192}, {"added_tokens": []}, "no model.vocab"),
    ({"max_position_embeddings": 8192}, {**TOKENIZER, "model": {"type": "NoSuchModel",
                                                                "vocab": {"a": 0}}},
     "the tokenizer does not load"),
])
def test_count_context_checks_the_model_files_first(sample_inputs, tmp_path, monkeypatch,
                                                    config, tokenizer, says):
    pytest.importorskip("transformers")
    monkeypatch.setenv("MTCABENCH_MODEL_CACHE", str(_model_cache(tmp_path, config, tokenizer)))
    res = invoke(*build_args(sample_inputs, "--count-context"))
    assert res.exit_code == ExitCode.BAD_INPUT, res.output
    errors = [x for x in res.output.splitlines() if x.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in res.output, res.output
    assert errors[0].startswith("error: --count-context: ") and says in errors[0], errors[0]
    assert not sample_inputs["out"].exists()


def test_markup_from_the_data_is_text_in_the_card(sample_inputs, reviews):
    hostile = '<img src=x onerror="alert(1)"> a|b <script>x</script>'
    path = sample_inputs["reviewed"]
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    for x in lines:
        if x.get("annotator"):
            x["annotator"]["model"] = hostile
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    for extra in ((), ("--split-by-task",)):
        built = build_release("2.0.0", path, sample_inputs["conversations"],
                              out=sample_inputs["out"], split_by_task=bool(extra), force=True)
        card = (built.folder / "README.md").read_text(encoding="utf-8")
        assert "<img" not in card and "<script>" not in card
        row = next(x for x in card.splitlines() if "&lt;img" in x)
        assert "a\\|b" in row and len(re.split(r"(?<!\\)\|", row)) == 7  # 5 cells, not 6
