"""tau2's later layouts (issue 45): the wrapper ``{domain, agent, model, simulations}`` and the
bare list of simulations, each simulation with its own policy; error runs read and marked; the
solo agent's runs, with no user; provider output and run settings never in a record; a
malformed file of each layout refused in one line naming the file, the run and the problem
(hand-written files of tests/support/tau2_runs.py)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode, InputError
from mtcabench.io import read_records
from mtcabench.model import METADATA_KEYS, Conversation, Role
from mtcabench.transcripts import detect, load, read_conversations, read_tau2
from mtcabench.transcripts._tau2 import SOLO_INSTRUCTION

from tests.support.tau2_runs import (
    CLINIC_POLICY,
    PROVIDER_SECRET,
    POLICY,
    airline,
    error_run,
    later_simulation,
    solo,
    wrapper,
    write,
)

runner = CliRunner()


def test_a_wrapper_names_domain_agent_and_model_and_each_run_its_policy(tmp_path):
    other = later_simulation("4", policy=CLINIC_POLICY + "\nA later edition.")
    convs = read_tau2(write(tmp_path / "w.json", wrapper(later_simulation(), other)))
    assert [c.id for c in convs] == [
        "tau2/harbor_clinic/model-x/adaptive_agent/task-3/trial-0",
        "tau2/harbor_clinic/model-x/adaptive_agent/task-4/trial-0"]
    first, second = convs
    assert (first.domain, first.agent_model, first.agent_implementation) == (
        "harbor_clinic", "model-x", "adaptive_agent")
    # turn 0 is the policy each run was given (a submission's agent: its own prompt unknown)
    assert first.turns[0].content == CLINIC_POLICY
    assert second.turns[0].content.endswith("A later edition.")
    assert first.metadata["system_turn"] == {"rebuilt": True, "template": "policy-only"}
    assert [t.role for t in first.turns] == [Role.SYSTEM, Role.ASSISTANT, Role.USER,
                                            Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]
    assert first.turns[4].name == "find_patient_by_name_dob"
    assert first.metadata["origin"] == {"file": "w.json", "format": "tau2", "run": 0,
                                        "layout": "wrapper", "simulation_id": "sim-clinic-3"}
    assert first.metadata["reward"] == 1.0 and "unscored" not in first.metadata


def test_provider_output_run_settings_and_speech_fields_reach_no_record(tmp_path):
    out = tmp_path / "c.jsonl"
    res = runner.invoke(app, ["ingest", "tau2", str(write(tmp_path / "w.json", wrapper())),
                              "--out", str(out)])
    assert res.exit_code == 0, res.output
    text = out.read_text()
    for leaked in (PROVIDER_SECRET, "llm.example.test", "user-sim-model", "prompt_tokens",
                   "audio", "half_duplex", "pass_rate", "agent_cost"):
        assert leaked not in text, leaked
    (conv,) = read_records(out, Conversation)
    assert set(conv.metadata) <= set(METADATA_KEYS)


def test_an_error_run_is_read_as_its_system_turn_and_marked_unscored(tmp_path):
    (ok, err) = read_tau2(write(tmp_path / "w.json", wrapper(later_simulation(), error_run())))
    assert [t.role for t in err.turns] == [Role.SYSTEM]
    assert err.turns[0].content == CLINIC_POLICY  # the policy its file's runs share
    assert err.metadata["unscored"] is True and "reward" not in err.metadata
    assert err.metadata["termination_reason"] == "infrastructure_error"
    assert err.metadata["system_turn"]["policy_from"] == "the file's other runs"
    assert "unscored" not in ok.metadata and "policy_from" not in ok.metadata["system_turn"]


def test_a_scored_run_without_messages_is_still_refused(tmp_path):
    sim = later_simulation()
    sim["messages"] = []
    with pytest.raises(InputError, match=r"w\.json: simulation 0 \(task 3, trial 0\): "
                                         r"'messages' is not a non-empty list"):
        read_tau2(write(tmp_path / "w.json", wrapper(sim)))


def test_an_error_run_whose_file_shares_no_policy_is_refused(tmp_path):
    other = later_simulation("4", policy=POLICY)
    with pytest.raises(InputError, match=r"simulation 2 \(task 9, trial 0\): has no policy"):
        read_tau2(write(tmp_path / "w.json", wrapper(later_simulation(), other, error_run())))


def test_a_bare_list_needs_its_model_and_takes_the_domain_from_the_policy_s_title(tmp_path):
    path = write(tmp_path / "list.json", [later_simulation(), later_simulation("5")])
    with pytest.raises(InputError, match="does not record its agent model; pass --agent-model"):
        read_tau2(path)
    convs = read_tau2(path, agent_model="model-y")
    assert [c.id for c in convs] == ["tau2/harbor_clinic/model-y/unnamed/task-3/trial-0",
                                     "tau2/harbor_clinic/model-y/unnamed/task-5/trial-0"]
    assert convs[0].agent_implementation is None and convs[0].domain == "harbor_clinic"
    assert convs[0].metadata["origin"]["layout"] == "list"
    named = read_tau2(path, agent_model="model-y", agent_implementation="adaptive")
    assert named[0].id == "tau2/harbor_clinic/model-y/adaptive/task-3/trial-0"


def test_a_domain_given_for_a_bare_list_wins_and_a_line_says_the_policy_names_another(
        tmp_path):
    lines: list[str] = []
    path = write(tmp_path / "list.json", [later_simulation(), later_simulation("5")])
    convs = read_tau2(path, agent_model="m", domain="clinic", report=lines.append)
    assert {c.domain for c in convs} == {"clinic"}
    assert lines == [f"{path}: domain 'clinic' as given by --domain; the runs' policy names "
                     "'harbor_clinic'"]


def test_a_bare_list_without_a_title_takes_the_domain_its_tools_are_else_is_one_line(
        tmp_path):
    sim = later_simulation(policy=POLICY)  # "# Skyway policy": no "agent policy" title
    (conv,) = read_tau2(write(tmp_path / "list.json", [sim]), agent_model="m")
    assert conv.domain == "medical_triage"  # find_patient_by_name_dob is that domain's own
    sim["messages"][2]["tool_calls"][0]["name"] = "lookup_patient"
    path = write(tmp_path / "list.json", [sim])
    with pytest.raises(InputError, match=r"list\.json: simulation 0 \(task 3, trial 0\): cannot "
                                         "tell the domain.*pass --domain"):
        read_tau2(path, agent_model="m")


def test_a_title_whose_tools_are_another_domain_s_is_refused(tmp_path):
    sim = later_simulation()
    sim["policy"] = "# Airline Agent Policy\n\nBook flights."
    sim["messages"][2]["tool_calls"][0]["name"] = "get_order_details"
    with pytest.raises(InputError, match="names the domain 'airline', but it calls retail's own "
                                         "tools"):
        read_tau2(write(tmp_path / "list.json", [sim]), agent_model="m")


def test_a_flag_contradicting_what_a_file_records_is_refused(tmp_path):
    path = write(tmp_path / "w.json", wrapper())
    with pytest.raises(InputError, match="records the domain 'harbor_clinic', but --domain "
                                         "gives 'x'"):
        read_tau2(path, domain="x")
    with pytest.raises(InputError, match="records the agent model 'gpt-test', but "
                                         "--agent-model gives 'y'"):
        read_tau2(write(tmp_path / "air.json", airline()), agent_model="y")
    # a flag naming what the file records is fine
    assert read_tau2(path, domain="harbor_clinic", agent_model="model-x")


@pytest.mark.parametrize("flag,value,message", [
    ("domain", "a/b", "--domain: the domain 'a/b' holds a '/'"),
    ("agent_implementation", "x\x1b[2J", "control character"),
    ("agent_model", " ", "--agent-model: the agent model is missing"),
])
def test_a_bad_flag_value_is_one_line(tmp_path, flag, value, message):
    path = write(tmp_path / "list.json", [later_simulation()])
    given = {"agent_model": "m", flag: value}
    with pytest.raises(InputError, match=message.replace("[", r"\[")):
        read_tau2(path, **given)


def test_the_solo_agent_s_system_turn_holds_the_ticket_and_no_user_turn_is_needed(tmp_path):
    (conv,) = read_tau2(write(tmp_path / "solo.json", solo()))
    assert Role.USER not in {t.role for t in conv.turns}
    system = conv.turns[0].content
    assert system.startswith(f"<instructions>\n{SOLO_INSTRUCTION}\n</instructions>\n<policy>\n")
    assert system.endswith("<ticket>\nCustomer Ben Ortiz, phone number 555-010-7788, has no "
                           "service.\n</ticket>")
    assert conv.metadata["system_turn"] == {"rebuilt": True, "template": "llm_agent_solo",
                                            "instruction": "solo"}
    # the number the agent calls with is the ticket's: its only source is the system turn
    assert "555-010-7788" in system and "555-010-7788" in conv.turns[1].text


def test_a_solo_run_whose_task_has_no_ticket_is_refused(tmp_path):
    run = solo()
    del run["tasks"][0]["ticket"]
    with pytest.raises(InputError, match=r"simulation 0 .*: its task has no 'ticket'"):
        read_tau2(write(tmp_path / "solo.json", run))


@pytest.mark.parametrize("layout", ["results", "wrapper", "list"])
def test_a_malformed_file_of_each_layout_is_one_line_naming_file_run_and_message(
        tmp_path, layout):
    if layout == "results":
        value = airline()
        value["simulations"][0]["messages"][3]["id"] = "call_zz"
        run = "simulation 0 (task 7, trial 0), message 3"
    else:
        sim = later_simulation()
        sim["messages"][3]["id"] = "call_zz"
        value = wrapper(sim) if layout == "wrapper" else [sim]
        run = "simulation 0 (task 3, trial 0), message 3"
    path = write(tmp_path / f"{layout}.json", value)
    out = tmp_path / "c.jsonl"
    res = runner.invoke(app, ["ingest", "tau2", str(path), "--agent-model",
                              "model-x" if layout == "wrapper" else "gpt-test", "--out", str(out)]
                        if layout != "results" else ["ingest", "tau2", str(path), "--out",
                                                     str(out)])
    assert res.exit_code == ExitCode.BAD_INPUT
    errors = [line for line in res.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, res.output
    assert str(path) in errors[0] and run in errors[0] and "'call_zz'" in errors[0]
    assert not out.exists()


def test_the_cli_reads_a_bare_list_with_its_flags(tmp_path):
    path = write(tmp_path / "list.json", [later_simulation(), error_run()])
    out = tmp_path / "c.jsonl"
    res = runner.invoke(app, ["ingest", "tau2", str(path), "--agent-model", "model-z",
                              "--agent-implementation", "adaptive", "--out", str(out)])
    assert res.exit_code == 0, res.output
    convs = list(read_records(out, Conversation))
    assert [c.id.split("/")[3] for c in convs] == ["adaptive", "adaptive"]
    assert convs[1].metadata["unscored"] is True


def test_the_layouts_are_recognised_as_tau2_and_a_bare_list_says_how_to_read_it(tmp_path):
    w = write(tmp_path / "w.json", wrapper())
    assert detect(load(w)).name == "tau2"
    assert read_conversations(w)[0].domain == "harbor_clinic"
    bare = write(tmp_path / "list.json", [later_simulation()])
    assert detect(load(bare)).name == "tau2"
    with pytest.raises(InputError, match="ingest tau2 --agent-model MODEL"):
        read_conversations(bare)


@pytest.mark.parametrize("value,message", [
    ([1], "simulation 0: expected an object, got int"),
    ([{"task_id": "1", "trial": 0, "messages": 5, "reward_info": None}],
     "'messages' is not a non-empty list"),
    ([{"task_id": "1", "trial": 0, "policy": 7, "reward_info": {},
       "messages": [{"role": "assistant", "content": "x", "tool_calls": 5}]}],
     "cannot tell the domain"),
    ([{"task_id": "1", "trial": 0, "policy": CLINIC_POLICY, "reward_info": {},
       "messages": [{"role": "assistant", "content": "x", "tool_calls": 5}]}],
     "tool_calls is a int; expected a list"),
    ({"domain": "d", "agent": "a", "model": "m", "simulations": [None]},
     "simulation 0: expected an object, got NoneType"),
    ({"domain": 3, "agent": "a", "model": "m", "simulations": []}, "'domain': the domain is "
                                                                   "missing (got 3)"),
])
def test_hostile_later_layouts_are_one_line(tmp_path, value, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_tau2(write(tmp_path / "x.json", value), agent_model="m")
