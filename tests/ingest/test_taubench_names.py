"""A TauBench run's domain from the run itself (issue 45): its policy's title and its tools;
the file name is a fallback that a line reports; an unknown domain is one clear line. The
agent model, which TauBench runs do not record: --agent-model, else the file name, reported
(hand-written runs; the real retail files are read in tests/ingest/test_every_real_run.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode, InputError
from mtcabench.ingest import read_taubench
from mtcabench.transcripts import policy_domain, read_conversations

runner = CliRunner()

RETAIL = "# Retail agent policy\n\nAs a retail agent, you can help users cancel orders."
AIRLINE = "# Airline Agent Policy\n\nThe current time is 2024-05-15 15:00:00 EST."


def _run(policy: str | None, tool: str = "get_order_details", task: int = 0) -> dict:
    traj = [{"role": "system", "content": policy}] if policy is not None else []
    traj += [
        {"role": "user", "content": "Where is order #W1234567?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": tool, "arguments": "{\"order_id\": \"#W1234567\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "name": tool, "content": "{\"status\": \"ok\"}"},
        {"role": "assistant", "content": "Order #W1234567 is ok."},
    ]
    return {"task_id": task, "trial": 0, "reward": 1.0, "info": {}, "traj": traj}


def _file(folder: Path, name: str, *runs: dict) -> Path:
    path = folder / name
    path.write_text(json.dumps(list(runs)))
    return path


@pytest.mark.parametrize("policy,domain", [
    (RETAIL, "retail"), (AIRLINE, "airline"),
    ("<main_policy>\n# Telecom Agent Policy\n\nHelp.", "telecom"),
    ("# Medical Triage Agent Policy\n", "medical_triage"),
    ("# Airline Agent Policy (mtcabench sample)\n", "airline"),
    ("# Skyway policy\n", None), ("Retail agent policy, no heading", None), (None, None),
])
def test_the_policy_s_title_names_the_domain(policy, domain):
    assert policy_domain(policy) == domain


def test_retail_grok_3_is_retail_by_its_policy_and_grok_3_by_its_name_with_a_line(tmp_path):
    path = _file(tmp_path, "retail-grok-3.json", _run(RETAIL), _run(RETAIL, task=1))
    lines: list[str] = []
    convs = list(read_taubench(path, report=lines.append))
    assert [c.id for c in convs] == ["taubench/retail/grok-3/task-0/trial-0",
                                     "taubench/retail/grok-3/task-1/trial-0"]
    assert {(c.domain, c.agent_model) for c in convs} == {("retail", "grok-3")}
    assert lines == [f"{path}: agent model 'grok-3' taken from the file name (TauBench runs "
                     "do not record it); pass --agent-model to name it"]


def test_the_upstream_name_and_model_before_domain_both_give_the_model(tmp_path):
    upstream = _file(tmp_path, "tool-calling-grok-3-0.0_range_0--1_user-grok-3-llm_0921131646"
                     ".json", _run(RETAIL))
    assert next(read_taubench(upstream)).agent_model == "grok-3"
    classic = _file(tmp_path, "gpt-4o-airline.json", _run(AIRLINE, "get_reservation_details"))
    assert next(read_taubench(classic)).id == "taubench/airline/gpt-4o/task-0/trial-0"


def test_given_names_are_used_and_say_nothing_unless_the_policy_names_another(tmp_path):
    path = _file(tmp_path, "runs.json", _run(RETAIL))
    lines: list[str] = []
    conv = next(read_taubench(path, agent_model="m1", domain="retail", report=lines.append))
    assert (conv.domain, conv.agent_model, lines) == ("retail", "m1", [])
    conv = next(read_taubench(path, agent_model="m1", domain="shop", report=lines.append))
    assert conv.domain == "shop"
    assert lines == [f"{path}: domain 'shop' as given by --domain; the runs' policy names "
                     "'retail'"]


def test_without_a_title_the_tools_tell_the_domain(tmp_path):
    path = _file(tmp_path, "runs-x.json", _run("You help people.", "get_reservation_details"))
    assert next(read_taubench(path, agent_model="m")).domain == "airline"


def test_the_file_name_is_the_last_resort_and_a_line_says_so(tmp_path):
    path = _file(tmp_path, "m-airline.json", _run(None, "lookup"))
    lines: list[str] = []
    conv = next(read_taubench(path, report=lines.append))
    assert (conv.domain, conv.agent_model) == ("airline", "m")
    assert lines[0].startswith(f"{path}: domain 'airline' taken from the file name (run 0 has "
                               "no '# <Domain> agent policy' title")
    assert len(lines) == 2 and "agent model 'm' taken from the file name" in lines[1]


def test_an_unknown_domain_is_one_clear_line_not_the_file_name_s_last_part(tmp_path):
    path = _file(tmp_path, "grok-3.json", _run(None, "lookup"))  # once: model grok, domain 3
    out = tmp_path / "c.jsonl"
    res = runner.invoke(app, ["ingest", "taubench", str(path), "--out", str(out)])
    assert res.exit_code == ExitCode.BAD_INPUT
    errors = [line for line in res.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, res.output
    assert f"{path}: run 0: unknown domain" in errors[0] and "pass --domain" in errors[0]
    assert not out.exists()
    res = runner.invoke(app, ["ingest", "taubench", str(path), "--domain", "retail",
                              "--agent-model", "grok-3", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "taken from the file name" not in " ".join(res.output.split())


def test_a_model_nothing_tells_is_one_line(tmp_path):
    path = _file(tmp_path, "runs.json", _run(RETAIL))
    with pytest.raises(InputError, match=r"runs\.json: run 0: cannot tell the agent model.*"
                                         "pass --agent-model"):
        list(read_taubench(path))


def test_a_title_contradicted_by_the_tools_is_refused(tmp_path):
    path = _file(tmp_path, "m-airline.json", _run(AIRLINE, "get_order_details"))
    with pytest.raises(InputError, match="names the domain 'airline', but it calls retail's own "
                                         "tools \\(get_order_details\\)"):
        list(read_taubench(path))


def test_the_cli_prints_where_the_model_came_from(tmp_path):
    path = _file(tmp_path, "retail-grok-3.json", _run(RETAIL))
    res = runner.invoke(app, ["ingest", "taubench", str(path), "--out", str(tmp_path / "c.jsonl")])
    assert res.exit_code == 0, res.output
    said = " ".join(res.output.split())
    assert "agent model 'grok-3' taken from the file name" in said
    assert "wrote 1 conversations" in said


def test_ingest_transcripts_and_explain_read_the_same_names(tmp_path):
    path = _file(tmp_path, "retail-grok-3.json", _run(RETAIL))
    (conv,) = read_conversations(path)
    assert conv.id == "taubench/retail/grok-3/task-0/trial-0"
    # a file whose runs name nothing keeps the id without domain and model, as before
    bare = _file(tmp_path, "runs.json", _run(None, "lookup"))
    assert read_conversations(bare)[0].id == "taubench/task-0/trial-0"
