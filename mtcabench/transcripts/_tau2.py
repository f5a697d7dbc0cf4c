"""tau2-bench results files: one JSON object ``{info, tasks, simulations}``, every simulation
a conversation (``ingest tau2``, ``ingest transcripts``, ``explain``; the Tracer takes its
messages one at a time).

The mapping, beside the one every format follows (:mod:`mtcabench.transcripts`):

- **Turn 0 is rebuilt**: the file does not hold the system prompt. tau2's default agent
  (``info.agent_info.implementation`` ``llm_agent``) builds it from the domain's policy
  (``info.environment_info.policy``) as ``<instructions>\\n{instruction}\\n</instructions>\\n
  <policy>\\n{policy}\\n</policy>``, with the agent instruction of the tau2 version that ran
  (:data:`INSTRUCTIONS`, by ``info.git_commit``); so is turn 0 here, and
  ``metadata.system_turn`` says so (``{rebuilt: true, template: llm_agent, instruction}``).
  Other agents (``experimental_agent``, ``ironforge``, ``whissle``, ...) used prompts of
  their own that the file does not hold: turn 0 is the policy alone, and
  ``metadata.system_turn`` says that (``{rebuilt: true, template: policy-only}``).
- **Messages in order**, the agent's greeting first: ``assistant`` and ``user`` messages are
  their turns, their content kept exactly as written (some agents write JSON objects,
  ``{"message": ...}``: span offsets index what the model produced); ``tool_calls`` are
  ``{id, name, arguments (an object), requestor}``. A **user's** calls (telecom: the user
  toggles settings on their own phone) are calls of the user turn.
- **A tool message** (``{role: tool, id, content, requestor, error}``) answers the call with
  its ``id``, issued by the turn whose role its ``requestor`` names; an error result's
  content is its message.
- **Refused**, one line naming the file, the simulation and the message: a result answering
  no call or a call already answered, a call id reused while its call is unanswered (ids may
  be reused once answered, as some agents do), a requestor that is not the caller, an
  unknown role, content that is not text, arguments that are not an object, a missing
  policy, domain, agent model or implementation (a domain or implementation holding ``/``:
  they are parts of the ids), a task the file's tasks do not hold.

Ids: ``tau2/<domain>/<agent model>/<implementation>/task-<task>/trial-<trial>``, so that two
submissions of one model (claude-opus-4-6 by two agents) do not collide. Metadata, by name
(:data:`~mtcabench.model.METADATA_KEYS`): origin (file, run position, simulation id), reward,
termination reason, the task's expected actions and outputs, how turn 0 was made; never the
run's settings (``info``, ``llm_args``: one upstream file holds a provider key there).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mtcabench.errors import InputError
from mtcabench.model import (Conversation, Turn, agent_model_name, conversation_metadata,
                             domain_name)
from mtcabench.transcripts._registry import NO, PLAUSIBLE, SURE, LogFormat, register_format
from mtcabench.transcripts._source import Source, load_json
from mtcabench.transcripts._tasks import expected_actions, expected_outputs
from mtcabench.transcripts._turns import (CallList, TurnBuilder, checked_name, tool_call,
                                          trial_number)

NAME, TITLE = "tau2", "tau2-bench"
#: What the conversations are recorded as (``Conversation.source``, the ids' first part).
SOURCE = "tau2"
#: tau2's default agent: the one whose system prompt the file lets us rebuild.
DEFAULT_AGENT = "llm_agent"
#: tau2's default agent's system prompt (``tau2/agent/llm_agent.py``, SYSTEM_PROMPT).
SYSTEM_TEMPLATE = "<instructions>\n{instruction}\n</instructions>\n<policy>\n{policy}\n</policy>"
#: The default agent's instruction (``AGENT_INSTRUCTION``), by the tau2 commit it is quoted
#: from: the released text (main since June 2025), and the text of the model-training branch
#: whose runs (commit b02b509, August 2025) are among the upstream experiments.
INSTRUCTIONS = {
    "37199f3": (
        "You are a customer service agent that helps the user according to the <policy> "
        "provided below.\nIn each turn you can either:\n- Send a message to the user.\n"
        "- Make a tool call.\nYou cannot do both at the same time.\n\nTry to be helpful and "
        "always follow the policy. Always make sure you generate valid JSON only."),
    "b02b509": (
        "You are a customer service agent that helps the user according to the <policy> "
        "provided below.\nDuring each turn you can either:\n- Send a message to the user.\n"
        "- Make a tool call.\nIMPORTANT: You cannot do both at the same time!!\nIf you send "
        "text content while making a tool call, the agent will raise an error.\nText content "
        "will be sent to the user. Do not use this field for your own reasoning.\n\nTry to be "
        "helpful and always follow the policy. Always make sure you generate valid JSON only."),
}
#: The instruction of a run's tau2 version (``info.git_commit``); any other: the released one.
INSTRUCTION_OF_COMMIT = {"b02b509367e8436f956c334741ac7cf7c9f5dabe": "b02b509"}
RELEASED_INSTRUCTION = "37199f3"
#: The roles of a simulation's messages (tau2 keeps the system prompt out of them).
ROLES = ("assistant", "user", "tool")
_FIX = "fix the tool message's id"


def conversation_id(domain: str, model: str, implementation: str, task_id: str,
                    trial: int) -> str:
    """Stable id of a tau2 simulation: source, domain, agent model, implementation, task, trial."""
    return f"{SOURCE}/{domain}/{model}/{implementation}/task-{task_id}/trial-{trial}"


def system_turn(policy: str, implementation: str, commit: Any) -> tuple[str, dict[str, Any]]:
    """Turn 0's text and ``metadata.system_turn`` (see the module docstring)."""
    if implementation != DEFAULT_AGENT:
        return policy, {"rebuilt": True, "template": "policy-only"}
    key = INSTRUCTION_OF_COMMIT.get(commit, RELEASED_INSTRUCTION) if isinstance(
        commit, str) else RELEASED_INSTRUCTION
    text = SYSTEM_TEMPLATE.format(instruction=INSTRUCTIONS[key], policy=policy)
    return text, {"rebuilt": True, "template": DEFAULT_AGENT, "instruction": key}


def _shown(value: Any) -> str:
    """A value of the input inside a message: as it is (cut after 40 characters: a 5,000-digit
    id is named, not repeated), or escaped if it would break the line."""
    text = str(value)
    text = text if len(text) <= 40 else text[:37] + "..."
    return text if text.isprintable() else repr(text)


def _object(parent: Any, key: str, where: str) -> dict:
    value = parent.get(key) if isinstance(parent, dict) else None
    if not isinstance(value, dict):
        raise InputError(f"{where}: has no {key!r} object; is this a tau2-bench results file "
                         "({info, tasks, simulations})?")
    return value


def _name(parent: dict, key: str, where: str, what: str, *, segment: bool = True) -> str:
    """A name the file gives; ``segment``: one part of the ids, so no ``/`` (an agent model
    may hold one, ``deepseek/deepseek-chat``: the parts around it are fixed)."""
    value = parent.get(key)
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{where}.{key}: {what} is missing (got {_shown(value)}); a "
                         "tau2-bench results file names it")
    if not value.isprintable():
        raise InputError(f"{where}.{key}: {what} {value!r} holds a control character")
    if segment and "/" in value:
        raise InputError(f"{where}.{key}: {what} {value!r} holds a '/', which would make "
                         "conversation ids ambiguous")
    return value


class _Run:
    """What every simulation of one results file shares: its settings, read by name."""

    def __init__(self, path: Path, value: Any):
        self.path = path
        if not isinstance(value, dict):
            raise InputError(f"{path} ({TITLE}): expected a results object {{info, tasks, "
                             f"simulations}}, got {type(value).__name__}")
        info = _object(value, "info", f"{path}")
        env = _object(info, "environment_info", f"{path}: info")
        agent = _object(info, "agent_info", f"{path}: info")
        self.domain = checked_name(domain_name, _name(env, "domain_name",
                                   f"{path}: info.environment_info", "the domain"),
                                   f"{path}: info.environment_info.domain_name")
        policy = env.get("policy")
        if not isinstance(policy, str) or not policy.strip():
            got = "empty text" if isinstance(policy, str) else type(policy).__name__
            raise InputError(f"{path}: info.environment_info.policy is missing (got {got}); "
                             "the system turn is rebuilt from the domain's policy")
        self.model = checked_name(agent_model_name, _name(
            agent, "llm", f"{path}: info.agent_info", "the agent model", segment=False),
            f"{path}: info.agent_info.llm")
        self.implementation = _name(agent, "implementation", f"{path}: info.agent_info",
                                    "the agent implementation")
        self.system, self.system_meta = system_turn(policy, self.implementation,
                                                    info.get("git_commit"))
        self.tasks = self._tasks(value.get("tasks"))
        sims = value.get("simulations")
        if not isinstance(sims, list):
            raise InputError(f"{path}: 'simulations' is not a list of runs")
        self.simulations = sims

    def _tasks(self, tasks: Any) -> dict[str, dict]:
        if not isinstance(tasks, list):
            raise InputError(f"{self.path}: 'tasks' is not a list; a results file holds its "
                             "tasks")
        out: dict[str, dict] = {}
        for k, task in enumerate(tasks):
            tid = task_key(task.get("id") if isinstance(task, dict) else None)
            if tid is None:
                raise InputError(f"{self.path}: task {k}: expected an object with an 'id'")
            if tid in out:
                raise InputError(f"{self.path}: task {k}: task id {_shown(tid)} appears twice")
            out[tid] = task
        return out


def task_key(value: Any) -> str | None:
    """A task id as text (tau2's ids are text; a whole number is read as its digits)."""
    if isinstance(value, str) and value:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _simulation(run: _Run, k: int, sim: Any) -> Conversation:
    where = f"{run.path}: simulation {k}"
    if not isinstance(sim, dict):
        raise InputError(f"{where}: expected an object, got {type(sim).__name__}")
    task_id, trial = task_key(sim.get("task_id")), sim.get("trial")
    if task_id is None:
        raise InputError(f"{where}: has no task_id")
    if not isinstance(trial, int) or isinstance(trial, bool) or trial < 0:
        raise InputError(f"{where} (task {_shown(task_id)}): 'trial' is {_shown(trial)}, "
                         "expected a whole number")
    trial = trial_number(trial, f"{where} (task {_shown(task_id)})")  # bounded
    where += f" (task {_shown(task_id)}, trial {trial})"
    task = run.tasks.get(task_id)
    if task is None:
        raise InputError(f"{where}: its task is not among the file's tasks")
    messages = sim.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InputError(f"{where}: 'messages' is not a non-empty list of messages")
    cid = conversation_id(run.domain, run.model, run.implementation, task_id, trial)
    builder = TurnBuilder(f"{where} ({cid})")
    builder.system(run.system, f"{where}, the rebuilt system turn")
    for j, m in enumerate(messages):
        read_message(builder, m, f"{where}, message {j}")
    return builder.conversation(
        id=cid, source=SOURCE, domain=run.domain, agent_model=run.model,
        agent_implementation=run.implementation, task_id=task_id, trial=trial,
        metadata=_metadata(run, k, sim, task, where))


def _metadata(run: _Run, k: int, sim: dict, task: dict, where: str) -> dict[str, Any]:
    reward_info = sim.get("reward_info")
    reward = reward_info.get("reward") if isinstance(reward_info, dict) else None
    if reward is not None and (isinstance(reward, bool) or not isinstance(reward, (int, float))):
        raise InputError(f"{where}: reward_info.reward is {_shown(reward)}, expected a number")
    reason = sim.get("termination_reason")
    if reason is not None and not (isinstance(reason, str) and reason.isprintable()):
        raise InputError(f"{where}: termination_reason is {_shown(reason)}, expected text")
    criteria = task.get("evaluation_criteria")
    criteria = criteria if isinstance(criteria, dict) else {}
    sid = sim.get("id")
    origin = {"file": run.path.name, "format": NAME, "run": k}
    if isinstance(sid, str) and sid.isprintable():
        origin["simulation_id"] = sid
    return conversation_metadata(
        origin=origin, reward=reward, termination_reason=reason,
        expected_actions=expected_actions(criteria.get("actions"), where,
                                          arguments="arguments"),
        expected_outputs=expected_outputs(criteria.get("communicate_info"), where),
        system_turn=run.system_meta)


def _content(message: dict, here: str) -> str:
    content = message.get("content")
    if content is None:
        return ""
    if not isinstance(content, str):
        raise InputError(f"{here}: content is a {type(content).__name__}; a tau2-bench "
                         "message's content is text or null")
    return content


def _calls(builder: TurnBuilder, raw: Any, role: str, here: str) -> CallList:
    calls = CallList()
    if raw is None:
        return calls
    if not isinstance(raw, list):
        raise InputError(f"{here}: tool_calls is a {type(raw).__name__}; expected a list")
    for k, c in enumerate(raw):
        at = f"{here}, tool call {k}"
        if not isinstance(c, dict):
            raise InputError(f"{at}: expected {{id, name, arguments, requestor}}, got "
                             f"{type(c).__name__}")
        args = c.get("arguments")
        if not isinstance(args, dict):
            raise InputError(f"{at} ({_shown(c.get('name'))}): arguments are a "
                             f"{type(args).__name__}; tau2-bench writes them as an object")
        requestor = c.get("requestor", role)
        if requestor != role:
            raise InputError(f"{at}: requestor {_shown(requestor)} in a {role} message; a "
                             "call's requestor is the role of the message issuing it")
        call_id = c.get("id")
        if isinstance(call_id, str) and builder.is_open(call_id):
            raise InputError(f"{at}: call id {call_id!r} reused while the earlier call with "
                             "that id is unanswered; a result could answer either")
        calls.append(tool_call(call_id, c.get("name"), args, at, calls))
    return calls


def read_message(builder: TurnBuilder, message: Any, here: str) -> Turn:
    """Add the turn of one tau2 message to ``builder``."""
    if not isinstance(message, dict):
        raise InputError(f"{here}: expected a message object, got {type(message).__name__}")
    role = message.get("role")
    if role not in ROLES:
        raise InputError(f"{here}: unknown role {_shown(role)}; a tau2-bench simulation holds "
                         "assistant, user and tool messages")
    content = _content(message, here)
    if role != "tool":
        calls = _calls(builder, message.get("tool_calls"), role, here)
        if role == "assistant":
            return builder.assistant(content, calls, here)
        return builder.user(content, here, calls)
    if message.get("tool_calls"):
        raise InputError(f"{here}: a tool message with tool_calls; only assistant and user "
                         "messages issue calls")
    call_id = message.get("id")
    if not isinstance(call_id, str) or not call_id:
        raise InputError(f"{here}: a tool message without the id of the call it answers")
    caller = builder.caller(call_id)
    if caller is not None and not builder.is_open(call_id):
        raise InputError(f"{here}: answers call {call_id!r}, which an earlier tool message "
                         "already answered; each call has one result")
    requestor = message.get("requestor")
    if caller is not None and requestor is not None and requestor != caller.value:
        raise InputError(f"{here}: requestor {_shown(requestor)}, but call {call_id!r} was "
                         f"issued by the {caller.value}")
    return builder.tool(call_id, content, here, fix=_FIX)


def read_tau2(path: str | Path) -> list[Conversation]:
    """Every simulation of a tau2-bench results file as a validated Conversation (``ingest
    tau2``)."""
    path = Path(path)
    return read_results(path, load_json(path))


def read_results(path: Path, value: Any) -> list[Conversation]:
    """The conversations of a results file's parsed value (``path`` names it)."""
    run = _Run(path, value)
    if not run.simulations:
        raise InputError(f"{path}: no simulations; nothing to read")
    return [_simulation(run, k, sim) for k, sim in enumerate(run.simulations)]


# --------------------------------------------------------------------------- the format


def _sniff(source: Source) -> int:
    value = source.value
    if not isinstance(value, dict) or source.json_lines or "simulations" not in value:
        return NO
    # A results file whose simulations are not a list is still one: the reader names what is
    # wrong (as `ingest tau2` does), rather than "not a transcript of a known format".
    return SURE if isinstance(value["simulations"], list) else PLAUSIBLE


def _read(source: Source) -> list[Conversation]:
    return read_results(source.path or Path("results.json"), source.value)


def _sniff_message(message: Any) -> int:
    """A tau2 message has its marks where it names a requestor: a tool result's own
    ``requestor``, or its calls' (plain text messages read alike as chat messages)."""
    if not isinstance(message, dict) or message.get("role") not in ROLES:
        return NO
    calls = message.get("tool_calls")
    marked = "requestor" in message or (isinstance(calls, list) and any(
        isinstance(c, dict) and "requestor" in c for c in calls))
    return SURE if marked else NO


def _read_turns(builder: TurnBuilder, message: Any, here: str) -> list[Turn]:
    return [read_message(builder, message, here)]


register_format(LogFormat(
    NAME, TITLE, "a results file {info, tasks, simulations: [{messages}]}, every simulation "
    "a conversation, the system turn rebuilt from the policy", _sniff, _read, order=62,
    sniff_message=_sniff_message, read_message=_read_turns))
