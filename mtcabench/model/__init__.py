"""The data model: every record that a stage reads or writes, in one place.

Each stage reads and writes JSON Lines files of these records (one record per line,
keyed by a stable id). Every record carries ``kind`` (what it is) and ``schema_version``
(which layout it follows), so that a reader can refuse a file of the wrong kind or from a
newer mtcabench with a clear message instead of misreading it.

Offsets: every character offset (a span's ``start``/``end``, an evidence quote's) refers to
:attr:`Turn.text`, the canonical text of a turn: its content, followed for a turn that
calls tools (the assistant's, or a user's with tools of their own) by one line per tool
call, ``name({"arg": ...})``. Spans in answers therefore have the same offsets in
``content`` and in ``text``.

Import every name from here (``from mtcabench.model import Conversation``); the modules
behind it are split by role only to keep each short: ``_base`` (Record, kind and version),
``_conversation`` (roles, turns, tool calls), ``_metadata`` (the allow-list of conversation
metadata), ``_names`` (the name rule of sources, domains and agent models), ``_spans``
(target spans, edges, provenance graphs, dependency types) and ``_records`` (what each stage
writes). The bottom of the
package's layers: it imports nothing else of mtcabench.
"""

from mtcabench.model._base import SCHEMA_VERSION, Record, _Model
from mtcabench.model._conversation import (
    CALLERS,
    Conversation,
    Role,
    ToolCall,
    Turn,
    MAX_TRIAL,
    browser_offset,
)
from mtcabench.model._names import (
    NO_AGENT,
    RESERVED_CONFIGS,
    agent_model_name,
    domain_name,
    source_name,
)
from mtcabench.model._metadata import METADATA_KEYS, conversation_metadata
from mtcabench.model._records import (
    KIND_FILES,
    RECORD_TYPES,
    AlternativeGraph,
    Annotator,
    BenchmarkSpan,
    Candidate,
    ClaimAnnotation,
    ClaimCheck,
    ContextWindow,
    DecisionSource,
    ExplainedSpan,
    ExplanationRecord,
    GraphEdit,
    PredictedEdge,
    Proposal,
    Rejection,
    ReviewDecision,
    SubmissionEntry,
    SubmissionHeader,
    Verdict,
    WindowedTurn,
)
from mtcabench.model._spans import (
    ClaimKind,
    CounterfactualEdit,
    SCORE_DIGITS,
    DependencyType,
    Edge,
    EdgeKind,
    Evidence,
    ProvenanceGraph,
    ScoredSentence,
    SpanKind,
    SpanOrigin,
    TargetSpan,
    parse_span_id,
    span_id,
)

__all__ = [
    "CALLERS",
    "MAX_TRIAL",
    "NO_AGENT",
    "RESERVED_CONFIGS",
    "agent_model_name",
    "domain_name",
    "source_name",
    "METADATA_KEYS",
    "browser_offset",
    "conversation_metadata",
    "KIND_FILES",
    "RECORD_TYPES",
    "SCORE_DIGITS",
    "SCHEMA_VERSION",
    "AlternativeGraph",
    "Annotator",
    "BenchmarkSpan",
    "ExplainedSpan",
    "ExplanationRecord",
    "Candidate",
    "ClaimAnnotation",
    "ClaimCheck",
    "ContextWindow",
    "Conversation",
    "ClaimKind",
    "CounterfactualEdit",
    "DecisionSource",
    "DependencyType",
    "Edge",
    "EdgeKind",
    "Evidence",
    "GraphEdit",
    "PredictedEdge",
    "Proposal",
    "ProvenanceGraph",
    "Record",
    "Rejection",
    "ReviewDecision",
    "Role",
    "ScoredSentence",
    "SpanKind",
    "SpanOrigin",
    "SubmissionEntry",
    "SubmissionHeader",
    "TargetSpan",
    "ToolCall",
    "Turn",
    "Verdict",
    "WindowedTurn",
    "_Model",
    "parse_span_id",
    "span_id",
]
