"""TauBench adapter: ``historical_trajectories/<model>-<domain>.json`` to Conversation records.

The file is a JSON list of runs, each with ``task_id``, ``trial``, ``reward``, ``info`` and
``traj`` (OpenAI chat messages: ``tool_calls`` on assistant messages, ``tool`` messages
answering them by ``tool_call_id``). The agent model and domain come from the file name
(``gpt-4o-airline.json`` -> model ``gpt-4o``, domain ``airline``) unless given. Message
content may be text or a list of content parts (:mod:`mtcabench.openai_content`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from collections.abc import Iterator

from pydantic import ValidationError

from mtcabench.errors import InputError
from mtcabench.ingest._common import load_json
from mtcabench.openai_content import ContentError, message_text
from mtcabench.io import JSONError, format_validation_error, loads
from mtcabench.model import Conversation, Role, ToolCall, Turn

SOURCE = "taubench"
_ROLES = {r.value for r in Role}


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


def conversation_id(domain: str, model: str, task_id: Any, trial: Any) -> str:
    """Stable id of a TauBench run: source, domain, agent model, task and trial."""
    return f"{SOURCE}/{domain}/{model}/task-{task_id}/trial-{trial}"


def read_taubench(
    path: str | Path, *, agent_model: str | None = None, domain: str | None = None
) -> Iterator[Conversation]:
    """Yield one validated Conversation per run of a TauBench trajectory file."""
    path = Path(path)
    runs = load_json(path)
    if not isinstance(runs, list):
        raise InputError(f"{path}: expected a JSON list of runs, got {type(runs).__name__}")
    if agent_model is None or domain is None:
        model_guess, domain_guess = model_and_domain(path)
        agent_model = agent_model or model_guess
        domain = domain or domain_guess
    for i, run in enumerate(runs):
        yield _convert_run(path, i, run, agent_model, domain)


def _convert_run(path: Path, i: int, run: Any, model: str, domain: str) -> Conversation:
    where = f"run {i}"
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
    trial = run.get("trial")
    if trial is not None and not (isinstance(trial, int) and not isinstance(trial, bool)) and not (
            isinstance(trial, str) and trial.isascii() and trial.isdigit()):
        raise InputError(f"{path}: {where}: 'trial' is {_shown(trial)}, expected a whole number")
    cid = conversation_id(domain, model, run["task_id"], run.get("trial", 0))
    turns = [_convert_message(path, where, j, m) for j, m in enumerate(traj)]
    metadata = {k: v for k, v in run.items() if k not in ("traj",)}
    # Where the run came from, so that errors and reviewers can point at it.
    metadata["origin"] = {"file": path.name, "run": i}
    try:
        return Conversation(
            id=cid,
            source=SOURCE,
            domain=domain,
            agent_model=model,
            task_id=str(run["task_id"]),
            trial=int(run["trial"]) if run.get("trial") is not None else None,
            turns=turns,
            metadata=metadata,
        )
    except ValidationError as exc:
        raise InputError(f"{path}: {where} ({cid}): {format_validation_error(exc)}") from None


def _shown(value: Any) -> str:
    """A value of the input inside a message: as it is, or escaped if it would break the line."""
    text = str(value)
    return text if text.isprintable() else repr(text)


def _convert_message(path: Path, where: str, j: int, m: Any) -> Turn:
    here = f"{path}: {where}, message {j}"
    role = m.get("role") if isinstance(m, dict) else None
    if not isinstance(role, str) or role not in _ROLES:
        raise InputError(f"{here}: unknown message shape (role {role!r}); expected an OpenAI "
                         "chat message with role system, user, assistant or tool")
    try:
        content = message_text(m.get("content"))
    except ContentError as exc:
        raise InputError(f"{here}: {exc}") from None
    calls = []
    raw_calls = m.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise InputError(f"{here}: 'tool_calls' is {type(raw_calls).__name__}, expected a list of "
                         "{id, function: {name, arguments}}")
    for c in raw_calls:
        try:
            fn = c["function"]
            args = loads(fn["arguments"]) if isinstance(fn["arguments"], str) else fn["arguments"]
            calls.append(ToolCall(id=c["id"], name=fn["name"], arguments=args))
        except (KeyError, TypeError, JSONError, ValidationError) as exc:
            why = (format_validation_error(exc) if isinstance(exc, ValidationError)
                   else _shown(f"{type(exc).__name__}: {exc}"))
            raise InputError(f"{here}: malformed tool call ({why}); "
                             "expected {id, function: {name, arguments}}") from None
    try:
        return Turn(
            index=j,
            role=Role(m["role"]),
            content=content,
            tool_calls=calls,
            tool_call_id=m.get("tool_call_id"),
            name=m.get("name"),
        )
    except ValidationError as exc:
        raise InputError(f"{here}: {format_validation_error(exc)}") from None
