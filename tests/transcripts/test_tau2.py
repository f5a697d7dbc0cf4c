"""tau2-bench results as a log format: every simulation a conversation, the system turn
rebuilt, user calls on the user's turn, metadata by name only, hostile files refused in one
line (hand-written files of tests/support/tau2_runs.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode, InputError
from mtcabench.model import METADATA_KEYS, Role
from mtcabench.transcripts import (
    LiveReader,
    choose,
    detect,
    load,
    read_conversations,
    read_tau2,
    target_span,
)
from mtcabench.transcripts._tau2 import INSTRUCTIONS, SYSTEM_TEMPLATE

from tests.support.tau2_runs import PHONE_POLICY, POLICY, airline, telecom, write

runner = CliRunner()


def test_a_simulation_is_a_conversation_with_the_default_agent_s_system_turn(tmp_path):
    (conv,) = read_tau2(write(tmp_path / "air.json", airline()))
    assert conv.id == "tau2/airline/gpt-test/llm_agent/task-7/trial-0"
    assert (conv.source, conv.domain, conv.agent_model, conv.agent_implementation,
            conv.task_id, conv.trial) == ("tau2", "airline", "gpt-test", "llm_agent", "7", 0)
    assert conv.schema_version == 2
    system = conv.turns[0]
    assert system.role is Role.SYSTEM
    # tau2's default agent: <instructions>...</instructions><policy>...</policy>, the policy
    # as written (braces included), with the released instruction for an unknown commit
    assert system.content == (f"<instructions>\n{INSTRUCTIONS['37199f3']}\n</instructions>\n"
                              f"<policy>\n{POLICY}\n</policy>")
    assert system.content.startswith("<instructions>\nYou are a customer service agent")
    assert conv.metadata["system_turn"] == {"rebuilt": True, "template": "llm_agent",
                                            "instruction": "37199f3"}
    # the agent's greeting is the first message, before the user speaks
    assert [t.role.value for t in conv.turns] == ["system", "assistant", "user", "assistant",
                                                  "tool", "assistant"]
    assert conv.turns[1].content == "Hi! How can I help you today?"
    # the result answers the agent's call, named after its tool
    assert conv.call_turn(4) == 3 and conv.turns[4].name == "get_booking"


def test_content_is_kept_as_the_agent_wrote_it(tmp_path):
    (conv,) = read_tau2(write(tmp_path / "air.json", airline()))
    answer = conv.turns[5]
    assert answer.content == '{"message": "BK7Q2 leaves at 09:40."}'  # a JSON object, as text
    span = target_span(conv, 5, "09:40")
    # the offset counts the JSON wrapper: it indexes what the model produced
    assert answer.text[span.start:span.end] == "09:40"
    assert span.start == len('{"message": "BK7Q2 leaves at ')


def test_the_run_s_tau2_version_chooses_the_instruction(tmp_path):
    run = airline()
    run["info"]["git_commit"] = "b02b509367e8436f956c334741ac7cf7c9f5dabe"
    (conv,) = read_tau2(write(tmp_path / "air.json", run))
    assert conv.turns[0].content == SYSTEM_TEMPLATE.format(instruction=INSTRUCTIONS["b02b509"],
                                                           policy=POLICY)
    assert "During each turn" in conv.turns[0].content
    assert conv.metadata["system_turn"]["instruction"] == "b02b509"


def test_an_agent_with_a_prompt_of_its_own_gets_the_policy_alone(tmp_path):
    (conv,) = read_tau2(write(tmp_path / "air.json", airline(implementation="ironforge")))
    assert conv.turns[0].content == POLICY
    assert conv.metadata["system_turn"] == {"rebuilt": True, "template": "policy-only"}
    assert conv.id == "tau2/airline/gpt-test/ironforge/task-7/trial-0"


def test_a_user_s_calls_are_calls_of_the_user_turn(tmp_path):
    (conv,) = read_tau2(write(tmp_path / "tel.json", telecom()))
    roles = [t.role.value for t in conv.turns]
    assert roles == ["system", "assistant", "user", "assistant", "user", "tool", "tool", "user",
                     "assistant"]
    user = conv.turns[4]
    assert [c.name for c in user.tool_calls] == ["check_status_bar", "check_network"]
    assert user.content == "" and user.text == ('check_status_bar({})\n'
                                                'check_network({"detail": "full"})')
    # each result answers the user turn that issued its call
    assert conv.call_turn(5) == 4 and conv.call_turn(6) == 4
    assert conv.turns[5].name == "check_status_bar"
    assert conv.task_id == "[no_service]airplane_mode_on[PERSONA:None]" and conv.trial == 2
    assert conv.metadata["expected_actions"] == [
        {"name": "toggle_airplane_mode", "arguments": {}, "requestor": "user"}]
    assert conv.turns[0].content.endswith(f"<policy>\n{PHONE_POLICY}\n</policy>")


def test_metadata_holds_only_allow_listed_fields(tmp_path):
    (conv,) = read_tau2(write(tmp_path / "air.json", airline()))
    assert set(conv.metadata) <= set(METADATA_KEYS)
    assert conv.metadata == {
        "origin": {"file": "air.json", "format": "tau2", "run": 0,
                   "simulation_id": "sim-airline-1"},
        "reward": 1.0, "termination_reason": "user_stop",
        "expected_actions": [{"name": "get_booking", "arguments": {"booking_id": "BK7Q2"},
                              "requestor": "assistant"}],
        "expected_outputs": ["BK7Q2 leaves at 09:40"],
        "system_turn": {"rebuilt": True, "template": "llm_agent", "instruction": "37199f3"}}


SECRET = "sk-proj-PLANTED0123456789abcdef"


def _plant(run: dict) -> dict:
    """A credential in every settings object of the file and of its simulation."""
    info = run["info"]
    info["agent_info"]["llm_args"]["api_key"] = SECRET
    info["agent_info"]["api_base"] = f"https://user:{SECRET}@llm.example"
    info["user_info"]["llm_args"]["headers"] = {"Authorization": f"Bearer {SECRET}"}
    info["environment_info"]["tool_defs"] = {"token": SECRET}
    info["password"] = SECRET
    run["simulations"][0]["info"] = {"api_key": SECRET}
    run["simulations"][0]["reward_info"]["auth"] = SECRET
    run["tasks"][0]["user_scenario"] = {"secret": SECRET}
    return run


@pytest.mark.parametrize("make", [airline, telecom])
def test_a_credential_planted_anywhere_in_the_settings_never_reaches_the_output(tmp_path, make):
    src = write(tmp_path / "run.json", _plant(make()))
    out = tmp_path / "c.jsonl"
    res = runner.invoke(app, ["ingest", "tau2", str(src), "--out", str(out)])
    assert res.exit_code == 0, res.output
    text = out.read_text()
    assert "PLANTED" not in text and SECRET not in text
    assert set(json.loads(text)["metadata"]) <= set(METADATA_KEYS)


def test_ingest_transcripts_and_explain_s_reader_recognise_the_format(tmp_path):
    src = write(tmp_path / "tel.json", telecom())
    assert detect(load(src)).name == "tau2"
    convs = read_conversations(src)
    assert choose(convs, "task-[no_service]airplane_mode_on[PERSONA:None]/trial-2",
                  str(src)) == convs[0]
    out_a, out_b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert runner.invoke(app, ["ingest", "tau2", str(src), "--out", str(out_a)]).exit_code == 0
    res = runner.invoke(app, ["ingest", "transcripts", str(src), "--out", str(out_b)])
    assert res.exit_code == 0, res.output
    assert out_a.read_bytes() == out_b.read_bytes()  # one reader, the same records


def test_the_tracer_s_reader_takes_tau2_messages_one_at_a_time():
    live = LiveReader()
    live.add({"role": "system", "content": "You help with phones."})
    for m in telecom()["simulations"][0]["messages"]:
        live.add(m)
    turns = live.turns
    assert [t.role.value for t in turns] == ["system", "assistant", "user", "assistant", "user",
                                             "tool", "tool", "user", "assistant"]
    assert [c.id for c in turns[4].tool_calls] == ["u1", "u2"] and turns[5].tool_call_id == "u1"
    with pytest.raises(InputError, match="'u1', which an earlier tool message already answered"):
        live.add({"id": "u1", "role": "tool", "requestor": "user", "content": "again"})


def test_two_submissions_of_one_model_do_not_collide(tmp_path):
    a = write(tmp_path / "a.json", airline(model="claude-x", implementation="llm_agent"))
    b = write(tmp_path / "b.json", airline(model="claude-x", implementation="experimental_agent"))
    out = tmp_path / "c.jsonl"
    res = runner.invoke(app, ["ingest", "tau2", str(a), str(b), "--out", str(out)])
    assert res.exit_code == 0, res.output
    ids = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert ids == ["tau2/airline/claude-x/llm_agent/task-7/trial-0",
                   "tau2/airline/claude-x/experimental_agent/task-7/trial-0"]


def test_files_that_still_collide_are_one_clear_error(tmp_path):
    a = write(tmp_path / "a.json", airline())
    b = write(tmp_path / "b.json", airline())
    out = tmp_path / "c.jsonl"
    res = runner.invoke(app, ["ingest", "tau2", str(a), str(b), "--out", str(out)])
    assert res.exit_code == ExitCode.BAD_INPUT
    line = error_line(res)
    assert "b.json run 0" in line and "first at a.json run 0" in line
    assert "duplicate conversation id 'tau2/airline/gpt-test/llm_agent/task-7/trial-0'" in line
    assert not out.exists()


def error_line(res) -> str:
    """The one error line of a failed command (a progress bar may precede it)."""
    assert "Traceback" not in res.output, res.output
    errors = [line for line in res.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, res.output
    return errors[0]


def _edit(make, change):
    run = make()
    change(run)
    return run


def _messages(run):
    return run["simulations"][0]["messages"]


#: Hostile files, each with what its one line must say (besides the file's name).
HOSTILE = {
    "result answering no call": (airline, lambda r: _messages(r)[3].update(id="nope"),
                                 ["simulation 0 (task 7, trial 0), message 3",
                                  "answers call 'nope', which no earlier turn issued"]),
    "call id reused while open": (telecom, lambda r: _messages(r)[3]["tool_calls"][1].update(
        id="u1"), ["message 3, tool call 1", "'u1' used twice in one message"]),
    "call id reused in a later message while unanswered": (
        airline, lambda r: _messages(r).insert(3, {"role": "assistant", "tool_calls": [
            {"id": "call_b", "name": "get_booking", "arguments": {}, "requestor": "assistant"}]}),
        ["message 3, tool call 0", "call id 'call_b' reused while the earlier call"]),
    "result answering a call twice": (
        airline, lambda r: _messages(r).insert(4, dict(_messages(r)[3])),
        ["message 4", "'call_b', which an earlier tool message already answered"]),
    "missing policy": (airline, lambda r: r["info"]["environment_info"].pop("policy"),
                       ["info.environment_info.policy is missing", "rebuilt from"]),
    "empty policy": (airline, lambda r: r["info"]["environment_info"].update(policy="  "),
                     ["info.environment_info.policy is missing (got empty text)"]),
    "unknown role": (airline, lambda r: _messages(r)[1].update(role="customer"),
                     ["message 1", "unknown role customer", "assistant, user and tool"]),
    "system message": (airline, lambda r: _messages(r)[1].update(role="system"),
                       ["message 1", "unknown role system"]),
    "arguments not an object": (airline, lambda r: _messages(r)[2]["tool_calls"][0].update(
        arguments='{"booking_id": "BK7Q2"}'), ["message 2, tool call 0 (get_booking)",
                                               "arguments are a str", "as an object"]),
    "arguments missing": (airline, lambda r: _messages(r)[2]["tool_calls"][0].pop("arguments"),
                          ["tool call 0", "arguments are a NoneType"]),
    "content not text": (airline, lambda r: _messages(r)[4].update(content={"message": "x"}),
                         ["message 4", "content is a dict"]),
    "requestor is not the caller": (telecom, lambda r: _messages(r)[4].update(
        requestor="assistant"), ["message 4", "requestor assistant", "issued by the user"]),
    "call requestor is not the message's role": (
        telecom, lambda r: _messages(r)[3]["tool_calls"][0].update(requestor="assistant"),
        ["message 3, tool call 0", "requestor assistant in a user message"]),
    "tool message with calls": (airline, lambda r: _messages(r)[3].update(
        tool_calls=[{"id": "z", "name": "f", "arguments": {}}]),
        ["a tool message with tool_calls"]),
    "tool message without id": (airline, lambda r: _messages(r)[3].pop("id"),
                                ["message 3", "without the id of the call it answers"]),
    "call without a name": (airline, lambda r: _messages(r)[2]["tool_calls"][0].pop("name"),
                            ["tool call 0", "without a tool name"]),
    "call without an id": (airline, lambda r: _messages(r)[2]["tool_calls"][0].pop("id"),
                           ["tool call 0 (get_booking): has no id"]),
    "tool_calls not a list": (airline, lambda r: _messages(r)[2].update(tool_calls={"id": "x"}),
                              ["message 2", "tool_calls is a dict"]),
    "message not an object": (airline, lambda r: _messages(r).insert(0, "hello"),
                              ["message 0", "expected a message object, got str"]),
    "no messages": (airline, lambda r: r["simulations"][0].update(messages=[]),
                    ["simulation 0 (task 7, trial 0)", "'messages' is not a non-empty list"]),
    "task not in the file": (airline, lambda r: r["simulations"][0].update(task_id="99"),
                             ["(task 99, trial 0)", "not among the file's tasks"]),
    "trial not a number": (airline, lambda r: r["simulations"][0].update(trial="zero"),
                           ["simulation 0 (task 7)", "'trial' is zero"]),
    "no agent model": (airline, lambda r: r["info"]["agent_info"].pop("llm"),
                       ["info.agent_info.llm", "the agent model is missing"]),
    "no implementation": (airline, lambda r: r["info"]["agent_info"].update(implementation=3),
                          ["info.agent_info.implementation", "implementation is missing"]),
    "slash in the implementation": (
        airline, lambda r: r["info"]["agent_info"].update(implementation="team/agent"),
        ["info.agent_info.implementation", "holds a '/'"]),
    "no domain": (airline, lambda r: r["info"]["environment_info"].pop("domain_name"),
                  ["info.environment_info.domain_name", "the domain is missing"]),
    "no info": (airline, lambda r: r.pop("info"), ["has no 'info' object"]),
    "duplicate task": (airline, lambda r: r["tasks"].append(dict(r["tasks"][0])),
                       ["task 1: task id 7 appears twice"]),
    "expected action without a name": (
        airline, lambda r: r["tasks"][0]["evaluation_criteria"]["actions"][0].pop("name"),
        ["simulation 0 (task 7, trial 0), expected action 0", "with a tool name"]),
    "expected action of nobody": (
        airline, lambda r: r["tasks"][0]["evaluation_criteria"]["actions"][0].update(
            requestor="robot"), ["expected action 0 (get_booking)", "requestor 'robot'"]),
    "reward not a number": (airline, lambda r: r["simulations"][0]["reward_info"].update(
        reward="full"), ["reward_info.reward is full"]),
    "control character in the model": (
        airline, lambda r: r["info"]["agent_info"].update(llm="gpt\x1b[2J"),
        ["info.agent_info.llm", "control character"]),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_malformed_file_ends_in_one_line_naming_the_file_run_and_message(tmp_path, case):
    make, change, expected = HOSTILE[case]
    src = write(tmp_path / "hostile.json", _edit(make, change))
    out = tmp_path / "c.jsonl"
    res = runner.invoke(app, ["ingest", "tau2", str(src), "--out", str(out)])
    assert res.exit_code == ExitCode.BAD_INPUT, res.output
    line = error_line(res)
    assert str(src) in line
    for part in expected:
        assert part in line, (part, line)
    assert not out.exists() and list(tmp_path.iterdir()) == [src]  # nothing half-written


def test_an_id_may_be_reused_once_its_call_is_answered(tmp_path):
    run = airline()
    extra = [{"role": "assistant", "tool_calls": [{"id": "call_b", "name": "get_booking",
                                                   "arguments": {"booking_id": "BK8"},
                                                   "requestor": "assistant"}]},
             {"id": "call_b", "role": "tool", "requestor": "assistant", "content": "{}"}]
    _messages(run)[4:4] = extra
    (conv,) = read_tau2(write(tmp_path / "air.json", run))
    assert conv.call_turn(4) == 3 and conv.call_turn(6) == 5  # each the latest call


def test_an_error_result_and_a_run_without_reward_read(tmp_path):
    run = airline()
    _messages(run)[3].update(error=True, content="Error: booking not found")
    run["simulations"][0]["reward_info"] = None
    run["tasks"][0]["evaluation_criteria"] = None
    (conv,) = read_tau2(write(tmp_path / "air.json", run))
    assert conv.turns[4].content == "Error: booking not found"
    assert "reward" not in conv.metadata and "expected_actions" not in conv.metadata


def test_the_support_conversation_reads_as_in_every_other_format():
    """tests/transcripts/tau2/support.tau2.json is the support conversation of
    tests/transcripts/logs in tau2's shape: the same turns as the chat log's after the system
    turn, which tau2 rebuilds from the policy (the chat log's system prompt)."""
    here = Path(__file__).parent
    chat = read_conversations(here / "logs" / "support.chat.json")[0]
    (tau2,) = read_conversations(here / "tau2" / "support.tau2.json")
    assert tau2.turns[1:] == chat.turns[1:]
    assert tau2.turns[0].content.endswith(f"<policy>\n{chat.turns[0].content}\n</policy>")
