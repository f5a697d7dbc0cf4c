"""Statistics of a conversations file: counts by source, domain and role, and lengths."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from mtcabench.io import read_records
from mtcabench.model import Conversation


@dataclass
class ConversationStats:
    conversations: int = 0
    by_source: Counter = field(default_factory=Counter)
    by_domain: Counter = field(default_factory=Counter)
    turns_by_role: Counter = field(default_factory=Counter)
    tool_calls: int = 0
    turns_per_conversation: list[int] = field(default_factory=list)
    chars_per_conversation: list[int] = field(default_factory=list)

    def add(self, conv: Conversation) -> None:
        self.conversations += 1
        self.by_source[conv.source] += 1
        self.by_domain[f"{conv.source}/{conv.domain}"] += 1
        for t in conv.turns:
            self.turns_by_role[t.role.value] += 1
            self.tool_calls += len(t.tool_calls)
        self.turns_per_conversation.append(len(conv.turns))
        self.chars_per_conversation.append(sum(len(t.text) for t in conv.turns))

    @staticmethod
    def summary(values: list[int]) -> dict[str, float]:
        if not values:
            return {"min": 0, "median": 0, "p90": 0, "max": 0}
        ordered = sorted(values)
        return {
            "min": ordered[0],
            "median": statistics.median(ordered),
            "p90": ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))],
            "max": ordered[-1],
        }

    def as_dict(self) -> dict:
        return {
            "conversations": self.conversations,
            "by_source": dict(self.by_source),
            "by_domain": dict(self.by_domain),
            "turns_by_role": dict(self.turns_by_role),
            "tool_calls": self.tool_calls,
            "turns_per_conversation": self.summary(self.turns_per_conversation),
            "chars_per_conversation": self.summary(self.chars_per_conversation),
        }


def conversation_stats(path: str | Path) -> ConversationStats:
    """Stream a conversations file and count it."""
    stats = ConversationStats()
    for conv in read_records(path, Conversation):
        stats.add(conv)
    return stats
