"""Every real run (issue 45): the 31 runs files of the shared copy (3 TauBench, 28
tau2-bench in three layouts) ingest with the commands docs/ingest.md gives: 1,557
conversations, five domains, 17 agent model names; no run setting, provider output or
placeholder of the removed key in any record; a malformed real file of each later layout is
one line naming the file, the run and the message."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode
from mtcabench.io import read_records
from mtcabench.model import METADATA_KEYS, Conversation, Role

from tests.support.paths import every_real_runs_file

pytestmark = pytest.mark.real_runs
runner = CliRunner()

#: The two bare lists record no model and no agent; their upstream names give both (and the
#: medical one's domain, which its policy, medical_triage's, does not).
BARE = {"airline-claude-opus-4-6-adaptive.json": [],
        "medical-claude-opus-4-6-adaptive.json": ["--domain", "medical"]}
#: What no record may hold: run settings (llm_args, the provider's base_url and the key's
#: placeholder), provider output (raw_data and what it holds, usage, costs), speech fields.
NEVER = ("[removed]", "api_key", "llm_args", "base_url", "tokenfactory", "raw_data",
         "prompt_tokens", "completion_tokens", "agent_cost", "user_cost", "audio_path",
         "is_audio", "git_commit", "speech_environment", "pass_rate")


@pytest.fixture(scope="module")
def files() -> list[Path]:
    found = every_real_runs_file()
    if found is None:
        pytest.fail("the 31 real runs files are needed: `mtcabench raw fetch --from "
                    "../shared/raw` (or set MTCABENCH_RAW to a folder holding tau-bench/ and "
                    "tau2-bench/)")
    return found


def _ingest(*args: object) -> str:
    res = runner.invoke(app, ["ingest", *map(str, args)])
    assert res.exit_code == 0, res.output
    return " ".join(res.output.split())


@pytest.fixture(scope="module")
def ingested(files, tmp_path_factory) -> tuple[list[Conversation], str, str]:
    """(every conversation, the text of every output file, what the commands said)."""
    d = tmp_path_factory.mktemp("every-run")
    taubench = [f for f in files if f.parent.name in ("tau-bench", "taubench")]
    tau2 = [f for f in files if f not in taubench and f.name not in BARE]
    said = _ingest("taubench", *taubench, "--out", d / "taubench.jsonl")
    said += _ingest("tau2", *tau2, "--out", d / "tau2.jsonl")
    outs = [d / "taubench.jsonl", d / "tau2.jsonl"]
    for name, flags in BARE.items():
        (path,) = [f for f in files if f.name == name]
        outs.append(d / f"{path.stem}.jsonl")
        said += _ingest("tau2", path, "--agent-model", "claude-opus-4-6",
                        "--agent-implementation", "adaptive-agent", *flags, "--out", outs[-1])
    convs = [c for out in outs for c in read_records(out, Conversation)]
    return convs, "".join(out.read_text() for out in outs), said


def test_all_31_files_give_1557_conversations_five_domains_and_17_agent_models(files, ingested):
    convs, _, _ = ingested
    assert len(files) == 31
    assert len(convs) == 1557 and len({c.id for c in convs}) == 1557
    assert Counter(c.domain for c in convs) == {
        "airline": 819, "retail": 424, "telecom": 180, "medical_triage": 70, "medical": 64}
    models = {c.agent_model for c in convs}
    assert len(models) == 17 and {"grok-3", "gpt-4.1-mini", "ollama_chat/qwen2.5:7b",
                                  "openai/gpt-oss-120b", "azure/gpt-4o-2024-11-20"} <= models
    assert Counter(c.source for c in convs) == {"taubench": 430, "tau2": 1127}


def test_the_retail_taubench_runs_are_retail_by_their_policy_with_the_name_s_model_reported(
        ingested):
    convs, _, said = ingested
    retail = Counter(c.agent_model for c in convs if c.source == "taubench"
                     and c.domain == "retail")
    assert retail == {"grok-3": 115, "gpt-4.1-mini": 115}
    for name, model in (("retail-grok-3.json", "grok-3"),
                        ("retail-gpt-4.1-mini.json", "gpt-4.1-mini"),
                        ("gpt-4o-airline.json", "gpt-4o")):
        assert f"{name}: agent model '{model}' taken from the file name" in said
    assert "domain 'retail' taken from the file name" not in said
    assert "medical-claude-opus-4-6-adaptive.json: domain 'medical' as given by --domain; the " \
           "runs' policy names 'medical_triage'" in said


def test_no_run_setting_provider_output_or_removed_key_placeholder_reaches_a_record(ingested):
    convs, text, _ = ingested
    for never in NEVER:
        assert never not in text, never
    for c in convs:
        assert set(c.metadata) <= set(METADATA_KEYS), c.id


def test_the_error_runs_are_read_and_marked(ingested):
    convs, _, _ = ingested
    unscored = [c for c in convs if c.metadata.get("unscored")]
    assert sorted(c.id for c in unscored) == [
        "tau2/airline/claude-opus-4-6/adaptive_agent/task-7/trial-0",
        "tau2/medical_triage/claude-opus-4-6/adaptive_agent/task-0/trial-0"]
    for c in unscored:
        assert [t.role for t in c.turns] == [Role.SYSTEM] and "reward" not in c.metadata
        assert c.metadata["termination_reason"] == "infrastructure_error"
        assert c.turns[0].content.startswith("# ")  # the policy its file's runs share


def test_the_solo_runs_have_no_user_turn_and_their_ticket_in_turn_0(ingested):
    convs, _, _ = ingested
    solo = [c for c in convs if c.agent_implementation == "llm_agent_solo"]
    assert len(solo) == 80 and {c.domain for c in solo} == {"telecom"}
    for c in solo:
        assert Role.USER not in {t.role for t in c.turns}
        assert "</policy>\n<ticket>\n" in c.turns[0].content
        assert c.turns[0].content.endswith("\n</ticket>")


def test_the_later_layouts_give_each_run_the_policy_it_was_given(ingested):
    convs, _, _ = ingested
    later = [c for c in convs if c.metadata["origin"].get("layout") in ("wrapper", "list")]
    assert Counter(c.metadata["origin"]["layout"] for c in later) == {"wrapper": 120,
                                                                      "list": 114}
    titles = Counter((c.domain, c.turns[0].content.split("\n")[0]) for c in later)
    assert titles == {("airline", "# Airline Agent Policy"): 100,
                      ("medical_triage", "# Medical Triage Agent Policy"): 70,
                      ("medical", "# Medical Triage Agent Policy"): 64}


@pytest.mark.parametrize("name,layout", [
    ("medical_triage-claude-opus-4-6-cascata.json", "wrapper"),
    ("airline-claude-opus-4-6-adaptive.json", "list"),
])
def test_a_malformed_real_file_of_each_later_layout_is_one_line(files, tmp_path, name, layout):
    (path,) = [f for f in files if f.name == name]
    value = json.loads(path.read_text())
    sims = value["simulations"] if layout == "wrapper" else value
    k, j = next((k, j) for k, s in enumerate(sims) for j, m in enumerate(s["messages"])
                if m["role"] == "tool")
    sims[k]["messages"][j]["id"] = "no-such-call"
    bad = tmp_path / name
    bad.write_text(json.dumps(value))
    out = tmp_path / "c.jsonl"
    res = runner.invoke(app, ["ingest", "tau2", str(bad), "--agent-model", "claude-opus-4-6",
                              "--out", str(out)])
    assert res.exit_code == ExitCode.BAD_INPUT
    errors = [line for line in res.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, res.output
    task = sims[k]["task_id"]
    assert f"{bad}: simulation {k} (task {task}, trial 0), message {j}" in errors[0]
    assert "'no-such-call'" in errors[0] and not out.exists()
