"""A tool result's fields across its entities: its JSON leaves indexed once by field, so that
the counterfactual step (:mod:`mtcabench.lineage._counterfactual`) finds the other
entities' values of the field an answer copied (another flight's number, another order's id)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from mtcabench.lineage._tracing import Tracer
from mtcabench.lineage._values import make_value


def leaves(obj: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    """``(path, leaf)`` of a JSON value; a path holds dict keys and list indices."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from leaves(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from leaves(v, (*path, i))
    elif not isinstance(obj, bool) and obj is not None:
        yield path, obj


def step_kind(a: Any) -> Any:
    """A path step as a field sees it: a list index, or a key naming an entity by its id
    (``gift_card_3576581``, ``credit_card_4421486``), stands for any other of its kind, so
    that two leaves are the same field of two entities exactly when their paths read alike
    step by step."""
    if isinstance(a, int):
        return 0
    return 1 if any(ch.isdigit() for ch in a) else ("", a)


@dataclass
class ResultFields:
    """A tool result's leaves indexed once: the first leaf of each value key, and the leaves
    by field (their paths read through :func:`step_kind`), in the result's order, and where
    in its field each first leaf stands."""

    first: dict[str, tuple[tuple, Any]]
    fields: dict[tuple, list[tuple[tuple, Any]]]
    at: dict[tuple, int]


def result_fields(tracer: Tracer, p: int, memo: dict[int, ResultFields | None]) -> ResultFields | None:
    if p in memo:
        return memo[p]
    is_json, data = tracer.tool_data(p)
    found = None
    if is_json:
        found = ResultFields({}, {}, {})
        for path, leaf in leaves(data):
            peers = found.fields.setdefault(tuple(map(step_kind, path)), [])
            peers.append((path, leaf))
            v = make_value(leaf)
            if v is not None and v.key not in found.first:
                found.first[v.key] = (path, leaf)
                found.at[path] = len(peers) - 1
    memo[p] = found
    return found


def field_name(path: tuple) -> str:
    """``flight_number``, ``prices.economy``, ``reservations[]``: a path without its
    entities (list indices and id keys), for reports."""
    parts = [p for p in path if not isinstance(p, int) and not any(ch.isdigit() for ch in p)]
    if path and isinstance(path[-1], int):
        return (parts[-1] if parts else "") + "[]"
    return ".".join(parts[-2:]) if len(parts) >= 2 and parts[-2] == "prices" else (
        parts[-1] if parts else "")
