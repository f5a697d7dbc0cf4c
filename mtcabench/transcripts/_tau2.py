"""tau2-bench runs, in the three layouts tau2 has written them, every simulation a
conversation (``ingest tau2``, ``ingest transcripts``, ``explain``; the Tracer takes their
messages one at a time).

**Layouts** (each file's is told from its shape):

- **results** ``{info, tasks, simulations}``: the run's settings in ``info`` (domain
  ``environment_info.domain_name``, policy ``environment_info.policy``, agent model
  ``agent_info.llm``, agent ``agent_info.implementation``), the tasks with their ground truth.
- **wrapper** ``{domain, agent, model, total_tasks, passed, pass_rate, simulations}``
  (later tau2 versions): no ``info``, no ``tasks``; each simulation carries its own
  ``policy``.
- **bare list** of such simulations: nothing names the domain, the agent or the model. The
  agent model comes from the user (``--agent-model``; no file name is read for it), the
  domain from ``--domain`` or else from the title of each run's policy (``# Medical Triage
  Agent Policy`` -> ``medical_triage``) checked against its tools
  (:mod:`~mtcabench.transcripts._domains`); the agent from ``--agent-implementation``, else
  none (the record's ``agent_implementation`` is None, its id says ``unnamed``). A file that
  records a name refuses a flag that gives another one.

The mapping, beside the one every format follows (:mod:`mtcabench.transcripts`):

- **Turn 0 is rebuilt**: no file holds the system prompt. It is made from the policy the run
  was given: a simulation's own ``policy`` where it has one, else its file's (``info``'s; in
  the later layouts, an error run without one gets the policy its file's runs share,
  ``metadata.system_turn.policy_from`` says so). tau2's default agent
  (``llm_agent``) builds it as ``<instructions>\n{instruction}\n</instructions>\n
  <policy>\n{policy}\n</policy>``, with the agent instruction of the tau2 version that ran
  (:data:`INSTRUCTIONS`, by ``info.git_commit``); tau2's solo agent (``llm_agent_solo``, a
  ticket worked with no user) adds ``<ticket>\n{the task's ticket}\n</ticket>`` after the
  policy (:data:`SOLO_TEMPLATE`); ``metadata.system_turn`` says which (``{rebuilt: true,
  template, instruction}``). Other agents (``experimental_agent``, ``ironforge``,
  ``whissle``, ``adaptive_agent``, ...) used prompts of their own that the file does not
  hold: turn 0 is the policy alone (``{rebuilt: true, template: policy-only}``).
- **Messages in order**, the agent's greeting first: ``assistant`` and ``user`` messages are
  their turns, their content kept exactly as written (some agents write JSON objects,
  ``{"message": ...}``: span offsets index what the model produced); ``tool_calls`` are
  ``{id, name, arguments (an object), requestor}``. A **user's** calls (telecom: the user
  toggles settings on their own phone) are calls of the user turn. A solo run has no user
  turn at all. Only these fields are read, by name: a message's ``raw_data`` (the provider's
  response), ``usage``, ``cost``, timing and speech fields, a simulation's ``info``, costs,
  reviews and settings, and a wrapper's tallies never reach a record.
- **A tool message** (``{role: tool, id, content, requestor, error}``) answers the call with
  its ``id``, issued by the turn whose role its ``requestor`` names; an error result's
  content is its message.
- **An error run** (``reward_info`` null, and no messages: the run never started) is read as
  its system turn alone and marked ``metadata.unscored``; a scored run without messages is
  refused. A run with ``reward_info`` null and messages is read as any other, marked alike.
- **Refused**, one line naming the file, the simulation and the message: a result answering
  no call or a call already answered, a call id reused while its call is unanswered (ids may
  be reused once answered, as some agents do), a requestor that is not the caller, an
  unknown role, content that is not text, arguments that are not an object, a missing
  policy, domain, agent model or implementation (a domain or implementation holding ``/``:
  they are parts of the ids), a task the file's tasks do not hold, a solo run whose task
  has no ticket, a bare list whose domain nothing tells; a domain or agent model (from the
  file, a flag or a policy's title) that breaks the name rule (:mod:`mtcabench.model._names`:
  every name is normalised by it before it goes into an id, and a flag is compared with what
  the file records once both are); a trial past the release's bound.

Ids: ``tau2/<domain>/<agent model>/<implementation>/task-<task>/trial-<trial>``, so that two
submissions of one model (claude-opus-4-6 by two agents) do not collide. Metadata, by name
(:data:`~mtcabench.model.METADATA_KEYS`): origin (file, run position, simulation id, and the
layout where it is not the results file), reward, unscored, termination reason, the task's
expected actions and outputs (results files: the later layouts hold no tasks), how turn 0
was made; never the run's settings (``info``, ``llm_args``: one upstream file holds a
provider key there).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtcabench.errors import InputError
from mtcabench.model import (Conversation, Turn, agent_model_name, conversation_metadata,
                             domain_name)
from mtcabench.transcripts._domains import policy_domain, run_domain
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
#: Each commit's ``AGENT_INSTRUCTION`` was read at that commit (1a7f63a: the qwen2.5 retries,
#: 4df5527: the solo runs' version, both of the model-training branch's text).
INSTRUCTION_OF_COMMIT = {"b02b509367e8436f956c334741ac7cf7c9f5dabe": "b02b509",
                         "1a7f63af36313b9e8f12acf0f0f7a1c1af1796b6": "b02b509",
                         "4df5527c67c90f6d0afc05b89cc7415952c2c11d": "b02b509"}
RELEASED_INSTRUCTION = "37199f3"
#: tau2's agent that works a task's ticket alone, with no user (``LLMSoloAgent``): its system
#: prompt (SYSTEM_PROMPT_SOLO) holds the task's ticket after the policy.
SOLO_AGENT = "llm_agent_solo"
SOLO_TEMPLATE = ("<instructions>\n{instruction}\n</instructions>\n<policy>\n{policy}\n"
                 "</policy>\n<ticket>\n{ticket}\n</ticket>")
#: The solo agent's instruction (AGENT_SOLO_INSTRUCTION, its stop tool ``done`` filled in), the
#: same text at both commits of the upstream solo runs (b02b509, 4df5527).
SOLO_INSTRUCTION = (
    "You are a customer service agent that helps the user according to the <policy> provided "
    "below.\nYou will be provided with a <ticket> that contains the user's request.\nYou will "
    "need to plan and call the appropriate tools to solve the ticket.\n\nYou cannot "
    "communicate with the user, only make tool calls.\nOnly tool calls are allowed, do not "
    "output anything else.\n\nStop when you consider that you have solved the ticket.\nTo do "
    "so, send a message containing a single tool call to the `done` tool. Do not include any "
    "other tool calls in this last message.\n\nAlways follow the policy. Always make sure you "
    "generate valid JSON only.")
#: The id part of an agent implementation that a bare list of simulations does not name (and
#: ``--agent-implementation`` did not give); the record's ``agent_implementation`` is None.
UNNAMED = "unnamed"
#: The roles of a simulation's messages (tau2 keeps the system prompt out of them).
ROLES = ("assistant", "user", "tool")
_FIX = "fix the tool message's id"
#: The three layouts, as errors name them.
LAYOUTS = ("a results object {info, tasks, simulations}, a wrapper {domain, agent, model, "
           "simulations} or a bare list of simulations")


def conversation_id(domain: str, model: str, implementation: str, task_id: str,
                    trial: int) -> str:
    """Stable id of a tau2 simulation: source, domain, agent model, implementation, task, trial."""
    return f"{SOURCE}/{domain}/{model}/{implementation}/task-{task_id}/trial-{trial}"


def system_turn(policy: str, implementation: str | None, commit: Any,
                ticket: str | None = None) -> tuple[str, dict[str, Any]]:
    """Turn 0's text and ``metadata.system_turn`` (see the module docstring)."""
    if implementation == SOLO_AGENT and ticket is not None:
        return (SOLO_TEMPLATE.format(instruction=SOLO_INSTRUCTION, policy=policy, ticket=ticket),
                {"rebuilt": True, "template": SOLO_AGENT, "instruction": "solo"})
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
                         f"({LAYOUTS})?")
    return value


def _checked(value: Any, at: str, what: str, *, segment: bool = True,
             fix: str = "a tau2-bench results file names it") -> str:
    """A name the file (or a flag) gives; ``segment``: one part of the ids, so no ``/`` (an
    agent model may hold one, ``deepseek/deepseek-chat``: the parts around it are fixed)."""
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{at}: {what} is missing (got {_shown(value)}); {fix}")
    if not value.isprintable():
        raise InputError(f"{at}: {what} {value!r} holds a control character")
    if segment and "/" in value:
        raise InputError(f"{at}: {what} {value!r} holds a '/', which would make "
                         "conversation ids ambiguous")
    return value


def _name(parent: dict, key: str, where: str, what: str, *, segment: bool = True) -> str:
    return _checked(parent.get(key), f"{where}.{key}", what, segment=segment)


def _domain(value: str, at: str) -> str:
    """A domain by the name rule (:func:`~mtcabench.model.domain_name`), normalised before it
    goes into an id (``Airline `` is ``airline``); one line naming ``at`` otherwise."""
    return checked_name(domain_name, value, at)


def _model(value: str, at: str) -> str:
    """An agent model by the name rule (:func:`~mtcabench.model.agent_model_name`)."""
    return checked_name(agent_model_name, value, at)


@dataclass
class Given:
    """What the user names for a file that does not record it (``ingest tau2``'s flags)."""

    domain: str | None = None
    agent_model: str | None = None
    agent_implementation: str | None = None

    def checked(self) -> Given:
        """The flags checked, the domain and agent model normalised by the name rule (so that
        they compare with what a file records, normalised alike)."""
        for value, flag, what, segment in (
                (self.domain, "--domain", "the domain", True),
                (self.agent_model, "--agent-model", "the agent model", False),
                (self.agent_implementation, "--agent-implementation",
                 "the agent implementation", True)):
            if value is not None:
                _checked(value, flag, what, segment=segment)
        return Given(None if self.domain is None else _domain(self.domain, "--domain"),
                     None if self.agent_model is None else _model(self.agent_model,
                                                                  "--agent-model"),
                     self.agent_implementation)


def _recorded(path: Path, recorded: str, given: str | None, flag: str, what: str) -> str:
    """A name the file records; a flag naming another is refused (the file knows better)."""
    if given is not None and given != recorded:
        raise InputError(f"{path}: the file records {what} {recorded!r}, but {flag} gives "
                         f"{given!r}; ingest it without {flag} (or apart from the files that "
                         "need it)")
    return recorded


def _policy(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


class _Run:
    """What every simulation of one file shares, read by name in each layout (see the module
    docstring): ``layout`` ``results``, ``wrapper`` or ``list``."""

    def __init__(self, path: Path, value: Any, given: Given | None = None):
        self.path = path
        given = (given or Given()).checked()
        self.given = given
        self.report: Callable[[str], None] | None = None
        self.tasks: dict[str, dict] | None = None
        self.policy: str | None = None  # the file's policy (results: info's)
        self.commit: Any = None
        self.domain: str | None = None
        if isinstance(value, list):
            self.layout, sims = "list", value
            self.model = given.agent_model
            if self.model is None:
                raise InputError(f"{path} ({TITLE}): a bare list of simulations does not record "
                                 "its agent model; pass --agent-model (and "
                                 "--agent-implementation to name the agent)")
            self.implementation = given.agent_implementation
        elif isinstance(value, dict) and "info" not in value and \
                {"domain", "agent", "model"} & value.keys():
            # (simulations that are not a list are named below, as in a results file)
            self.layout, sims = "wrapper", value.get("simulations")
            self.domain = _recorded(path, _domain(_checked(value.get("domain"),
                                                           f"{path}: 'domain'", "the domain"),
                                                  f"{path}: 'domain'"),
                                    given.domain, "--domain", "the domain")
            self.model = _recorded(path, _model(_checked(value.get("model"), f"{path}: 'model'",
                                                         "the agent model", segment=False),
                                                f"{path}: 'model'"),
                                   given.agent_model, "--agent-model", "the agent model")
            self.implementation = _recorded(
                path, _checked(value.get("agent"), f"{path}: 'agent'",
                               "the agent implementation"),
                given.agent_implementation, "--agent-implementation", "the agent")
        elif isinstance(value, dict):
            self.layout = "results"
            sims = self._results(value, given)
        else:
            raise InputError(f"{path} ({TITLE}): expected {LAYOUTS}, got "
                             f"{type(value).__name__}")
        if not isinstance(sims, list):
            raise InputError(f"{path}: 'simulations' is not a list of runs")
        self.simulations = sims
        if self.layout != "results":
            # A run without a policy of its own (an error run) was given the one its file's
            # other runs share; the domain of a bare list is the one their titles name.
            policies = {p for s in sims if isinstance(s, dict) and (p := _policy(s.get("policy")))}
            self.policy = next(iter(policies)) if len(policies) == 1 else None
        self._systems: dict[tuple[str, str | None], tuple[str, dict[str, Any]]] = {}

    def _results(self, value: dict, given: Given) -> Any:
        path = self.path
        info = _object(value, "info", f"{path}")
        env = _object(info, "environment_info", f"{path}: info")
        agent = _object(info, "agent_info", f"{path}: info")
        self.domain = _recorded(path, _domain(_name(env, "domain_name",
                                                    f"{path}: info.environment_info",
                                                    "the domain"),
                                              f"{path}: info.environment_info.domain_name"),
                                given.domain, "--domain", "the domain")
        policy = env.get("policy")
        if not isinstance(policy, str) or not policy.strip():
            got = "empty text" if isinstance(policy, str) else type(policy).__name__
            raise InputError(f"{path}: info.environment_info.policy is missing (got {got}); "
                             "the system turn is rebuilt from the domain's policy")
        self.policy = policy
        self.model = _recorded(path, _model(_name(agent, "llm", f"{path}: info.agent_info",
                                                  "the agent model", segment=False),
                                            f"{path}: info.agent_info.llm"),
                               given.agent_model, "--agent-model", "the agent model")
        self.implementation = _recorded(
            path, _name(agent, "implementation", f"{path}: info.agent_info",
                        "the agent implementation"),
            given.agent_implementation, "--agent-implementation", "the agent")
        self.commit = info.get("git_commit")
        self.tasks = self._tasks(value.get("tasks"))
        return value.get("simulations")

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

    def domain_of(self, sim: dict, where: str) -> str:
        """The domain of one simulation: the file's; in a bare list, --domain, else the one
        its policy's title names (and its tools do not contradict), else the one its file's
        other runs' policies share."""
        if self.domain is not None:
            return self.domain
        policy = _policy(sim.get("policy"))
        found = policy_domain(policy) if self.given.domain is not None else run_domain(
            policy, _tools(sim), where)
        if self.given.domain is not None:
            if found is not None and found != self.given.domain and self.report is not None:
                self.report(f"{self.path}: domain {self.given.domain!r} as given by --domain; "
                            f"the runs' policy names {found!r}")
                self.report = None  # said once per file
            return self.given.domain
        if found is None and policy is None:
            found = policy_domain(self.policy)
        if found is None:
            raise InputError(f"{where}: cannot tell the domain: a bare list of simulations does "
                             "not record it, its policy has no '# <Domain> agent policy' title "
                             "and its tools are no known domain's; pass --domain")
        return _domain(_checked(found, f"{where}: the policy's title", "the domain"),
                       f"{where}: the policy's title")

    def system(self, sim: dict, task: dict | None, where: str) -> tuple[str, dict[str, Any]]:
        """Turn 0 of one simulation and how it was made: its own policy where it has one,
        else its file's."""
        own = _policy(sim.get("policy"))
        policy = own or self.policy
        if policy is None:
            raise InputError(f"{where}: has no policy, and the runs of its file do not share "
                             "one; the system turn is the policy the run was given")
        ticket = task.get("ticket") if isinstance(task, dict) else None
        if self.implementation == SOLO_AGENT and not (isinstance(ticket, str) and ticket.strip()):
            raise InputError(f"{where}: its task has no 'ticket'; the solo agent's system "
                             "prompt is the policy and the task's ticket")
        key = (policy, ticket if self.implementation == SOLO_AGENT else None)
        if key not in self._systems:
            self._systems[key] = system_turn(policy, self.implementation, self.commit, key[1])
        text, meta = self._systems[key]
        if own is None and self.layout != "results":
            meta = {**meta, "policy_from": "the file's other runs"}
        return text, meta


def _tools(sim: dict) -> list[str]:
    """The names of the tools a simulation called, as given (read and checked later)."""
    messages = sim.get("messages")
    return [c["name"] for m in (messages if isinstance(messages, list) else [])
            if isinstance(m, dict) and isinstance(m.get("tool_calls"), list)
            for c in m["tool_calls"] if isinstance(c, dict) and isinstance(c.get("name"), str)]


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
    task = None
    if run.tasks is not None:
        task = run.tasks.get(task_id)
        if task is None:
            raise InputError(f"{where}: its task is not among the file's tasks")
    messages = sim.get("messages")
    unscored = sim.get("reward_info") is None
    # A run that never started (an infrastructure error: no reward, no messages) is read as its
    # system turn alone, marked unscored; a scored run without messages is a broken file.
    if not isinstance(messages, list) or not (messages or unscored):
        raise InputError(f"{where}: 'messages' is not a non-empty list of messages")
    domain = run.domain_of(sim, where)
    cid = conversation_id(domain, run.model, run.implementation or UNNAMED, task_id, trial)
    builder = TurnBuilder(f"{where} ({cid})")
    system, system_meta = run.system(sim, task, where)
    builder.system(system, f"{where}, the rebuilt system turn")
    for j, m in enumerate(messages):
        read_message(builder, m, f"{where}, message {j}")
    return builder.conversation(
        id=cid, source=SOURCE, domain=domain, agent_model=run.model,
        agent_implementation=run.implementation, task_id=task_id, trial=trial,
        metadata=_metadata(run, k, sim, task, where, system_meta, unscored))


def _metadata(run: _Run, k: int, sim: dict, task: dict | None, where: str,
              system_meta: dict[str, Any], unscored: bool) -> dict[str, Any]:
    reward_info = sim.get("reward_info")
    reward = reward_info.get("reward") if isinstance(reward_info, dict) else None
    if reward is not None and (isinstance(reward, bool) or not isinstance(reward, (int, float))):
        raise InputError(f"{where}: reward_info.reward is {_shown(reward)}, expected a number")
    reason = sim.get("termination_reason")
    if reason is not None and not (isinstance(reason, str) and reason.isprintable()):
        raise InputError(f"{where}: termination_reason is {_shown(reason)}, expected text")
    criteria = task.get("evaluation_criteria") if isinstance(task, dict) else None
    criteria = criteria if isinstance(criteria, dict) else {}
    sid = sim.get("id")
    origin = {"file": run.path.name, "format": NAME, "run": k}
    if run.layout != "results":
        origin["layout"] = run.layout
    if isinstance(sid, str) and sid.isprintable():
        origin["simulation_id"] = sid
    return conversation_metadata(
        origin=origin, reward=reward, unscored=True if unscored else None,
        termination_reason=reason,
        expected_actions=expected_actions(criteria.get("actions"), where,
                                          arguments="arguments"),
        expected_outputs=expected_outputs(criteria.get("communicate_info"), where),
        system_turn=system_meta)


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


def read_tau2(path: str | Path, *, domain: str | None = None, agent_model: str | None = None,
              agent_implementation: str | None = None,
              report: Callable[[str], None] | None = None) -> list[Conversation]:
    """Every simulation of a tau2-bench file, in any of its layouts, as a validated
    Conversation (``ingest tau2``). ``domain``, ``agent_model``, ``agent_implementation``: what
    a bare list of simulations does not record (a file that records another is refused);
    ``report`` is handed a line where ``domain`` differs from the one the policy names."""
    path = Path(path)
    return read_results(path, load_json(path), Given(domain, agent_model, agent_implementation),
                        report=report)


def read_results(path: Path, value: Any, given: Given | None = None, *,
                 report: Callable[[str], None] | None = None) -> list[Conversation]:
    """The conversations of a tau2 file's parsed value (``path`` names it)."""
    run = _Run(path, value, given)
    run.report = report
    if not run.simulations:
        raise InputError(f"{path}: no simulations; nothing to read")
    return [_simulation(run, k, sim) for k, sim in enumerate(run.simulations)]


# --------------------------------------------------------------------------- the format


def _sniff(source: Source) -> int:
    value = source.value
    if source.json_lines:
        return NO
    if isinstance(value, dict):
        if "simulations" not in value:
            return NO
        # A results file (or wrapper) whose simulations are not a list is still one: the
        # reader names what is wrong (as `ingest tau2` does), rather than "not a transcript of
        # a known format".
        return SURE if isinstance(value["simulations"], list) else PLAUSIBLE
    # A bare list of simulations: each with its task, its messages and its reward record.
    return SURE if isinstance(value, list) and value and all(
        isinstance(s, dict) and "task_id" in s and isinstance(s.get("messages"), list)
        and "reward_info" in s for s in value) else NO


def _read(source: Source) -> list[Conversation]:
    path = source.path or Path("results.json")
    if isinstance(source.value, list):
        raise InputError(f"{path} ({TITLE}): a bare list of simulations does not record its "
                         "agent model (nor, but in its policy's title, its domain); read it "
                         "with `mtcabench ingest tau2 --agent-model MODEL`")
    return read_results(path, source.value)


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
    NAME, TITLE, "a results file {info, tasks, simulations: [{messages}]} or a wrapper "
    "{domain, agent, model, simulations}, every simulation a conversation, the system turn "
    "rebuilt from the policy", _sniff, _read, order=62,
    sniff_message=_sniff_message, read_message=_read_turns))
