"""A benchmark task's ground truth as conversation metadata, in one shape for every source.

TauBench writes a task's expected calls as ``{name, kwargs}`` (all the agent's), tau2-bench
as ``{action_id, requestor, name, arguments, info, compare_args}``; both become
``{name, arguments, requestor}`` under ``metadata.expected_actions``, so that a rule reading
the ground truth (lineage's rationale) reads one shape. Nothing else of an action is kept.
"""

from __future__ import annotations

from typing import Any

from mtcabench.errors import InputError

#: Who may be asked to act by a task: the agent, or a user with tools of their own.
REQUESTORS = ("assistant", "user")


def expected_actions(raw: Any, where: str, *, arguments: str, requestor: str | None = None
                     ) -> list[dict[str, Any]] | None:
    """A task's expected actions (None: the task states none); ``arguments`` names the key
    holding each action's arguments (``kwargs``, ``arguments``); ``requestor``: the one of
    every action, where the source has no field for it (TauBench: the agent)."""
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise InputError(f"{where}: the task's actions are a {type(raw).__name__}; expected "
                         "a list of {name, arguments} objects")
    out = []
    for k, action in enumerate(raw):
        here = f"{where}, expected action {k}"
        if not isinstance(action, dict) or not isinstance(action.get("name"), str) \
                or not action["name"]:
            raise InputError(f"{here}: expected an object with a tool name")
        args = action.get(arguments)
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise InputError(f"{here} ({action['name']}): {arguments} are a "
                             f"{type(args).__name__}; expected an object")
        who = action.get("requestor", requestor)
        if who not in REQUESTORS:
            raise InputError(f"{here} ({action['name']}): requestor {who!r}; expected "
                             "assistant or user")
        out.append({"name": action["name"], "arguments": args, "requestor": who})
    return out


def expected_outputs(raw: Any, where: str) -> list[str] | None:
    """What a task expects the agent to say (None: it states nothing): a list of texts."""
    if raw is None:
        return None
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        raise InputError(f"{where}: the task's expected outputs are not a list of texts")
    return list(raw)
