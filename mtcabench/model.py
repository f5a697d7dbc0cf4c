"""The data model: every record that a stage reads or writes, in one place.

Each stage reads and writes JSON Lines files of these records (one record per line,
keyed by a stable id). Every record carries ``kind`` (what it is) and ``schema_version``
(which layout it follows), so that a reader can refuse a file of the wrong kind or from a
newer mtcabench with a clear message instead of misreading it.

Offsets: every character offset (a span's ``start``/``end``, an evidence quote's) refers to
:attr:`Turn.text`, the canonical text of a turn: its content, followed for an assistant
turn by one line per tool call, ``name({"arg": ...})``. Spans in answers therefore have the
same offsets in ``content`` and in ``text``.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from enum import Enum
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

#: Layout version of every record kind defined here. A reader refuses a newer one.
SCHEMA_VERSION = 1


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


class DependencyType(str, Enum):
    """How a target span depends on the context (the four MTCABench types)."""

    DIRECT = "direct"  # one hop to exogenous turns only
    CHAINED = "chained"  # through one or more intermediate assistant turns
    MULTI_SOURCE = "multi-source"  # two or more independent sources
    HALLUCINATION = "hallucination"  # unsupported or wrong; graph holds the priming turns


class EdgeKind(str, Enum):
    """Why an edge exists."""

    CONTENT = "content"  # the child's content depends on the parent's
    STRUCTURAL = "structural"  # a tool result answers the call issued by the parent turn


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", use_enum_values=False, populate_by_name=True)


class Record(_Model):
    """Base of the top-level records written one per line; checks kind and version."""

    KIND: ClassVar[str] = ""

    kind: str = Field(default="", description="What this record is; fixed per record type.")
    schema_version: int = Field(
        default=SCHEMA_VERSION, description="Layout version of this record kind."
    )

    @model_validator(mode="before")
    @classmethod
    def _check_kind_and_version(cls, data: Any) -> Any:
        if isinstance(data, dict):
            kind = data.get("kind", cls.KIND)
            if kind != cls.KIND:
                raise ValueError(
                    f"this is a {kind!r} record, expected {cls.KIND!r}: is it the right file?"
                )
            version = data.get("schema_version", SCHEMA_VERSION)
            if not isinstance(version, int) or version > SCHEMA_VERSION or version < 1:
                raise ValueError(
                    f"schema_version {version!r} of {cls.KIND!r} records is not one this "
                    f"mtcabench reads (it reads 1 to {SCHEMA_VERSION}); upgrade mtcabench"
                )
            data = {**data, "kind": cls.KIND}
        return data

    @property
    def key(self) -> str:
        """The stable id of this record (its ``id`` or ``span_id``)."""
        return getattr(self, "id", None) or self.span_id


# --------------------------------------------------------------------------- conversations


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
        """Canonical text of the turn; all offsets refer to it (see the module docstring)."""
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

    id: str = Field(description="Stable id, e.g. taubench/airline/gpt-4o/task-3/trial-0.")
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


# --------------------------------------------------------------------------- graphs


class Evidence(_Model):
    """The part of the parent turn that supports an edge."""

    quote: str = Field(description="Text of the parent turn that supports the edge.")
    start: int | None = Field(default=None, ge=0, description="Offset of quote in parent text.")
    end: int | None = Field(default=None, ge=0, description="End offset (exclusive).")


class Edge(_Model):
    """``child -> parent``: the child's content depends on the parent turn (parent < child)."""

    child: int = Field(description="Index of the dependent turn.")
    parent: int = Field(description="Index of the turn depended on; earlier than child.")
    kind: EdgeKind = Field(default=EdgeKind.CONTENT, description="content or structural.")
    score: float | None = Field(default=None, description="Attribution score, if any.")
    evidence: Evidence | None = Field(default=None, description="Supporting quote, if any.")

    @property
    def pair(self) -> tuple[int, int]:
        return (self.child, self.parent)


class TargetSpan(_Model):
    """A character range inside one assistant turn, whose provenance is asked for."""

    turn: int = Field(ge=0, description="Index of the assistant turn holding the span.")
    start: int = Field(ge=0, description="Start offset in the turn's text.")
    end: int = Field(ge=0, description="End offset (exclusive) in the turn's text.")
    text: str = Field(description="The span's text; equals turn.text[start:end].")

    @field_validator("end")
    @classmethod
    def _end_after_start(cls, end: int, info: Any) -> int:
        start = info.data.get("start")
        if start is not None and end <= start:
            raise ValueError(f"span end {end} must be greater than start {start}")
        return end


class ProvenanceGraph(_Model):
    """A DAG over turn indices rooted at the target span's turn."""

    target: int = Field(description="Index of the target span's turn (the root).")
    nodes: list[int] = Field(description="Turn indices in the graph, target included.")
    edges: list[Edge] = Field(default_factory=list, description="child -> parent edges.")

    def pairs(self) -> set[tuple[int, int]]:
        return {e.pair for e in self.edges}


def span_id(conversation_id: str, span: TargetSpan) -> str:
    """The stable id of a target span: conversation, turn and offsets (see parse_span_id)."""
    return f"{conversation_id}#{span.turn}:{span.start}-{span.end}"


# The part after the conversation id has a fixed shape and holds no '#': parsed from the
# right, an id is unambiguous whatever the conversation id holds ('#', ':', '-' included).
# Numbers are written without leading zeros, so that parsing and span_id are inverses.
_SPAN_TAIL = re.compile(r"#(0|[1-9][0-9]*):(0|[1-9][0-9]*)-(0|[1-9][0-9]*)\Z")


def parse_span_id(span_id: str) -> tuple[str, int, int, int]:
    """``(conversation id, turn, start, end)`` of a span id; ValueError if it is not one."""
    m = _SPAN_TAIL.search(span_id) if isinstance(span_id, str) else None
    if m is None:
        raise ValueError(f"{span_id!r} is not a span id (<conversation id>#<turn>:<start>-<end>)")
    return span_id[: m.start()], int(m[1]), int(m[2]), int(m[3])


# --------------------------------------------------------------------------- annotation


class Annotator(_Model):
    """Who or what proposed a graph."""

    name: str = Field(description="Annotator family: 'llm', 'lineage', ...")
    model: str | None = Field(default=None, description="Model name for an LLM annotator.")
    endpoint: str | None = Field(default=None, description="Base URL of the API used.")
    prompt_version: str | None = Field(default=None, description="Prompt template version.")
    prompt_hash: str | None = Field(default=None, description="sha256 of the template text.")
    rules_version: str | None = Field(default=None, description="Rule set version (lineage).")

    @property
    def label(self) -> str:
        """A short label such as 'llm:gpt-4o@propose-v1' used as a model version."""
        detail = self.model or self.rules_version or ""
        version = f"@{self.prompt_version}" if self.prompt_version else ""
        return f"{self.name}:{detail}{version}" if detail else f"{self.name}{version}"


class Rejection(_Model):
    """Why a proposal did not pass the deterministic checks (kept, never dropped)."""

    reason: str = Field(description="Short machine-readable reason, e.g. 'quote-not-found'.")
    detail: str = Field(default="", description="Human-readable explanation.")


class Proposal(Record):
    """Phase 1 output: a target span, its type and proposed graph (or why it was rejected)."""

    KIND: ClassVar[str] = "proposal"

    id: str = Field(description="Span id (see span_id); for a rejected output, a stable key.")
    conversation_id: str = Field(description="Conversation the span belongs to.")
    span: TargetSpan | None = Field(default=None, description="The target span, if it resolved.")
    dependency_type: DependencyType | None = Field(default=None, description="Proposed type.")
    graph: ProvenanceGraph | None = Field(default=None, description="Proposed graph.")
    annotator: Annotator = Field(description="Who proposed it.")
    status: Literal["ok", "rejected"] = Field(default="ok", description="Passed checks or not.")
    rejections: list[Rejection] = Field(default_factory=list, description="Failed checks.")
    raw_output: str | None = Field(default=None, description="Model output, kept on failure.")
    rationale: str | None = Field(default=None, description="Annotator's short explanation.")
    created_at: datetime | None = Field(default=None, description="When it was produced.")


class AlternativeGraph(_Model):
    """Another annotator's graph for the same span, kept beside the candidate for review."""

    annotator: Annotator
    dependency_type: DependencyType | None = None
    graph: ProvenanceGraph
    edge_f1: float | None = Field(default=None, description="Edge F1 against the main graph.")


class Candidate(Record):
    """Phase 2 output, the input to review: a verified span with its graph."""

    KIND: ClassVar[str] = "candidate"

    id: str = Field(description="Span id.")
    conversation_id: str = Field(description="Conversation the span belongs to.")
    span: TargetSpan | None = Field(default=None, description="The target span.")
    dependency_type: DependencyType | None = Field(default=None, description="Verified type.")
    graph: ProvenanceGraph | None = Field(default=None, description="Verified graph.")
    annotator: Annotator = Field(description="Who produced the verified graph.")
    proposal_annotator: Annotator | None = Field(
        default=None, description="Who made the phase-1 proposal, if different."
    )
    status: Literal["ok", "rejected"] = Field(default="ok", description="Passed checks or not.")
    rejections: list[Rejection] = Field(default_factory=list, description="Failed checks.")
    raw_output: str | None = Field(default=None, description="Model output, kept on failure.")
    confidence: float | None = Field(default=None, ge=0, le=1, description="Verifier confidence.")
    rationale: str | None = Field(default=None, description="Verifier's short rationale.")
    changes: list[str] = Field(default_factory=list, description="What verification changed.")
    alternatives: list[AlternativeGraph] = Field(
        default_factory=list, description="Other annotators' graphs for the same span."
    )
    created_at: datetime | None = Field(default=None, description="When it was produced.")


# --------------------------------------------------------------------------- review


class Verdict(str, Enum):
    """A reviewer's decision on a candidate."""

    ACCEPT = "accept"
    ACCEPT_WITH_EDITS = "accept_with_edits"
    REJECT = "reject"


class DecisionSource(str, Enum):
    """Whether a person made the decision (the release card reports this span by span)."""

    HUMAN = "human"  # a reviewer in Label Studio
    AUTO = "auto"  # accepted automatically, with no reviewer (e.g. the sample run)


class GraphEdit(_Model):
    """How the reviewer changed the candidate graph."""

    edges_added: list[tuple[int, int]] = Field(default_factory=list)
    edges_removed: list[tuple[int, int]] = Field(default_factory=list)
    nodes_added: list[int] = Field(default_factory=list)
    nodes_removed: list[int] = Field(default_factory=list)
    type_changed: tuple[str, str] | None = Field(default=None, description="(before, after).")


class ReviewDecision(Record):
    """One reviewer's decision on one span, with the final graph."""

    KIND: ClassVar[str] = "review"

    id: str = Field(description="Span id.")
    conversation_id: str = Field(description="Conversation the span belongs to.")
    span: TargetSpan = Field(description="The target span.")
    dependency_type: DependencyType = Field(description="Type after review.")
    graph: ProvenanceGraph = Field(description="Graph after review.")
    verdict: Verdict = Field(description="accept, accept_with_edits or reject.")
    decision_source: DecisionSource = Field(description="human or auto.")
    reviewer: str | None = Field(default=None, description="Reviewer (e-mail or id), if human.")
    decided_at: datetime | None = Field(default=None, description="When the decision was made.")
    edited: bool = Field(default=False, description="Whether the graph or type was changed.")
    edit: GraphEdit | None = Field(default=None, description="What was changed.")
    comment: str | None = Field(default=None, description="Reviewer's comment.")
    annotator: Annotator | None = Field(default=None, description="Who proposed the candidate.")
    review_task: str | None = Field(default=None, description="Label Studio task/annotation id.")


# --------------------------------------------------------------------------- benchmark


class BenchmarkSpan(Record):
    """A released span: the unit of the benchmark, with its gold graph."""

    KIND: ClassVar[str] = "span"

    id: str = Field(description="Span id.")
    conversation_id: str = Field(description="Conversation the span belongs to.")
    source: str = Field(description="Dataset: taubench, confetti.")
    domain: str = Field(description="Domain or task family.")
    span: TargetSpan = Field(description="The target span.")
    dependency_type: DependencyType = Field(description="Gold dependency type.")
    graph: ProvenanceGraph = Field(description="Gold provenance graph.")
    depth: int = Field(ge=0, description="Longest path (edges) from the target in the graph.")
    sources: list[int] = Field(description="Exogenous nodes of the gold graph.")
    decision_source: DecisionSource = Field(description="human or auto (see the card).")
    verdict: Verdict = Field(description="accept or accept_with_edits.")
    reviewers: list[str] = Field(default_factory=list, description="Reviewers who decided.")
    annotator: Annotator | None = Field(default=None, description="Who proposed it.")


# --------------------------------------------------------------------------- submissions


class PredictedEdge(_Model):
    """One predicted edge of a submission: ``child -> parent`` with an optional score."""

    child: int
    parent: int
    score: float | None = None


class SubmissionHeader(Record):
    """First line of a submission: how it was produced."""

    KIND: ClassVar[str] = "submission"

    method: str = Field(description="e.g. tokengeist, flat.")
    scorer: str | None = Field(default=None, description="Base scorer, e.g. avg-attention.")
    model: str | None = Field(default=None, description="Model attributed with.")
    parameters: dict[str, Any] = Field(default_factory=dict, description="Method parameters.")
    benchmark: str | None = Field(default=None, description="Benchmark path or Hub id.")
    created_at: datetime | None = Field(default=None, description="When it was produced.")
    notes: dict[str, Any] = Field(default_factory=dict, description="Anything else recorded.")


class SubmissionEntry(Record):
    """One line per span of a submission: the predicted edges."""

    KIND: ClassVar[str] = "prediction"

    span_id: str = Field(description="Benchmark span id.")
    edges: list[PredictedEdge] = Field(default_factory=list, description="Predicted edges.")
    skipped: str | None = Field(
        default=None, description="Why no prediction was made (e.g. too long), if so."
    )


#: Every record type by its ``kind``, for readers that accept several.
RECORD_TYPES: dict[str, type[Record]] = {
    cls.KIND: cls
    for cls in (
        Conversation,
        Proposal,
        Candidate,
        ReviewDecision,
        BenchmarkSpan,
        SubmissionHeader,
        SubmissionEntry,
    )
}
