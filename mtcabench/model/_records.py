"""The records the stages write: proposals, candidates, reviews, released spans, submissions.

Proposals and candidates come from annotate, review decisions from review, released spans
from release, submission headers and entries from trace; ``RECORD_TYPES`` names them all.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Any, ClassVar, Literal

from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    field_serializer,
    model_serializer,
    model_validator,
)

from mtcabench.model._base import Id, Record, _Model
from mtcabench.model._conversation import Conversation
from mtcabench.model._names import Domain, Source
from mtcabench.model._spans import (
    ClaimKind,
    CounterfactualEdit,
    DependencyType,
    OptionalScore,
    ProvenanceGraph,
    ScoredSentence,
    SpanKind,
    SpanOrigin,
    TargetSpan,
)


class _Origin(Record):
    """What a span is and where it comes from: its kind (``value`` unless it is a claim, and
    then the claim's kind), its origin (``real`` unless an edit made it) and the edit, if any.

    Each is written only where it differs from the default: a real value span's record is
    what it was before kinds and origins existed, byte for byte (files, releases and their
    checksums).
    """

    span_kind: SpanKind = Field(default=SpanKind.VALUE, description="value (copied from an "
                                "earlier turn) or claim (asserts what the agent concluded).")
    claim_kind: ClaimKind | None = Field(default=None, description="For a claim: what it "
                                         "asserts (decision, eligibility, status, ...).")
    origin: SpanOrigin = Field(default=SpanOrigin.REAL, description="real (the agent's own "
                               "answer) or counterfactual (a value of it replaced).")
    counterfactual: CounterfactualEdit | None = Field(
        default=None, description="For a counterfactual span: the edit that made it.")

    @model_validator(mode="after")
    def _claims_have_a_kind(self) -> Any:
        if self.span_kind is SpanKind.CLAIM and self.claim_kind is None:
            raise ValueError("a claim needs its claim_kind (one of: "
                             f"{', '.join(k.value for k in ClaimKind)})")
        if self.span_kind is SpanKind.VALUE and self.claim_kind is not None:
            raise ValueError("claim_kind is set on a value span: set span_kind to 'claim' "
                             "or leave claim_kind out")
        return self

    @model_serializer(mode="wrap")
    def _defaults_unwritten(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        if not isinstance(data, dict):
            return data
        if data.get("span_kind") in (SpanKind.VALUE, "value"):
            data.pop("span_kind")
        if data.get("claim_kind", 0) is None:
            data.pop("claim_kind")
        if data.get("origin") in (SpanOrigin.REAL, "real"):
            data.pop("origin")
            if data.get("counterfactual", None) is None:
                data.pop("counterfactual", None)
        return data


# --------------------------------------------------------------------------- annotation


class Annotator(_Model):
    """Who or what proposed a graph."""

    name: str = Field(description="Annotator family: 'llm', 'lineage', ...")
    model: str | None = Field(default=None, description="Model name for an LLM annotator.")
    endpoint: str | None = Field(default=None, description="Base URL of the API used.")
    prompt_version: str | None = Field(default=None, description="Prompt template version.")
    prompt_hash: str | None = Field(default=None, description="sha256 of the template text.")
    rules_version: str | None = Field(default=None, description="Rule set version (lineage), "
                                      "or the annotation guide's version (human).")
    person: str | None = Field(default=None, description="A human annotator's pseudonymous id "
                               "(annotator 'human'); written only when set.")

    @model_serializer(mode="wrap")
    def _person_only_when_set(self, handler: SerializerFunctionWrapHandler) -> Any:
        # Records of model and rule annotators stay byte for byte what they were.
        data = handler(self)
        if isinstance(data, dict) and data.get("person", 0) is None:
            data.pop("person")
        return data

    @property
    def label(self) -> str:
        """A short label such as 'llm:gpt-4o@propose-v1' used as a model version."""
        if self.person:  # 'human:p1@claims-guide-1': who, and the guide they followed
            guide = f"@{self.rules_version}" if self.rules_version else ""
            return f"{self.name}:{self.person}{guide}"
        detail = self.model or self.rules_version or ""
        version = f"@{self.prompt_version}" if self.prompt_version else ""
        return f"{self.name}:{detail}{version}" if detail else f"{self.name}{version}"


class Rejection(_Model):
    """Why a proposal did not pass the deterministic checks (kept, never dropped)."""

    reason: str = Field(description="Short machine-readable reason, e.g. 'quote-not-found'.")
    detail: str = Field(default="", description="Human-readable explanation.")


class Proposal(_Origin):
    """Phase 1 output: a target span, its type and proposed graph (or why it was rejected)."""

    KIND: ClassVar[str] = "proposal"

    id: Id = Field(description="Span id (see span_id); for a rejected output, a stable key.")
    conversation_id: Id = Field(description="Conversation the span belongs to.")
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


class Candidate(_Origin):
    """Phase 2 output, the input to review: a verified span with its graph."""

    KIND: ClassVar[str] = "candidate"

    id: Id = Field(description="Span id.")
    conversation_id: Id = Field(description="Conversation the span belongs to.")
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


class ReviewDecision(_Origin):
    """One reviewer's decision on one span, with the final graph."""

    KIND: ClassVar[str] = "review"

    id: Id = Field(description="Span id.")
    conversation_id: Id = Field(description="Conversation the span belongs to.")
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


class ClaimAnnotation(Record):
    """One claim's graph as a person wrote it (pass 1 of the annotated claims set).

    A hand-written line: ``kind`` and ``schema_version`` may be left out. The span is given by
    its text (and which occurrence of it in the turn), not by offsets, so that a person can
    copy it from the sheet; edges are ``[child, parent]`` pairs of turn indices
    (docs/claims.md, the guide).
    """

    KIND: ClassVar[str] = "claim-annotation"

    conversation_id: Id = Field(description="The conversation.")
    turn: int = Field(ge=0, description="The assistant turn holding the claim.")
    text: str = Field(min_length=1, description="The claim: an exact substring of the turn's "
                      "text (its message, for a turn written as a JSON object).")
    occurrence: int = Field(default=1, ge=1, description="Which occurrence of text in the "
                            "turn, from 1.")
    edges: list[tuple[int, int]] = Field(description="[child, parent] pairs.")
    type: DependencyType = Field(description="direct, chained, multi-source or hallucination.")
    claim_kind: ClaimKind = Field(description="What the claim asserts.")
    rationale: str = Field(default="", description="Where each piece of the claim comes from.")
    annotator: str = Field(min_length=1, description="Who wrote the graph (a pseudonym).")


class ClaimCheck(Record):
    """Pass 2 of the annotated claims set: a second person's decision on one pass-1 graph,
    edge by edge, with the graph as it stands after the check."""

    KIND: ClassVar[str] = "claim-check"

    conversation_id: Id = Field(description="The conversation.")
    turn: int = Field(ge=0, description="The claim's turn, as in pass 1.")
    text: str = Field(min_length=1, description="The claim's text, as in pass 1.")
    occurrence: int = Field(default=1, ge=1, description="As in pass 1.")
    checker: str = Field(min_length=1, description="Who checked (never the annotator).")
    verdict: Verdict = Field(description="accept, accept_with_edits or reject.")
    edges: list[tuple[int, int]] = Field(default_factory=list, description="The graph after "
                                         "the check (pass 1's when accepted).")
    type: DependencyType | None = Field(default=None, description="The type after the check.")
    claim_kind: ClaimKind | None = Field(default=None, description="The kind after the check.")
    notes: str = Field(default="", description="Why each edge was removed or added, or why "
                       "the claim was rejected.")


# --------------------------------------------------------------------------- benchmark


class BenchmarkSpan(_Origin):
    """A released span: the unit of the benchmark, with its gold graph."""

    KIND: ClassVar[str] = "span"

    id: Id = Field(description="Span id.")
    conversation_id: Id = Field(description="Conversation the span belongs to.")
    source: Source = Field(description="Dataset: taubench, confetti (the name rule).")
    domain: Domain = Field(description="Domain or task family (the name rule: its "
                           "conversation's).")
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
    """One predicted edge of a submission: ``child -> parent`` with an optional score and,
    from schema version 2 of a prediction line, its evidence sentences."""

    child: int
    parent: int
    score: OptionalScore = None
    sentences: list[ScoredSentence] | None = Field(
        default=None, description="The parent's best sentences for the child, best first "
        "(offsets into the parent turn's text); needs schema_version 2.")


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


class WindowedTurn(_Model):
    """One earlier turn whose content a context window shortened."""

    turn: int = Field(ge=0, description="The turn's index.")
    tokens: int = Field(ge=0, description="Tokens of the turn's content, alone.")
    tokens_left_out: int = Field(ge=0, description="Of which left out (elision markers in "
                                 "their place).")
    left_out: bool = Field(default=False, description="Its whole content was left out (only "
                           "its header, tool calls and a marker stayed).")


class ContextWindow(_Model):
    """How a span past the model's context was attributed: in a window of the conversation
    with some earlier turns' content shortened (docs/evaluate.md, context-length policy)."""

    limit: int = Field(ge=1, description="The token limit (the model's context, or "
                       "max_tokens).")
    end_token: int = Field(ge=0, description="Where the span's turn ends in the whole "
                           "conversation (tokens), past the limit; the window is the turn's.")
    turns: list[WindowedTurn] = Field(default_factory=list, description="The shortened "
                                      "turns, in order.")


class SubmissionEntry(Record):
    """One line per span of a submission: the predicted edges.

    Version 2 adds the optional ``sentences`` of an edge (its evidence); a line without them
    is written as version 1, so that files without evidence stay as they were. Version 3 adds
    the optional ``window`` (a span attributed in a context window); a line without one is
    written as version 1 or 2, as before.
    """

    KIND: ClassVar[str] = "prediction"
    VERSION: ClassVar[int] = 3

    schema_version: int = Field(default=1, description="Layout version: 1, 2 where an "
                                "edge carries sentences, 3 where the line has a window.")
    span_id: Id = Field(description="Benchmark span id.")
    edges: list[PredictedEdge] = Field(default_factory=list, description="Predicted edges.")
    skipped: str | None = Field(
        default=None, description="Why no prediction was made (e.g. too long), if so."
    )
    window: ContextWindow | None = Field(
        default=None, description="Set when the span ends past the model's context and was "
        "attributed in a window of the conversation: which earlier turns were shortened.")

    @model_validator(mode="after")
    def _version_of_sentences(self) -> SubmissionEntry:
        given = self.schema_version if "schema_version" in self.model_fields_set else None
        if self.window is not None:
            if given is not None and given < 3:
                raise ValueError("a window needs schema_version 3 (or none given)")
            self.schema_version = 3
        elif any(e.sentences is not None for e in self.edges):
            if given is not None and given < 2:
                raise ValueError("edges with sentences need schema_version 2 (or none given)")
            self.schema_version = max(2, given or 2)
        return self


#: Every record type by its ``kind``, for readers that accept several.
# --------------------------------------------------------------------------- explanations


class ExplainedSpan(_Model):
    """One span of an explanation and its graph by each method."""

    span_id: Id = Field(description="The span's id (conversation, turn, offsets).")
    span: TargetSpan = Field(description="The span explained.")
    graphs: dict[str, ProvenanceGraph] = Field(description="Its graph by each method.")
    window: ContextWindow | None = Field(
        default=None, description="Set when the span ends past the model's context: the "
        "context window its model-based graphs were made in (explanation version 3).")

    @field_serializer("graphs")
    def _graphs_without_nones(self, graphs: dict[str, ProvenanceGraph]) -> dict[str, Any]:
        # As a submission writes its edges: an unset field (no evidence) is left out.
        return {m: g.model_dump(mode="json", exclude_none=True) for m, g in graphs.items()}


class ExplanationRecord(Record):
    """``explain.json``: the graphs of some spans of one conversation and the run that made
    them, with the parameters a submission header of the same run would hold.

    Version 2 (version 1 was a hand-built dict without ``schema_version``, holding only the
    search settings in ``parameters``; it still reads): ``parameters`` holds every setting
    shared by the run (the search's, and for a model the header's ``turn_aggregate``,
    ``max_tokens``, ``seed``, ``scorer_parameters``, ``tool_calls``, ``dtype``), ``methods``
    each method's header parameters exactly as ``trace`` records them, ``notes`` the version.
    """

    KIND: ClassVar[str] = "explanation"
    VERSION: ClassVar[int] = 3

    schema_version: int = Field(default=2, description="Layout version (2; 1: before the "
                                "run's parameters were recorded; 3 where a span has a "
                                "context window).")
    conversation: Id = Field(description="The conversation explained.")
    model: str | None = Field(default=None, description="Model attributed with (None: only "
                              "model-free methods ran).")
    scorer: str | None = Field(default=None, description="Base scorer, e.g. avg-attention.")
    parameters: dict[str, Any] = Field(default_factory=dict, description="The run's shared "
                                       "settings (search, and the model's, as a header).")
    methods: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Per method, the parameters its submission header "
        "would record.")
    forward_passes: int = Field(default=0, description="Forward passes run.")
    tokens: int = Field(default=0, description="Tokens read (0: model-free).")
    targets: list[ExplainedSpan] = Field(default_factory=list, description="The spans and "
                                         "their graphs.")
    notes: dict[str, Any] = Field(default_factory=dict, description="mtcabench_version.")

    @model_validator(mode="before")
    @classmethod
    def _unversioned_is_version_1(cls, data: Any) -> Any:
        # Files written before the record had a version name their kind and no version: they
        # are version 1 (a record built in code, without either, is the newest).
        if isinstance(data, dict) and "kind" in data and "schema_version" not in data:
            data = {**data, "schema_version": 1}
        return data

    @model_validator(mode="after")
    def _version_of_windows(self) -> ExplanationRecord:
        # A span's window came with version 3; a file without one is written as before.
        if any(t.window is not None for t in self.targets):
            if "schema_version" in self.model_fields_set and self.schema_version < 3:
                raise ValueError("a span with a window needs schema_version 3 (or none given)")
            self.schema_version = 3
        return self


RECORD_TYPES: dict[str, type[Record]] = {
    cls.KIND: cls
    for cls in (
        Conversation,
        Proposal,
        Candidate,
        ReviewDecision,
        ClaimAnnotation,
        ClaimCheck,
        BenchmarkSpan,
        SubmissionHeader,
        SubmissionEntry,
    )
}


#: What a file of each record kind is, in words: for the messages that name a file given
#: where another is read (an ``explain.json`` to ``score``, a score report to ``validate``).
#: Kinds whose record lives above this package (a release's manifest, the score reports) are
#: named here too, by their ``KIND``.
KIND_FILES: dict[str, str] = {
    "conversation": "a conversations file",
    "proposal": "a proposals file",
    "candidate": "a candidates file",
    "review": "a review decisions file",
    "claim-annotation": "a claims annotation file (pass 1)",
    "claim-check": "a claims check file (pass 2)",
    "span": "a benchmark spans file",
    "submission": "a submission",
    "prediction": "a submission",
    "explanation": "an explanation written by `mtcabench explain` (explain.json)",
    "release": "a release manifest (release.json of a release folder)",
    "score-report": "a score report written by `mtcabench score`",
    "score-comparison": "a score comparison written by `mtcabench score --compare`",
}
