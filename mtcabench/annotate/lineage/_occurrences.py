"""The occurrence index: where each value occurs in a turn, and the parent of each need."""

from __future__ import annotations

from mtcabench.annotate.lineage._config import LineageConfig
from mtcabench.annotate.lineage._find import find_value
from mtcabench.annotate.lineage._summary import LineageSummary
from mtcabench.annotate.lineage._vocabulary import _Vocabulary
from mtcabench.model import Conversation, Role, Turn


class _Occurrences(_Vocabulary):
    """Where the vocabulary's values occur, memoised per (turn, value)."""

    def __init__(self, conv: Conversation, config: LineageConfig, summary: LineageSummary):
        self._occ: dict[tuple[int, str], tuple[int, int] | None] = {}
        self._parent: dict[tuple[int, str], int | None] = {}
        super().__init__(conv, config, summary)

    def region(self, turn: Turn) -> tuple[int, int]:
        """Where a turn states values: an assistant turn's content, or a whole exogenous turn."""
        return (0, len(turn.content)) if turn.role is Role.ASSISTANT else (0, len(turn.text))

    def occurrence(self, t: int, key: str) -> tuple[int, int] | None:
        """First standalone occurrence of value ``key`` where turn ``t`` states values."""
        memo = self._occ.get((t, key), False)
        if memo is not False:
            return memo
        turn = self.turns[t]
        lo, hi = self.region(turn)
        found = find_value(turn.text, self.values[key], lo, hi)
        self._occ[(t, key)] = found
        return found

    def is_echo(self, t: int, key: str) -> bool:
        """Whether tool result ``t`` holds ``key`` because its own call passed it."""
        return key in self.call_echoes.get(self.tool_call[t], set())

    def parent(self, child: int, key: str) -> int | None:
        """The latest turn before ``child`` that introduced or restated the value (see package)."""
        memo = self._parent.get((child, key), False)
        if memo is not False:
            return memo
        found: int | None = None
        echo: int | None = None
        for t in range(child - 1, -1, -1):
            if self.occurrence(t, key) is None:
                continue
            if self.turns[t].role is Role.TOOL and self.is_echo(t, key):
                echo = t if echo is None else echo
                continue
            found = t
            break
        result = found if found is not None else echo
        self._parent[(child, key)] = result
        return result

    def turns_holding(self, before: int, key: str) -> int:
        """How many turns before ``before`` hold the value anywhere in their text."""
        value = self.values[key]
        return sum(1 for t in range(before) if find_value(self.turns[t].text, value) is not None)
