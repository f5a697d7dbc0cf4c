"""Lineage settings: the rules version, the default stop list and LineageConfig."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

#: Version of the rule set; written into every record's annotator. Bump on any rule change.
RULES_VERSION = "lineage-v1"

#: Values that are leaves but carry no provenance worth tracing (compared case-insensitively).
DEFAULT_STOP_LIST: frozenset[str] = frozenset(
    {"EST", "UTC", "USA", "N/A", "NA", "None", "null", "True", "False", "Error", "ID", "OK"}
)


@dataclass(frozen=True)
class LineageConfig:
    """The tunable rules of the lineage annotator (defaults are ``lineage-v1``'s)."""

    #: Shortest value kept, in characters of its canonical text (``151``, ``JFK``; not ``12``).
    min_length: int = 3
    #: Longest value kept: longer leaves are prose (summaries, messages), not copied values.
    max_length: int = 40
    #: Values never traced (case-insensitive).
    stop_list: frozenset[str] = DEFAULT_STOP_LIST
    #: Also trace lower-case words and prose leaves (``economy``, ``delayed``); off: too noisy.
    include_words: bool = False
    #: A value found in more earlier turns than this is too ambiguous to propose as a span.
    max_value_turns: int = 8
    #: Propose ``$x`` amounts equal to the sum or difference of two traced amounts.
    derived_amounts: bool = True
    #: Propose exactly decidable contradictions as hallucination candidates.
    hallucinations: bool = True

    def __post_init__(self) -> None:
        if self.min_length < 1:
            raise ValueError(f"min_length must be at least 1, got {self.min_length}")
        if self.max_length < self.min_length:
            raise ValueError(f"max_length {self.max_length} is below min_length {self.min_length}")
        if self.max_value_turns < 1:
            raise ValueError(f"max_value_turns must be at least 1, got {self.max_value_turns}")
        object.__setattr__(self, "stop_list", frozenset(self.stop_list))

    def as_dict(self) -> dict[str, Any]:
        """The settings as plain JSON values (the stop list sorted)."""
        d = {f: getattr(self, f) for f in self.__dataclass_fields__}
        d["stop_list"] = sorted(self.stop_list)
        return d

    def signature(self) -> str:
        """``lineage-v1`` for the default settings, else ``lineage-v1+<8 hex of them>``.

        Written as the annotator's rules_version, so that candidates made with other
        settings never pass for the defaults' (the summary JSON lists the settings).
        """
        if self == LineageConfig():
            return RULES_VERSION
        blob = json.dumps(self.as_dict(), sort_keys=True).encode()
        return f"{RULES_VERSION}+{hashlib.sha256(blob).hexdigest()[:8]}"

    @property
    def stop_folded(self) -> frozenset[str]:
        """The stop list, case-folded (computed once)."""
        folded = self.__dict__.get("_stop_folded")
        if folded is None:
            folded = frozenset(s.casefold() for s in self.stop_list)
            object.__setattr__(self, "_stop_folded", folded)
        return folded
