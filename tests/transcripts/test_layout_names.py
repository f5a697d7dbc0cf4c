"""The name rule (issue 48) on the names tau2's later layouts and TauBench runs give (issue 45):
a wrapper's domain and model, a bare list's flags and policy titles, a TauBench file's name,
all normalised before they go into an id or refused in one line; trials bounded in every
layout; a results object or wrapper whose simulations are not a list is still read as tau2
(the reader names the problem) while a bare list of simulations is still recognised."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode, InputError
from mtcabench.transcripts import detect, load, read_conversations, read_tau2, read_taubench

from tests.support.tau2_runs import later_simulation, wrapper, write

runner = CliRunner()


def error_line(res) -> str:
    assert res.exit_code == ExitCode.BAD_INPUT, res.output
    assert "Traceback" not in res.output, res.output
    errors = [line for line in res.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, res.output
    return errors[0]


def test_a_wrapper_s_names_are_normalised_before_they_go_into_ids(tmp_path):
    path = write(tmp_path / "w.json", wrapper(domain=" Harbor Clinic ", model=" model-x "))
    (conv,) = read_tau2(path)
    assert (conv.domain, conv.agent_model) == ("harbor_clinic", "model-x")
    assert conv.id == "tau2/harbor_clinic/model-x/adaptive_agent/task-3/trial-0"
    # a flag is compared with the file's name once both are normalised
    assert read_tau2(path, domain="HARBOR_CLINIC", agent_model="model-x")[0].id == conv.id


@pytest.mark.parametrize("field, value, says", [
    ("domain", "claims", "config every release has or may have"),
    ("domain", "all", "config every release has or may have"),
    ("domain", "clinic-conversations", "ends in '-conversations'"),
    ("model", "unknown", "name no agent"),
    ("model", "http://admin:SECRET@host:8000/v1#m", "endpoint URL"),
    ("model", "gpt|4o", "holds '|'"),
])
def test_a_wrapper_name_the_rule_refuses_is_one_line(tmp_path, field, value, says):
    path = write(tmp_path / "w.json", wrapper(**{field: value}))
    with pytest.raises(InputError) as info:
        read_tau2(path)
    line = str(info.value)
    assert line.startswith(f"{path}: '{field}': ") and says in line, line
    assert "SECRET" not in line and "\n" not in line


def test_a_bare_list_s_flags_are_normalised_and_checked(tmp_path):
    path = write(tmp_path / "list.json", [later_simulation()])
    (conv,) = read_tau2(path, domain=" Clinic ", agent_model=" model-y ")
    assert conv.id == "tau2/clinic/model-y/unnamed/task-3/trial-0"
    with pytest.raises(InputError, match="^--agent-model: the agent model 'unknown'"):
        read_tau2(path, agent_model="unknown")
    with pytest.raises(InputError, match="^--domain: the domain 'spans' is the name of a config"):
        read_tau2(path, agent_model="m", domain="spans")


def test_the_cli_checks_tau2_s_flags_before_any_file_is_read(tmp_path):
    out = tmp_path / "c.jsonl"
    line = error_line(runner.invoke(app, ["ingest", "tau2", str(tmp_path / "missing.json"),
                                          "--agent-model", "m", "--domain", "claims",
                                          "--out", str(out)]))
    assert line.startswith("error: --domain: the domain 'claims'"), line
    assert not out.exists()


def test_a_policy_title_naming_a_release_config_is_refused(tmp_path):
    sim = later_simulation(policy="# Claims Agent Policy\n\nBe precise.")
    with pytest.raises(InputError) as info:
        read_tau2(write(tmp_path / "list.json", [sim]), agent_model="m")
    line = str(info.value)
    assert "simulation 0" in line and "the policy's title" in line and "'claims'" in line, line


def test_a_bare_list_s_trial_is_bounded(tmp_path):
    sim = later_simulation()
    sim["trial"] = 2**63
    with pytest.raises(InputError, match=r"simulation 0 \(task 3\): 'trial' is "
                                         r"9223372036854775808, more than 2,147,483,647"):
        read_tau2(write(tmp_path / "list.json", [sim]), agent_model="m")


def test_non_list_simulations_are_tau2_s_to_name_and_a_bare_list_is_still_tau2(tmp_path):
    w = wrapper()
    w["simulations"] = {"sim-1": later_simulation()}
    path = write(tmp_path / "w.json", w)
    assert detect(load(path)).name == "tau2"
    out = tmp_path / "c.jsonl"
    lines = [error_line(runner.invoke(app, ["ingest", cmd, str(path), "--out", str(out)]))
             for cmd in ("tau2", "transcripts")]
    assert lines[0] == lines[1] == f"error: {path}: 'simulations' is not a list of runs"
    bare = write(tmp_path / "list.json", [later_simulation()])
    assert detect(load(bare)).name == "tau2"
    with pytest.raises(InputError, match="not a transcript of a known format"):
        detect(load(write(tmp_path / "other.json", {"domain": "d", "simulation": []})))


def _taubench_run(policy: str = "# Airline Agent Policy\n\nBe kind.") -> dict:
    return {"task_id": 3, "trial": 0, "reward": 1.0,
            "traj": [{"role": "system", "content": policy},
                     {"role": "user", "content": "hi"},
                     {"role": "assistant", "content": "Hello."}]}


def test_a_taubench_model_from_the_file_name_is_held_to_the_rule(tmp_path):
    src = tmp_path / "gpt 4o-airline.json"
    src.write_text(json.dumps([_taubench_run()]))
    with pytest.raises(InputError) as info:
        list(read_taubench(src))
    line = str(info.value)
    assert line.startswith(f"{src}: the agent model its file name gives: ")
    assert "holds ' '" in line and line.endswith("pass --agent-model"), line
    (conv,) = read_taubench(src, agent_model=" gpt-4o ")
    assert conv.id == "taubench/airline/gpt-4o/task-3/trial-0"
    # read as any log (explain, ingest transcripts): a name that breaks the rule is left out
    (conv,) = read_conversations(src)
    assert conv.id == "taubench/task-3/trial-0" and conv.agent_model is None


def test_a_taubench_policy_title_naming_a_release_config_is_refused(tmp_path):
    src = tmp_path / "gpt-4o-x.json"
    src.write_text(json.dumps([_taubench_run("# All agent policy\n\nx")]))
    with pytest.raises(InputError, match=r"run 0: the policy's title: the domain 'all' is the "
                                         "name of a config"):
        list(read_taubench(src))
    assert [c.domain for c in read_taubench(src, domain=" Retail ", agent_model="m")] == ["retail"]
