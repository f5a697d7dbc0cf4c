"""An explanation written back as OpenTelemetry telemetry, through the OpenTelemetry SDK:
``explain --otlp-endpoint URL`` (OTLP HTTP/protobuf) and ``--otlp-file PATH`` (an OTLP JSON
export, the file form ``explain`` itself reads).

Per explained span and method, one **provenance span** (name :data:`SPAN_NAME`) that
carries the graph:

- its parent is the answer's span: for a conversation read from an OpenTelemetry trace, the
  chat span that returned the answer, in that trace (so the provenance span shows under the
  answer in any trace viewer); for any other input, a trace of its own is written first, one
  span per turn under one conversation span, and the answer is its turn's span;
- one **link** per edge, to the span of the edge's parent turn, with the attributes
  :data:`LINK_TYPE` (``INFORMED_BY`` for a content edge, ``CAUSED_BY_GENERATION`` for a tool
  result's link to the turn that issued its call), :data:`EDGE_SCORE`, :data:`EDGE_KIND`,
  :data:`EDGE_EVIDENCE`, :data:`EDGE_CHILD_TURN` and :data:`EDGE_PARENT_TURN`;
- one ``gen_ai.evaluation.result`` **event** (the GenAI evaluation event):
  ``gen_ai.evaluation.name`` ``provenance``, ``gen_ai.evaluation.score.value`` the graph's
  confidence (:func:`~mtcabench.explainer._provenance.confidence`: the share of the span's
  attribution its traced parents account for), ``gen_ai.evaluation.score.label`` ``traced``
  or ``untraced``, ``gen_ai.evaluation.explanation`` the tree in a few lines.

Every attribute name is a constant of this module (docs/traces.md lists them). The span ids
of a trace of its own are derived from the conversation's id, so that a rerun writes the same
spans (a backend keeps one copy).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from mtcabench._version import __version__
from mtcabench.errors import InputError, ServiceError, needs_extra
from mtcabench.explainer._provenance import (
    SpanRef,
    confidence,
    evidence,
    graph_id,
    link_type,
    tree_text,
    turn_label,
    turn_spans,
)
from mtcabench.io import atomic_write
from mtcabench.model import Conversation, ExplanationRecord, Role

# -- attribute names (the one place they are written) ------------------------------------
#: The provenance span's name.
SPAN_NAME = "provenance"
#: The instrumentation scope the spans are written under.
SCOPE = "mtcabench.explain"
#: OpenTelemetry GenAI evaluation event and its attributes.
EVALUATION_EVENT = "gen_ai.evaluation.result"
EVALUATION_NAME = "gen_ai.evaluation.name"
EVALUATION_SCORE = "gen_ai.evaluation.score.value"
EVALUATION_LABEL = "gen_ai.evaluation.score.label"
EVALUATION_EXPLANATION = "gen_ai.evaluation.explanation"
#: The proposed GenAI link type (a causal link between spans).
LINK_TYPE = "gen_ai.attribution.link_type"
#: A link's edge: score (a turn share; absent on a structural edge), kind, evidence, turns.
EDGE_SCORE = "mtcabench.edge.score"
EDGE_KIND = "mtcabench.edge.kind"
EDGE_EVIDENCE = "mtcabench.edge.evidence"
EDGE_CHILD_TURN = "mtcabench.edge.child_turn"
EDGE_PARENT_TURN = "mtcabench.edge.parent_turn"
#: The provenance span's own attributes.
GRAPH_ID = "mtcabench.graph.id"
GRAPH_METHOD = "mtcabench.graph.method"
GRAPH_MODEL = "mtcabench.graph.model"
GRAPH_CONFIDENCE = "mtcabench.graph.confidence"
SPAN_TURN = "mtcabench.span.turn"
SPAN_TEXT = "mtcabench.span.text"
#: The explained conversation (our id: the log's name and its own id).
EXPLAINED_CONVERSATION = "mtcabench.conversation.id"
CONVERSATION_ID = "gen_ai.conversation.id"
OPERATION_NAME = "gen_ai.operation.name"
#: A turn's span in a trace of its own.
TURN_INDEX = "mtcabench.turn.index"
TURN_ROLE = "mtcabench.turn.role"
TURN_TEXT = "mtcabench.turn.text"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
#: The evaluation's name and labels.
EVALUATION = "provenance"
TRACED, UNTRACED = "traced", "untraced"
#: Longest text written into an attribute (a turn's or a span's text).
TEXT_LIMIT = 2000
#: Seconds the OTLP exporter may take (it retries within them).
EXPORT_TIMEOUT_S = 10.0


def require_otel() -> None:
    """The SDK and protobuf, or one line naming the extra that brings them (MissingExtra):
    what a command checks before it runs a model."""
    with needs_extra("writing the graph as OpenTelemetry telemetry", "otel"):
        # The SDK first: its absence is what names the extra (protobuf comes with it).
        import opentelemetry.sdk.trace  # noqa: F401
        import opentelemetry.exporter.otlp.proto.common  # noqa: F401
        import google.protobuf  # noqa: F401


def _int_id(hex_id: str, size: int, what: str) -> int:
    try:
        value = int(hex_id, 16)
    except ValueError:
        value = 0
    if len(hex_id) != 2 * size or value == 0:
        raise InputError(f"the trace gives {what} {hex_id!r}, not {2 * size} hex digits: its "
                         "spans cannot be linked; export the trace as OTLP JSON")
    return value


def _derived(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()[:8],
                          "big") or 1


class _Ids:
    """The ids of the spans we write, given in order (the SDK asks its id generator)."""

    def __init__(self) -> None:
        self.trace: int = 0
        self.spans: list[int] = []

    def generate_span_id(self) -> int:
        return self.spans.pop(0)

    def generate_trace_id(self) -> int:
        return self.trace

    def is_trace_id_random(self) -> bool:
        return False  # derived from the conversation's id


def _clip(text: str) -> str:
    return text if len(text) <= TEXT_LIMIT else text[: TEXT_LIMIT - 1] + "\u2026"


def make_spans(record: ExplanationRecord, conversation: Conversation,
               service_name: str = "mtcabench") -> list[Any]:
    """The explanation as finished SDK spans (``ReadableSpan``): a trace of its own for a
    conversation not read from a trace, then one provenance span per span and method."""
    require_otel()
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, TraceFlags

    ids = _Ids()
    memory = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource.create({"service.name": service_name,
                                  "service.version": __version__}), id_generator=ids)
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer(SCOPE, __version__)
    spans = turn_spans(conversation)
    if spans is None:
        spans = _own_trace(tracer, ids, conversation)

    def context(ref: SpanRef) -> SpanContext:
        return SpanContext(_int_id(ref.trace_id, 16, "trace id"),
                           _int_id(ref.span_id, 8, "span id"), is_remote=True,
                           trace_flags=TraceFlags(TraceFlags.SAMPLED))

    for target in record.targets:
        answer = spans[target.span.turn]
        parent = trace.set_span_in_context(NonRecordingSpan(context(answer)))
        for method, graph in target.graphs.items():
            gid = graph_id(target, method)
            ids.trace = _int_id(answer.trace_id, 16, "trace id")
            ids.spans.append(_derived(gid, "provenance"))
            links = []
            for e in graph.edges:
                focus = target.span.text if e.child == target.span.turn \
                    else conversation.turns[e.child].text
                attrs: dict[str, Any] = {
                    LINK_TYPE: link_type(e), EDGE_KIND: e.kind.value,
                    EDGE_EVIDENCE: evidence(conversation, e, focus),
                    EDGE_CHILD_TURN: e.child, EDGE_PARENT_TURN: e.parent}
                if e.score is not None:
                    attrs[EDGE_SCORE] = float(e.score)
                links.append(Link(context(spans[e.parent]), attrs))
            score = confidence(graph)
            attributes: dict[str, Any] = {
                GRAPH_ID: gid, GRAPH_METHOD: method, EXPLAINED_CONVERSATION: record.conversation,
                SPAN_TURN: target.span.turn, SPAN_TEXT: _clip(target.span.text)}
            if record.model:
                attributes[GRAPH_MODEL] = record.model
            if score is not None:
                attributes[GRAPH_CONFIDENCE] = score
            span = tracer.start_span(SPAN_NAME, context=parent, links=links,
                                     attributes=attributes)
            event: dict[str, Any] = {
                EVALUATION_NAME: EVALUATION,
                EVALUATION_LABEL: TRACED if graph.edges else UNTRACED,
                EVALUATION_EXPLANATION: tree_text(conversation, target, method)}
            if score is not None:
                event[EVALUATION_SCORE] = score
            span.add_event(EVALUATION_EVENT, event)
            span.end()
    provider.shutdown()
    return list(memory.get_finished_spans())


def _own_trace(tracer: Any, ids: _Ids, conversation: Conversation) -> list[SpanRef]:
    """A trace for a conversation that had none: a conversation span, one span per turn
    (ids derived from the conversation's id, so that a rerun writes the same spans)."""
    from opentelemetry import trace

    ids.trace = int.from_bytes(hashlib.sha256(conversation.id.encode()).digest()[:16], "big")
    ids.spans.append(_derived(conversation.id, "conversation"))
    root = tracer.start_span(f"conversation {conversation.id}",
                             attributes={CONVERSATION_ID: conversation.id,
                                         OPERATION_NAME: "invoke_agent"})
    refs = []
    inside = trace.set_span_in_context(root)
    for t in conversation.turns:
        ids.spans.append(_derived(conversation.id, "turn", t.index))
        attrs: dict[str, Any] = {TURN_INDEX: t.index, TURN_ROLE: t.role.value,
                                 TURN_TEXT: _clip(t.text), CONVERSATION_ID: conversation.id}
        if t.role is Role.ASSISTANT:
            attrs[OPERATION_NAME] = "chat"
        if t.role is Role.TOOL:
            attrs[OPERATION_NAME] = "execute_tool"
            if t.name:
                attrs[TOOL_NAME] = t.name
            if t.tool_call_id:
                attrs[TOOL_CALL_ID] = t.tool_call_id
        span = tracer.start_span(turn_label(conversation, t.index), context=inside,
                                 attributes=attrs)
        c = span.get_span_context()
        refs.append(SpanRef(f"{c.trace_id:032x}", f"{c.span_id:016x}"))
        span.end()
    root.end()
    return refs


def own_turn_spans(spans: Sequence[Any], turns: int) -> list[SpanRef]:
    """Per turn, its span in a trace of its own that :func:`make_spans` wrote."""
    refs: dict[int, SpanRef] = {}
    for s in spans:
        index = (s.attributes or {}).get(TURN_INDEX)
        if isinstance(index, int):
            c = s.get_span_context()
            refs[index] = SpanRef(f"{c.trace_id:032x}", f"{c.span_id:016x}")
    return [refs[k] for k in range(turns)]


# -- exporters ----------------------------------------------------------------------------


def otlp_json(spans: Sequence[Any]) -> dict[str, Any]:
    """The spans as an OTLP JSON export (``{"resourceSpans": [...]}``, ids in hex as OTLP/JSON
    writes them, not the base64 of protobuf's JSON printer)."""
    require_otel()
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    data = MessageToDict(encode_spans(spans))
    for resource in data.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                _hex_ids(span)
                for link in span.get("links", []):
                    _hex_ids(link)
    return data


def _hex_ids(obj: dict[str, Any]) -> None:
    import base64

    for key in ("traceId", "spanId", "parentSpanId"):
        if key in obj:
            obj[key] = base64.b64decode(obj[key]).hex()


def write_otlp_file(spans: Sequence[Any], path: str | Path) -> Path:
    """Write the spans as an OTLP JSON export to ``path`` (atomically)."""
    path = Path(path)
    with atomic_write(path) as fh:
        fh.write(json.dumps(otlp_json(spans), ensure_ascii=False) + "\n")
    return path


def traces_url(url: str) -> str:
    """An OTLP HTTP endpoint: a URL without a path gets OTLP's ``/v1/traces``."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InputError(f"--otlp-endpoint {url!r}: expected an http(s) URL such as "
                         "http://localhost:4318 (OTLP over HTTP)")
    if parts.path in ("", "/"):
        parts = parts._replace(path="/v1/traces")
    return urlunsplit(parts)


@contextlib.contextmanager
def _quiet_exporter() -> Iterator[None]:
    # The exporter logs each failed try with a traceback; we say it once, in one line.
    logger = logging.getLogger("opentelemetry.exporter.otlp.proto.http")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def send_otlp(spans: Sequence[Any], url: str, timeout: float = EXPORT_TIMEOUT_S) -> str:
    """Send the spans to an OTLP HTTP/protobuf endpoint; headers (an API key) come from the
    environment, OTEL_EXPORTER_OTLP_HEADERS or OTEL_EXPORTER_OTLP_TRACES_HEADERS, as the
    exporter reads them. Returns the URL sent to; one ServiceError line when it refused."""
    require_otel()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    endpoint = traces_url(url)
    exporter = OTLPSpanExporter(endpoint=endpoint, timeout=timeout)
    try:
        with _quiet_exporter():
            result = exporter.export(list(spans))
    finally:
        exporter.shutdown()
    if result is not SpanExportResult.SUCCESS:
        raise ServiceError(f"the OTLP endpoint {endpoint} did not take the spans (unreachable "
                           f"or refused within {timeout:g} s): check --otlp-endpoint and that "
                           "the collector or Phoenix runs")
    return endpoint
