"""Conversations: who spoke (roles), the turns with their tool calls, and the conversation record.

Who may call tools: the assistant, and the user where the user has tools of their own
(tau2-bench's telecom domain: the customer toggles airplane mode on their own phone). A tool
result answers the turn that issued its call, whatever that turn's role; system and tool turns
issue none (they do not act). A user's call is exogenous like the rest of the user's turn:
its result's structural edge goes to the user turn, which is a leaf of every graph.
"""

from __future__ import annotations

import json
from enum import Enum
from typing import Any, ClassVar

from pydantic import Field, PrivateAttr, model_validator

from mtcabench.model._base import Id, Record, _Model
from mtcabench.model._names import AgentModel, Domain, Source

#: The largest trial number: the release's Parquet column is int32, and a number past it
#: (tau2's ``trial`` of 2^63) is refused where the conversation is read, not when it is written.
MAX_TRIAL = 2**31 - 1


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
    """One tool call issued by a turn: the assistant's, or the user's where the user has tools."""

    id: str = Field(description="Call id; the tool turn answering it names it in tool_call_id.")
    name: str = Field(description="Name of the tool called.")
    arguments: dict[str, Any] = Field(
        default_factory=dict, description="Arguments, as the parsed JSON object."
    )

    def render(self) -> str:
        """The call as one line of text: ``name({...})`` with the arguments as compact JSON."""
        return f"{self.name}({json.dumps(self.arguments, ensure_ascii=False)})"


#: The roles whose turns may issue tool calls (see the module docstring).
CALLERS = frozenset({Role.ASSISTANT, Role.USER})


class Turn(_Model):
    """One message of a conversation."""

    index: int = Field(ge=0, description="Position in the conversation, from 0.")
    role: Role = Field(description="system, user, assistant or tool.")
    content: str = Field(default="", description="The message text as the source gave it.")
    tool_calls: list[ToolCall] = Field(
        default_factory=list, description="Tool calls issued: by an assistant turn, or by a "
        "user turn where the user has tools of their own (tau2-bench's telecom domain)."
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
        if self.tool_calls and self.role not in CALLERS:
            raise ValueError(f"turn {self.index}: a {self.role.value} turn issues tool calls; "
                             "only assistant and user turns do")
        if self.role is Role.TOOL and not self.tool_call_id:
            raise ValueError(f"turn {self.index}: a tool turn must name the call it answers")
        if self.role is not Role.TOOL and self.tool_call_id:
            raise ValueError(f"turn {self.index}: only tool turns carry tool_call_id")
        return self


class Conversation(Record):
    """An agent conversation: ordered turns plus where it came from.

    Version 2 adds ``agent_implementation`` and user turns that issue tool calls; a record
    with neither is written as version 1, as it was (version 1 files read unchanged).
    """

    KIND: ClassVar[str] = "conversation"
    VERSION: ClassVar[int] = 2

    id: Id = Field(description="Stable id, e.g. taubench/airline/gpt-4o/task-3/trial-0.")
    source: Source = Field(description="Dataset it came from: taubench, confetti, ... (the "
                           "name rule: mtcabench.model._names).")
    domain: Domain = Field(description="Domain or task family, e.g. airline, retail (the name "
                           "rule: lower-case letters, digits, '_', '-'; normalised on read).")
    schema_version: int = Field(default=1, description="Layout version: 1, or 2 where the "
                                "record names its agent implementation or a user turn calls tools.")
    agent_model: AgentModel = Field(default=None, description="Model that played the agent "
                                    "(the name rule; None: the run names none).")
    agent_implementation: str | None = Field(
        default=None, description="The agent program that ran the model, where the source "
        "names it (tau2-bench's agent_info.implementation: llm_agent, its default agent, or a "
        "submission's own); with agent_model it tells two submissions of one model apart.")
    task_id: str | None = Field(default=None, description="Task id within the source.")
    trial: int | None = Field(default=None, ge=0, le=MAX_TRIAL, description="Trial number of "
                              "the task, if any (0 to 2^31-1: the release's int32 column).")
    turns: list[Turn] = Field(description="The turns, in order; turns[i].index == i.")
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="What the reader took from the source, by name from "
        "an allow-list (origin, reward, termination reason, expected actions...: "
        "mtcabench.transcripts.METADATA_KEYS); never the run's settings wholesale."
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
                    "which no earlier turn issued"
                )
        if self.agent_implementation is not None or any(
                t.tool_calls and t.role is Role.USER for t in self.turns):
            if "schema_version" in self.model_fields_set and self.schema_version < 2:
                raise ValueError("a conversation naming its agent implementation or with a user "
                                 "turn that calls tools needs schema_version 2 (or none given)")
            self.schema_version = 2
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
        """Index of the turn that issued the call answered by ``tool_turn`` (an assistant
        turn, or a user turn where the user has tools)."""
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
