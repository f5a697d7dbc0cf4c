"""TauBench runs: ``{task_id, trial, reward, info, traj}`` with ``traj`` OpenAI chat messages,
read by the chat reader; a trajectory file (``<model>-<domain>.json``) is a list of runs.

``ingest taubench`` (:func:`read_taubench`) and ``explain`` both read runs here, so a run has
the same id, turns and metadata in both (its metadata by name, :func:`run_metadata`; never
the run's ``info`` as it is): ``taubench/<domain>/<model>/task-<task>/trial-<trial>`` (model
and domain from the file name, ``gpt-4o-airline.json`` -> model ``gpt-4o``, domain
``airline``, or given), ``taubench/task-<task>/trial-<trial>`` when neither is known.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mtcabench.errors import InputError
from mtcabench.model import (Conversation, agent_model_name, conversation_metadata,
                             domain_name)
from mtcabench.transcripts._chat import read_message
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


def model_and_domain(path: Path) -> tuple[str, str]:
    """Split ``<model>-<domain>.json`` (the upstream naming) into its two parts."""
    stem = path.stem
    if "-" not in stem:
        raise InputError(
            f"{path}: cannot tell agent model and domain from the name; expected "
            "<model>-<domain>.json (e.g. gpt-4o-airline.json) or pass --agent-model and --domain"
        )
    model, domain = stem.rsplit("-", 1)
    return model, domain


def read_taubench(
    path: str | Path, *, agent_model: str | None = None, domain: str | None = None
) -> Iterator[Conversation]:
    """Yield one validated Conversation per run of a TauBench trajectory file (``ingest
    taubench``: a JSON list of runs, each with ``task_id``, ``trial``, ``reward``, ``info``
    and ``traj``)."""
    path = Path(path)
    runs = load_json(path)
    if not isinstance(runs, list):
        raise InputError(f"{path}: expected a JSON list of runs, got {type(runs).__name__}")
    if agent_model is None or domain is None:
        model_guess, domain_guess = model_and_domain(path)
        agent_model = agent_model or model_guess
        domain = domain or domain_guess
    # Named by the name rule before they go into ids (normalised: ' Airline' is airline).
    agent_model = checked_name(agent_model_name, agent_model, f"{path}: agent model")
    domain = checked_name(domain_name, domain, f"{path}: domain")
    for i, run in enumerate(runs):
        yield run_conversation(path, i, run, agent_model, domain)


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
    model, _, domain = path.stem.rpartition("-")
    return [run_conversation(path, i, r, model or None, domain if model else None)
            for i, r in enumerate(source.value)]


register_format(LogFormat(
    "taubench", "TauBench", "a run {task_id, trial, traj: [chat messages]} or a list of them "
    "(<model>-<domain>.json)", _sniff, _read, order=60))
