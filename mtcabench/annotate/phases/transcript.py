"""Compact transcripts for prompts, and the grouping of target turns into requests.

Prompts show only the turns a request needs (those up to its last target turn), each turn
shortened to a character budget with a visible note, and the oldest turns left out with a
note when the whole transcript is over budget. Shortening never changes what is checked:
quotes are always looked up in the full turn text.
"""

from __future__ import annotations

from dataclasses import dataclass

from mtcabench.model import Conversation, Role, Turn


@dataclass(frozen=True)
class TranscriptLimits:
    """Character budgets for a prompt's transcript (about 4 characters per token)."""

    max_turn_chars: int = 1500
    max_chars: int = 12000

    def __post_init__(self) -> None:
        if self.max_turn_chars < 100 or self.max_chars < self.max_turn_chars:
            raise ValueError("need max_turn_chars >= 100 and max_chars >= max_turn_chars")


def _label(turn: Turn) -> str:
    if turn.role is Role.TOOL and turn.name:
        return f"[{turn.index} tool {turn.name}]"
    return f"[{turn.index} {turn.role.value}]"


def render_turn(turn: Turn, max_chars: int) -> str:
    """One turn as ``[i role] text``, shortened with a note saying how much was left out."""
    text = turn.text
    if len(text) > max_chars:
        left = len(text) - max_chars
        text = f"{text[:max_chars]} [... shortened: {left} more characters not shown]"
    return f"{_label(turn)} {text}"


def render_transcript(conv: Conversation, upto: int, limits: TranscriptLimits) -> str:
    """Turns 0..``upto`` rendered; the earliest turns after turn 0 dropped (with a note) to fit."""
    lines = [render_turn(t, limits.max_turn_chars) for t in conv.turns[: upto + 1]]
    total = sum(len(x) + 1 for x in lines)
    # Keep turn 0 (the system policy or first request) and drop from turn 1 on: the turns
    # nearest the targets are the likeliest parents.
    first_kept = 1
    while total > limits.max_chars and first_kept < upto:
        total -= len(lines[first_kept]) + 1
        first_kept += 1
    if first_kept == 1:
        return "\n".join(lines)
    note = f"[turns 1-{first_kept - 1} omitted for length]"
    return "\n".join([lines[0], note, *lines[first_kept:]])


def target_turns(conv: Conversation) -> list[int]:
    """Assistant turns with content of their own: where target spans are chosen.

    Turns that only issue tool calls are left out as targets (they stay in transcripts and
    can be intermediate nodes of a graph).
    """
    return [t.index for t in conv.turns if t.role is Role.ASSISTANT and t.content.strip()]


def group_targets(conv: Conversation, per_request: int) -> list[tuple[int, ...]]:
    """Target turns in consecutive groups of at most ``per_request``: one propose request each."""
    if per_request < 1:
        raise ValueError("per_request must be at least 1")
    turns = target_turns(conv)
    return [tuple(turns[i : i + per_request]) for i in range(0, len(turns), per_request)]
