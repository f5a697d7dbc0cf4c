"""The start a conversation's renderings share, run once for all of them.

A conversation whose spans pass the model's context is read in several renderings: the
conversation itself up to its last span that fits, and a context window per later turn (or
chain of turns, :mod:`._window`), each a pass over up to the whole context. A window shortens
earlier turns' content, but the turns before its first shortened one are the conversation's
own, so the renderings begin with the same tokens: on the 2.1 test split's windowed
conversations, 44% of a window's tokens. Their passes computed them again, each.

A :class:`SharedStart` is the plan that runs them once. Its *trunk* is the first rendering
attributed (the conversation's own, else the first window). Every other rendering has a
*boundary*: where it parts from the trunk (their common tokens, before both passes' last
rows). The trunk's start runs in steps, one up to each boundary, its hooks capturing every
query row that any rendering reads before its boundary; each rendering's pass (the trunk's
too) then runs on from the key/value states at its boundary, its rows before the boundary read
from what the start captured. The states of the trunk's tokens before a boundary are the same
whichever rendering asks (the model is causal), so nothing is approximated.

What a pass computes stays a function of its arguments (the pass service's rule, see
:mod:`._passes`): the boundaries and rows are fixed from the renderings and their queries
before any pass runs, so the steps are the same whatever order the renderings are attributed
in and whether the conversation is traced alone or in a run; against a rendering read in one
piece, the last float places differ, as the prefix cache's two steps already do. This module
only plans (no torch); :func:`~._attention.query_features` runs a plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: Tokens a boundary must be past the one before it (the first: past the prefix cache's, the
#: system prompt's end) to be worth a step of its own: a step is one more model call, with
#: the hooks' and the cache's overheads. Measured in one process, alternating (exploratory,
#: one conversation each): steps 333 and 272 tokens past the ones before saved about 6% of a
#: windowed conversation's time against 1,024 (109 s against 116 s); two steps 642 and 717
#: tokens past the system prompt saved none on another (175 s against 170 s).
MIN_SHARED = 256


@dataclass
class SharedStart:
    """The plan of one conversation's shared start (see the module docstring)."""

    #: The trunk's tokens up to its last boundary.
    ids: np.ndarray
    #: The prefix cache's boundary (a system prompt's end), inside the first step.
    store: int
    #: Where the start's steps end, ascending, each past ``store``; the last is ``len(ids)``.
    boundaries: tuple[int, ...]
    #: Sorted positions before the last boundary whose queries the start's hooks capture.
    rows: np.ndarray
    #: Set by the first pass that uses the plan: the key/value states after the last boundary
    #: and the captured rows (torch objects, :mod:`._attention`'s).
    state: Any = field(default=None, repr=False)

    def boundary_for(self, ids: Sequence[int] | np.ndarray, rows: np.ndarray) -> int:
        """Where a pass over ``ids`` reading ``rows`` (sorted positions; the pass ends after
        the last) runs on from the start: the largest boundary before its last row at which
        ``ids`` begin as the trunk does, with every row of it before the boundary captured;
        0 when none does (the pass runs alone, as without a plan)."""
        ids = np.asarray(ids, dtype=np.int64)
        last = int(rows[-1]) if len(rows) else -1
        for b in reversed(self.boundaries):
            if b > last or b > len(ids) or not np.array_equal(ids[:b], self.ids[:b]):
                continue
            if np.isin(rows[rows < b], self.rows).all():
                return b
        return 0


def common_length(a: np.ndarray, b: np.ndarray) -> int:
    """Tokens ``a`` and ``b`` begin with in common."""
    n = min(len(a), len(b))
    differ = np.flatnonzero(a[:n] != b[:n])
    return int(differ[0]) if len(differ) else n


def plan_shared_start(renderings: Sequence[tuple[Sequence[int], np.ndarray]], store: int,
                      least: int | None = None) -> SharedStart | None:
    """The plan for ``renderings`` (each its token ids and the sorted rows its pass reads; the
    first is the trunk), or None when no rendering shares at least ``least`` tokens
    (:data:`MIN_SHARED`) past ``store`` with the trunk before both passes' last rows."""
    least = MIN_SHARED if least is None else least
    if len(renderings) < 2:
        return None
    trunk = np.asarray(renderings[0][0], dtype=np.int64)
    trunk_rows = np.asarray(renderings[0][1], dtype=np.int64)
    if not len(trunk_rows):
        return None
    trunk_end = int(trunk_rows[-1])  # the trunk's pass ends after it: a boundary is before
    parts = []  # (where the rendering parts from the trunk, its rows)
    for ids, rows in renderings[1:]:
        rows = np.asarray(rows, dtype=np.int64)
        if len(rows):
            ids = np.asarray(ids, dtype=np.int64)
            parts.append((min(common_length(trunk, ids), trunk_end, int(rows[-1])), rows))
    # Boundaries at least ``least`` apart, from the nearest: a rendering that parts between two
    # runs on from the earlier one.
    bounds: list[int] = []
    for b in sorted(b for b, _ in parts):
        if b - (bounds[-1] if bounds else store) >= least:
            bounds.append(b)
    if not bounds:
        return None
    wanted = [trunk_rows[trunk_rows < bounds[-1]]]
    for b, rows in parts:
        at = max((x for x in bounds if x <= b), default=0)
        wanted.append(rows[rows < at])
    return SharedStart(trunk[: bounds[-1]].copy(), store, tuple(bounds),
                       np.unique(np.concatenate(wanted)))
