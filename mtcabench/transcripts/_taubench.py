"""TauBench runs: ``{task_id, trial, reward, info, traj}`` with ``traj`` OpenAI chat messages,
read by the chat reader; a trajectory file (``<model>-<domain>.json``) is a list of runs.

``ingest taubench`` (:func:`read_taubench`) and ``explain`` both read runs here, so a run has
the same id, turns and metadata in both (its metadata by name, :func:`run_metadata`; never
the run's ``info`` as it is): ``taubench/<domain>/<model>/task-<task>/trial-<trial>``,
``taubench/task-<task>/trial-<trial>`` when they are not known (``explain`` of a file that
names neither). The domain is the run's own: its policy's title (``# Retail agent policy``)
and its tools (:mod:`~mtcabench.transcripts._domains`); TauBench runs do not record their
agent model. Either may be given (``--domain``, ``--agent-model``); a name taken from the file
name instead (``gpt-4o-airline.json``, ``retail-grok-3.json``, tau-bench's own
``tool-calling-grok-3-0.0_range_...``) is reported, and one that nothing tells is refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from mtcabench.errors import InputError
from mtcabench.model import (Conversation, agent_model_name, conversation_metadata,
                             domain_name)
from mtcabench.transcripts._chat import read_message
from mtcabench.transcripts._domains import DOMAIN_TOOLS, policy_domain, run_domain
from mtcabench.transcripts._registry import NO, SURE, LogFormat, register_format
from mtcabench.transcripts._source import Source, load_json
from mtcabench.transcripts._tasks import expected_actions, expected_outputs
from mtcabench.transcripts._turns import TurnBuilder, checked_name, trial_number

SOURCE = "taubench"


def conversation_id(domain: str | None, model: str | None, task_id: Any, trial: Any) -> str:
    """Stable id of a TauBench run: source, domain, agent model, task and trial."""
    if model and domain:
        return f"{SOURCE}/{domain}/{model}/task-{task_id}/trial-{trial}"
    return f"{SOURCE}/task-{task_id}/trial-{trial}"


def _shown(value: Any) -> str:
    """A value of the input inside a message: as it is (cut after 40 characters: a 5,000-digit
    id is named, not repeated), or escaped if it would break the line."""
    text = str(value)
    text = text if len(text) <= 40 else text[:37] + "..."
    return text if text.isprintable() else repr(text)


def run_conversation(path: Path, i: int | None, run: Any, model: str | None,
                     domain: str | None) -> Conversation:
    """One run (the ``i``-th of its file; None: a file holding one run) as a Conversation."""
    where = f"run {i}" if i is not None else "run"
    if not isinstance(run, dict):
        raise InputError(f"{path}: {where}: expected an object, got {type(run).__name__}")
    if "task_id" in run:
        where += f" (task {_shown(run['task_id'])}, trial {_shown(run.get('trial'))})"
    for key in ("task_id", "traj"):
        if key not in run:
            raise InputError(f"{path}: {where}: has no {key!r} field; is this a TauBench "
                             "historical trajectory file?")
    traj = run["traj"]
    if not isinstance(traj, list):
        raise InputError(f"{path}: {where}: 'traj' is not a list of messages")
    if not traj:
        raise InputError(f"{path}: {where}: empty conversation ('traj' has no messages)")
    trial = trial_number(run.get("trial"), f"{path}: {where}")
    cid = conversation_id(domain, model, run["task_id"], 0 if trial is None else trial)
    builder = TurnBuilder(f"{path}: {where}")
    for j, m in enumerate(traj):
        read_message(builder, m, f"{path}: {where} ({cid}), message {j}")
    return builder.conversation(
        id=cid, source=SOURCE, domain=domain or "unknown", agent_model=model,
        task_id=str(run["task_id"]),
        trial=trial,
        metadata=run_metadata(path, i, run, f"{path}: {where}"))


def run_metadata(path: Path, i: int | None, run: dict, where: str) -> dict[str, Any]:
    """What a run's metadata holds, by name (:data:`~mtcabench.model.METADATA_KEYS`): where
    it came from, its reward and its task's ground truth. ``info`` is never copied: it is
    the run's settings and task record, and may hold credentials."""
    reward = run.get("reward")
    if reward is not None and (isinstance(reward, bool) or not isinstance(reward, (int, float))):
        raise InputError(f"{where}: 'reward' is {_shown(reward)}, expected a number")
    info = run.get("info")
    task = info.get("task") if isinstance(info, dict) else None
    task = task if isinstance(task, dict) else {}
    return conversation_metadata(
        # Where the run came from, so that errors and reviewers can point at it.
        origin={"file": path.name, "run": i},
        reward=reward,
        expected_actions=expected_actions(task.get("actions"), where, arguments="kwargs",
                                          requestor="assistant"),
        expected_outputs=expected_outputs(task.get("outputs"), where))


#: tau-bench's own name for a results file (``run.py``): ``<agent strategy>-<model>-
#: <temperature>_range_<start>-<end>_user-<user model>-<user strategy>_<time>.json``.
_RUN_FILE = re.compile(r"^(?:tool-calling|act|react|few-shot)-(?P<model>.+?)-\d+(?:\.\d+)?_range_")


def model_from_name(path: Path, domain: str | None) -> str | None:
    """The agent model a TauBench file's name gives, or None: tau-bench's own results name
    (``tool-calling-grok-3-0.0_range_...``), else ``<model>-<domain>`` or ``<domain>-<model>``
    for the run's ``domain``."""
    stem = path.stem
    if (match := _RUN_FILE.match(stem)) is not None:
        return match.group("model")
    if domain:
        if stem.endswith(f"-{domain}") and len(stem) > len(domain) + 1:
            return stem[:-len(domain) - 1]
        if stem.startswith(f"{domain}-") and len(stem) > len(domain) + 1:
            return stem[len(domain) + 1:]
    return None


def domain_from_name(path: Path) -> str | None:
    """A known domain (:data:`DOMAIN_TOOLS`) that starts or ends a file's stem, or None."""
    stem = path.stem
    for domain in sorted(DOMAIN_TOOLS, key=len, reverse=True):
        if stem.endswith(f"-{domain}") or stem.startswith(f"{domain}-"):
            return domain
    return None


def _system_and_tools(run: Any) -> tuple[Any, list[str]]:
    """A run's first system message and the names of the tools it called, as given (the chat
    reader checks them when it reads the run)."""
    traj = run.get("traj") if isinstance(run, dict) else None
    if not isinstance(traj, list):
        return None, []
    first = traj[0] if traj and isinstance(traj[0], dict) else {}
    policy = first.get("content") if first.get("role") == "system" else None
    tools = [c["function"]["name"] for m in traj
             if isinstance(m, dict) and isinstance(m.get("tool_calls"), list)
             for c in m["tool_calls"] if isinstance(c, dict)
             and isinstance(c.get("function"), dict) and isinstance(c["function"].get("name"), str)]
    return policy, tools


class FileNames:
    """The domain and agent model of the runs of one TauBench file.

    The domain is the run's own (:func:`~mtcabench.transcripts._domains.run_domain`: its
    policy's title, its tools); ``--domain`` replaces it, and the file name is the last
    resort, reported. TauBench runs do not record their agent model: ``--agent-model``, else
    the file name, reported. ``strict``: a domain or model nothing tells is an error (``ingest
    taubench``); otherwise it is left out of the id (``ingest transcripts``, ``explain``).
    ``report`` is handed each line that says where a name came from.
    """

    def __init__(self, path: Path, agent_model: str | None, domain: str | None, *,
                 strict: bool = True, report: Callable[[str], None] | None = None):
        self.path, self.strict = path, strict
        # Named by the name rule before they go into ids (normalised: ' Airline' is airline).
        self.given_model = checked_name(agent_model_name, agent_model, f"{path}: agent model")
        self.given_domain = None if domain is None else checked_name(
            domain_name, domain, f"{path}: domain")
        self._report = report
        self._said: set[str] = set()
        self.model: str | None = self.given_model

    def say(self, line: str) -> None:
        if self._report is not None and line not in self._said:
            self._said.add(line)
            self._report(line)

    def domain_of(self, i: int, run: Any) -> str | None:
        """The domain of the ``i``-th run (see the class docstring)."""
        policy, tools = _system_and_tools(run)
        where = f"{self.path}: run {i}"
        found = run_domain(policy, tools, where) if self.given_domain is None else \
            policy_domain(policy)
        if self.given_domain is not None:
            if found is not None and found != self.given_domain:
                self.say(f"{self.path}: domain {self.given_domain!r} as given by --domain; "
                         f"the runs' policy names {found!r}")
            return self.given_domain
        if found is not None:
            # A title's domain goes into ids: by the name rule (a title "# All agent policy"
            # would name a config every release has).
            return checked_name(domain_name, found, f"{where}: the policy's title")
        found = domain_from_name(self.path)  # a known domain: the rule holds
        if found is None:
            if self.strict:
                raise InputError(
                    f"{where}: unknown domain: its system turn has no '# <Domain> agent "
                    "policy' title, its tools are no known domain's ("
                    f"{', '.join(sorted(DOMAIN_TOOLS))}) and the file name names none; "
                    "pass --domain")
            return None
        self.say(f"{self.path}: domain {found!r} taken from the file name (run {i} has no "
                 "'# <Domain> agent policy' title and calls no known domain's tools); "
                 "pass --domain to name it")
        return found

    def model_of(self, i: int, domain: str | None) -> str | None:
        """The agent model of the file's runs, found once (see the class docstring)."""
        if self.model is None:
            self.model = model_from_name(self.path, domain)
            if self.model is not None:
                self.model = self._file_model(self.model)
            if self.model is None:
                if self.strict:
                    raise InputError(
                        f"{self.path}: run {i}: cannot tell the agent model: TauBench runs do "
                        "not record it, and the file name is neither <model>-<domain>.json, "
                        "<domain>-<model>.json nor tau-bench's own results name; pass "
                        "--agent-model")
                return None
            self.say(f"{self.path}: agent model {self.model!r} taken from the file name "
                     "(TauBench runs do not record it); pass --agent-model to name it")
        return self.model

    def _file_model(self, name: str) -> str | None:
        """An agent model a file name gives, by the name rule: one line where it breaks it
        (``ingest taubench``: pass --agent-model), else left out of the id."""
        try:
            return agent_model_name(name)
        except ValueError as exc:
            if self.strict:
                raise InputError(f"{self.path}: the agent model its file name gives: {exc}; "
                                 "pass --agent-model") from None
            return None


def read_taubench(
    path: str | Path, *, agent_model: str | None = None, domain: str | None = None,
    report: Callable[[str], None] | None = None,
) -> Iterator[Conversation]:
    """Yield one validated Conversation per run of a TauBench trajectory file (``ingest
    taubench``: a JSON list of runs, each with ``task_id``, ``trial``, ``reward``, ``info``
    and ``traj``). Domain and agent model as :class:`FileNames` finds them; ``report`` is
    handed each line saying that one came from the file name."""
    path = Path(path)
    runs = load_json(path)
    if not isinstance(runs, list):
        raise InputError(f"{path}: expected a JSON list of runs, got {type(runs).__name__}")
    names = FileNames(path, agent_model, domain, report=report)
    for i, run in enumerate(runs):
        run_domain_ = names.domain_of(i, run)
        yield run_conversation(path, i, run, names.model_of(i, run_domain_), run_domain_)


def _sniff(source: Source) -> int:
    value = source.value
    if isinstance(value, dict):
        return SURE if "traj" in value else NO
    if isinstance(value, list) and value and not source.json_lines:
        return SURE if all(isinstance(r, dict) and "traj" in r for r in value) else NO
    return NO


def _read(source: Source) -> list[Conversation]:
    path = source.path or Path("run.json")
    if isinstance(source.value, dict):
        return [run_conversation(path, None, source.value, None, None)]
    if not isinstance(source.value, list):
        raise InputError(f"{path} (TauBench): expected a run object or a JSON list of runs")
    names = FileNames(path, None, None, strict=False)
    out = []
    for i, run in enumerate(source.value):
        domain = names.domain_of(i, run)
        model = names.model_of(i, domain)
        out.append(run_conversation(path, i, run, model if domain else None,
                                    domain if model else None))
    return out


register_format(LogFormat(
    "taubench", "TauBench", "a run {task_id, trial, traj: [chat messages]} or a list of them "
    "(<model>-<domain>.json)", _sniff, _read, order=60))
