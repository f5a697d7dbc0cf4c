"""Conversations: who spoke (roles), the turns with their tool calls, and the conversation record."""

from __future__ import annotations

import json
from enum import Enum
from typing import Any, ClassVar

from pydantic import Field, PrivateAttr, model_validator

from mtcabench.model._base import Id, Record, _Model


def browser_offset(text: str, offset: int) -> int:
    """A character offset into ``text`` as a browser counts it (UTF-16 code units).

    Offsets in records count code points (Python's ``str``); JavaScript strings count UTF-16
    code units, two for a character outside the Basic Multilingual Plane (an emoji). Every
    offset sent to a page (``view``'s document, Label Studio's regions) goes through here, so
    that a highlight after an emoji lands on its value.
    """
    head = text[:offset]
    return offset if head.isascii() else len(head.encode("utf-16-le", "surrogatepass")) // 2


class Role(str, Enum):
    """Who produced a turn."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"

    @property
    def exogenous(self) -> bool:
        """True for turns that bring information from outside the model (system, user, tool)."""
        return self is not Role.ASSISTANT


class ToolCall(_Model):
    """One tool call issued by an assistant turn."""

    id: str = Field(description="Call id; the tool turn answering it names it in tool_call_id.")
    name: str = Field(description="Name of the tool called.")
    arguments: dict[str, Any] = Field(
        default_factory=dict, description="Arguments, as the parsed JSON object."
    )

    def render(self) -> str:
        """The call as one line of text: ``name({...})`` with the arguments as compact JSON."""
        return f"{self.name}({json.dumps(self.arguments, ensure_ascii=False)})"


class Turn(_Model):
    """One message of a conversation."""

    index: int = Field(ge=0, description="Position in the conversation, from 0.")
    role: Role = Field(description="system, user, assistant or tool.")
    content: str = Field(default="", description="The message text as the source gave it.")
    tool_calls: list[ToolCall] = Field(
        default_factory=list, description="Tool calls issued (assistant turns only)."
    )
    tool_call_id: str | None = Field(
        default=None, description="For a tool turn: the id of the call it answers."
    )
    name: str | None = Field(default=None, description="For a tool turn: the tool's name.")

    @property
    def text(self) -> str:
        """Canonical text of the turn; all offsets refer to it (see mtcabench.model)."""
        if not self.tool_calls:
            return self.content
        calls = "\n".join(c.render() for c in self.tool_calls)
        return f"{self.content}\n{calls}" if self.content else calls

    @property
    def exogenous(self) -> bool:
        return self.role.exogenous

    @model_validator(mode="after")
    def _role_fields(self) -> Turn:
        if self.tool_calls and self.role is not Role.ASSISTANT:
            raise ValueError(f"turn {self.index}: only assistant turns issue tool calls")
        if self.role is Role.TOOL and not self.tool_call_id:
            raise ValueError(f"turn {self.index}: a tool turn must name the call it answers")
        if self.role is not Role.TOOL and self.tool_call_id:
            raise ValueError(f"turn {self.index}: only tool turns carry tool_call_id")
        return self


class Conversation(Record):
    """An agent conversation: ordered turns plus where it came from."""

    KIND: ClassVar[str] = "conversation"

    id: Id = Field(description="Stable id, e.g. taubench/airline/gpt-4o/task-3/trial-0.")
    source: str = Field(description="Dataset it came from: taubench, confetti, ...")
    domain: str = Field(description="Domain or task family, e.g. airline, retail.")
    agent_model: str | None = Field(default=None, description="Model that played the agent.")
    task_id: str | None = Field(default=None, description="Task id within the source.")
    trial: int | None = Field(default=None, description="Trial number of the task, if any.")
    turns: list[Turn] = Field(description="The turns, in order; turns[i].index == i.")
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="Source metadata kept as-is (reward, task info...)."
    )

    @model_validator(mode="after")
    def _check_turns(self) -> Conversation:
        if not self.turns:
            raise ValueError("conversation has no turns")
        for i, turn in enumerate(self.turns):
            if turn.index != i:
                raise ValueError(f"turn at position {i} has index {turn.index}")
        # Every tool result answers a call issued earlier: that link is what recursion follows.
        issued: dict[str, int] = {}
        for turn in self.turns:
            for call in turn.tool_calls:
                issued[call.id] = turn.index
            if turn.role is Role.TOOL and turn.tool_call_id not in issued:
                raise ValueError(
                    f"turn {turn.index}: tool result answers call {turn.tool_call_id!r}, "
                    "which no earlier assistant turn issued"
                )
        return self

    # tool turn -> index of the turn that issued its call; built on first use, since graph
    # checks ask often. Upstream files reuse call ids within a conversation (TauBench does),
    # so a result answers the latest call with its id issued before it.
    _call_of: dict[int, int] | None = PrivateAttr(default=None)

    def __eq__(self, other: object) -> bool:
        # Fields only: the private lookup cache must not make equal conversations differ.
        return type(other) is type(self) and self.__dict__ == other.__dict__  # type: ignore[union-attr]

    __hash__ = None  # type: ignore[assignment] - mutable records are not hashable

    def call_turn(self, tool_turn: int) -> int:
        """Index of the assistant turn that issued the call answered by ``tool_turn``."""
        if self._call_of is None:
            issued: dict[str, int] = {}
            call_of: dict[int, int] = {}
            for turn in self.turns:
                for call in turn.tool_calls:
                    issued[call.id] = turn.index
                if turn.role is Role.TOOL and turn.tool_call_id in issued:
                    call_of[turn.index] = issued[turn.tool_call_id]
            self._call_of = call_of
        if tool_turn not in self._call_of:
            raise KeyError(f"{self.id}: no call answered by turn {tool_turn}")
        return self._call_of[tool_turn]
