"""Target spans and their provenance graphs: edges, evidence, dependency types, span ids."""

from __future__ import annotations

import re
from enum import Enum
from typing import Annotated, Any

from pydantic import Field, PlainSerializer, field_validator, model_serializer

from mtcabench.model._base import _Model


#: Decimals a score is written with. Scores are rounded once, here, when a record is written
#: (never where they are computed): an edge and its evidence sentences go through the same
#: rounding, which keeps order, so a sentence written never outscores its edge.
SCORE_DIGITS = 6


def _written_score(value: float | None) -> float | None:
    return None if value is None else round(float(value), SCORE_DIGITS)


#: A score as kept in memory (full precision) and written (``SCORE_DIGITS`` decimals).
Score = Annotated[float, PlainSerializer(_written_score, return_type=float)]
OptionalScore = Annotated[float | None, PlainSerializer(_written_score, return_type=float | None)]


class DependencyType(str, Enum):
    """How a target span depends on the context (the four MTCABench types)."""

    DIRECT = "direct"  # one hop to exogenous turns only
    CHAINED = "chained"  # through one or more intermediate assistant turns
    MULTI_SOURCE = "multi-source"  # two or more independent sources
    HALLUCINATION = "hallucination"  # unsupported or wrong; graph holds the priming turns


class SpanOrigin(str, Enum):
    """Where a span's dependency comes from: the agent's own answer, or an edit of it."""

    REAL = "real"  # the answer as the agent wrote it
    COUNTERFACTUAL = "counterfactual"  # a value of the answer replaced (see CounterfactualEdit)


class SpanKind(str, Enum):
    """What a target span is (docs/data-model.md, "Values and claims")."""

    VALUE = "value"  # an id, price, date or count that an earlier turn holds verbatim
    CLAIM = "claim"  # a clause that asserts what the agent concluded; no turn holds it verbatim


class ClaimKind(str, Enum):
    """What a claim asserts: one vocabulary, read by every stage (annotate, review, release,
    score, view). The order is the order reports list them in."""

    DECISION = "decision"  # a decision or refusal ("I cannot modify a basic economy flight")
    ELIGIBILITY = "eligibility"  # a condition met or not ("you are eligible for a refund")
    STATUS = "status"  # a record's state in other words ("has already been delivered")
    ABSENCE = "absence"  # that something is not there ("no nonstop flights on that date")
    COUNT = "count"  # how many ("for 2 passengers", "three reservations")
    COMPUTATION = "computation"  # a sum, difference or product ("a total refund of $1,268")
    COMPARISON = "comparison"  # an order between options ("the cheapest option")
    SUMMARY = "summary"  # a record or several in other words ("a round trip LAX <-> SFO")
    CONFIRMATION = "confirmation"  # an action done ("your reservation has been cancelled")
    POLICY = "policy"  # a rule stated ("changes must be made 24 hours before departure")
    OTHER = "other"


class EdgeKind(str, Enum):
    """Why an edge exists."""

    CONTENT = "content"  # the child's content depends on the parent's
    STRUCTURAL = "structural"  # a tool result answers the call issued by the parent turn


class Evidence(_Model):
    """The part of the parent turn that supports an edge."""

    quote: str = Field(description="Text of the parent turn that supports the edge.")
    start: int | None = Field(default=None, ge=0, description="Offset of quote in parent text.")
    end: int | None = Field(default=None, ge=0, description="End offset (exclusive).")


class ScoredSentence(_Model):
    """A sentence of a predicted edge's parent turn with its score: where in the parent the
    child's content came from, according to the base scorer.

    ``score`` is on the scale of the edge's turn share: the sentence's positive score over the
    same total that turns the turn scores into shares (so with the ``max`` turn aggregate the
    best sentence's score is the turn's share).
    """

    start: int = Field(ge=0, description="Start offset of the sentence in the parent's text.")
    end: int = Field(ge=0, description="End offset (exclusive); surrounding blanks left out.")
    score: Score = Field(description="The sentence's share of the child's attribution.")


class Edge(_Model):
    """``child -> parent``: the child's content depends on the parent turn (parent < child)."""

    child: int = Field(description="Index of the dependent turn.")
    parent: int = Field(description="Index of the turn depended on; earlier than child.")
    kind: EdgeKind = Field(default=EdgeKind.CONTENT, description="content or structural.")
    score: OptionalScore = Field(default=None, description="Attribution score, if any.")
    evidence: Evidence | None = Field(default=None, description="Supporting quote, if any.")
    sentences: list[ScoredSentence] = Field(
        default_factory=list, description="A predicted content edge's evidence: the parent's "
        "best sentences for the child, best first (empty on gold and structural edges).")

    @field_validator("sentences", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return [] if value is None else value  # files of schema version 1 may hold null

    @model_serializer(mode="wrap")
    def _without_empty_sentences(self, handler: Any) -> Any:
        # An edge without evidence is written without the key, as before the field existed:
        # files of gold graphs stay byte for byte.
        data = handler(self)
        if isinstance(data, dict) and not data.get("sentences"):
            data.pop("sentences", None)
        return data

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


class CounterfactualEdit(_Model):
    """The edit that made a counterfactual hallucination: in a real answer, a value replaced
    by a value of the same field that an earlier turn gives for another entity (another
    flight's price in the same search result, another passenger's birth date), so that the
    turn that primed the wrong value is known by construction."""

    conversation_id: str = Field(description="The real conversation that was edited.")
    field: str = Field(description="The field of both values in the source turn, e.g. "
                       "flight_number, prices.economy, dob, reservations[].")
    original: str = Field(description="The answer's text at the span before the edit.")
    replacement: str = Field(description="The text put in its place (the span's text).")
    source_turn: int = Field(ge=0, description="The turn the replacement was read from by the "
                             "lineage edge rule: the turn that primed it (the gold graph's "
                             "parent of the span).")
    source_quote: str = Field(description="The replacement as written in the source turn.")
    source_start: int = Field(ge=0, description="Its offset in the source turn's text.")
    source_end: int = Field(ge=0, description="Its end offset (exclusive).")
    entity_turn: int = Field(ge=0, description="The tool result that gives both values, each "
                             "for its own entity (the source_turn, or the result behind it).")
    original_start: int | None = Field(default=None, ge=0, description="Where the entity turn "
                                       "gives the original value, if it does.")


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
