"""An explanation as span annotations in a running Arize Phoenix (``explain --phoenix URL``).

One annotation per edge, on the span of the edge's child turn in the agent's trace:
annotator kind ``CODE``, name ``provenance``, label the parent turn (``turn 3 tool
get_order``), score the edge's score (a turn share; none on a structural edge), explanation
the evidence (the parent's best sentence), metadata the graph's id, the method, the model
and both turns. Each annotation has an identifier made of the graph's id and the edge, so a
rerun updates the same annotations instead of adding new ones (Phoenix's upsert on name,
span and identifier).

For a conversation read from an OpenTelemetry trace, the spans are the trace's own
(``metadata.otel_spans``), looked up in Phoenix by trace id. For any other input, the trace
of its own (:mod:`._telemetry`: one span per turn, ids derived from the conversation id) is
sent to Phoenix's OTLP endpoint first, then annotated.

Phoenix's REST API as version 20 serves it (checked against its ``/openapi.json``):
``GET /v1/projects``, ``GET /v1/projects/{id}/spans?trace_id=``, ``POST
/v1/span_annotations?sync=true``, ``GET`` and ``DELETE /v1/projects/{id}/span_annotations``
(an annotation of a graph explained again whose edge the new graph no longer has is deleted
by its identifier). An API key, where the server asks for one, is read from
``PHOENIX_API_KEY`` only and sent as a bearer token; it is never printed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from mtcabench.errors import InputError, ServiceError
from mtcabench.explainer._provenance import (
    SpanRef,
    evidence,
    graph_id,
    turn_label,
    turn_spans,
)
from mtcabench.explainer._telemetry import make_spans, own_turn_spans, send_otlp
from mtcabench.model import Conversation, ExplanationRecord
from mtcabench.terminal import plain

#: The annotation's name and annotator kind.
ANNOTATION_NAME = "provenance"
ANNOTATOR_KIND = "CODE"
#: Where the API key is read from (never from the command line).
API_KEY_ENV = "PHOENIX_API_KEY"
#: How long to wait for spans to appear: ours just sent (Phoenix inserts them in the
#: background), or an agent's trace that may have been sent a moment ago.
WAIT_S, GRACE_S = 15.0, 3.0
#: Annotations per request.
BATCH = 100


@dataclass(frozen=True)
class Annotation:
    """One edge as a Phoenix span annotation (the body's ``data`` item)."""

    span: SpanRef
    identifier: str
    label: str
    score: float | None
    explanation: str
    metadata: dict[str, Any]

    def body(self) -> dict[str, Any]:
        return {"span_id": self.span.span_id, "name": ANNOTATION_NAME,
                "annotator_kind": ANNOTATOR_KIND, "identifier": self.identifier,
                "result": {"label": self.label, "score": self.score,
                           "explanation": self.explanation},
                "metadata": self.metadata}


@dataclass
class PhoenixReport:
    """What ``explain --phoenix`` did: the annotations written, the spans Phoenix did not
    hold (each one line), and where the trace is."""

    url: str
    annotated: list[Annotation] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    #: Identifiers of annotations of the same graphs that this run no longer holds (an edge
    #: that a rerun with other settings dropped), deleted.
    removed: list[str] = field(default_factory=list)
    projects: dict[str, str] = field(default_factory=dict)  # trace id -> project id

    def trace_urls(self) -> list[str]:
        """The pages of the annotated traces in Phoenix's UI."""
        traces = sorted({a.span.trace_id for a in self.annotated})
        return [f"{self.url}/projects/{self.projects[t]}/traces/{t}" for t in traces
                if t in self.projects]


def check_phoenix_url(url: str) -> str:
    """``--phoenix``: an http(s) URL (one InputError line otherwise)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InputError(f"--phoenix {plain(url)!r}: expected Phoenix's http(s) URL, such as "
                         "http://localhost:6006")
    return url.rstrip("/")


def send_own_trace(record: ExplanationRecord, conversation: Conversation,
                   traces_url: str) -> list[SpanRef]:
    """Send the trace of its own of a conversation that had none (with the provenance
    spans) to Phoenix's OTLP endpoint; its turns' spans."""
    spans = make_spans(record, conversation)
    send_otlp(spans, traces_url)
    return own_turn_spans(spans, len(conversation.turns))


def annotations(record: ExplanationRecord, conversation: Conversation,
                spans: list[SpanRef]) -> list[Annotation]:
    """One annotation per edge of every graph of the record, on the child turn's span."""
    out = []
    for target in record.targets:
        for method, graph in target.graphs.items():
            gid = graph_id(target, method)
            for e in graph.edges:
                focus = target.span.text if e.child == target.span.turn \
                    else conversation.turns[e.child].text
                out.append(Annotation(
                    span=spans[e.child], identifier=f"{gid}:{e.child}->{e.parent}",
                    label=turn_label(conversation, e.parent),
                    score=None if e.score is None else float(e.score),
                    explanation=evidence(conversation, e, focus),
                    metadata={"graph_id": gid, "method": method, "model": record.model,
                              "conversation": record.conversation,
                              "child_turn": e.child, "parent_turn": e.parent,
                              "kind": e.kind.value,
                              "parent_span_id": spans[e.parent].span_id}))
    return out


def _headers() -> dict[str, str]:
    key = os.environ.get(API_KEY_ENV)
    return {"Authorization": f"Bearer {key}"} if key else {}


class _Phoenix:
    """Phoenix's REST API, each failure one ServiceError line naming the URL."""

    def __init__(self, url: str, timeout: float = 15.0):
        self.url = url.rstrip("/")
        self.client = httpx.Client(base_url=self.url, headers=_headers(), timeout=timeout)

    def close(self) -> None:
        self.client.close()

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self.client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ServiceError(f"Phoenix at {self.url} is not reachable "
                               f"({plain(type(exc).__name__)}: {plain(str(exc))[:120]}): "
                               "start it (phoenix serve) or check --phoenix") from None
        if response.status_code in (401, 403):
            raise ServiceError(f"Phoenix at {self.url} refused the request (HTTP "
                               f"{response.status_code}): set {API_KEY_ENV} to an API key of "
                               "that Phoenix")
        if response.status_code >= 400:
            raise ServiceError(f"Phoenix at {self.url}: {method} {path.split('?')[0]} answered "
                               f"HTTP {response.status_code} "
                               f"({plain(response.text)[:160]!r}); is it Phoenix 20 or later?")
        if method == "DELETE" or response.status_code == 204:
            return None  # no body
        try:
            return response.json()
        except ValueError:
            raise ServiceError(f"{self.url} does not answer as Phoenix's REST API ({method} "
                               f"{path.split('?')[0]} gave no JSON); check --phoenix") from None

    def paged(self, path: str, params: dict[str, Any]) -> Iterable[dict[str, Any]]:
        cursor = None
        while True:
            page = self.request("GET", path, params={**params,
                                                     **({"cursor": cursor} if cursor else {})})
            yield from page.get("data") or []
            cursor = page.get("next_cursor")
            if not cursor:
                return

    def projects(self) -> list[str]:
        return [p["id"] for p in self.paged("/v1/projects", {})]

    def spans_of(self, trace_id: str) -> tuple[str | None, set[str]]:
        """The project holding a trace and the ids of its spans (None: no project holds it)."""
        for project in self.projects():
            found = {s["context"]["span_id"] for s in self.paged(
                f"/v1/projects/{project}/spans", {"trace_id": trace_id, "limit": 1000})}
            if found:
                return project, found
        return None, set()


def annotate_phoenix(record: ExplanationRecord, conversation: Conversation, url: str, *,
                     wait: float | None = None,
                     warn: Callable[[str], None] = lambda line: None) -> PhoenixReport:
    """Annotate the spans of the conversation's trace in the Phoenix at ``url`` (see the
    module); a conversation not read from a trace gets a trace of its own sent there first.
    ``warn`` gets one line per span that Phoenix does not hold; ``wait``: seconds to wait
    for the spans to appear (default :data:`WAIT_S` for a trace just sent, else
    :data:`GRACE_S`)."""
    spans = turn_spans(conversation)
    if wait is None:
        wait = GRACE_S if spans is not None else WAIT_S
    phoenix = _Phoenix(check_phoenix_url(url))
    try:
        phoenix.projects()  # reachable, and Phoenix, before anything is sent
        if spans is None:
            spans = send_own_trace(record, conversation, f"{phoenix.url}/v1/traces")
        report = PhoenixReport(phoenix.url)
        wanted = annotations(record, conversation, spans)
        # The answers' traces too: one with nothing to annotate may hold stale annotations.
        traces = {spans[t.span.turn].trace_id for t in record.targets}
        held = _find(phoenix, {a.span for a in wanted}, traces, wait, report)
        for a in wanted:
            if a.span not in held:
                continue
            report.annotated.append(a)
        for ref in sorted({a.span for a in wanted} - held, key=lambda r: r.span_id):
            turns = sorted({a.metadata["child_turn"] for a in wanted if a.span == ref})
            line = (f"Phoenix at {phoenix.url} holds trace {ref.trace_id} but not its span "
                    f"{ref.span_id} (turn {', '.join(map(str, turns))}): its annotations are "
                    "left out; was the span dropped or sampled out?")
            report.missing.append(line)
            warn(line)
        for k in range(0, len(report.annotated), BATCH):
            phoenix.request("POST", "/v1/span_annotations", params={"sync": "true"},
                            json={"data": [a.body() for a in report.annotated[k:k + BATCH]]})
        _remove_stale(phoenix, record, spans, wanted, report)
        return report
    finally:
        phoenix.close()


def _remove_stale(phoenix: _Phoenix, record: ExplanationRecord, spans: list[SpanRef],
                  wanted: list[Annotation], report: PhoenixReport) -> None:
    """Delete the annotations of this run's graphs that the run no longer holds: an edge a
    rerun with other settings or another model dropped would otherwise stay on its span."""
    graphs = {graph_id(t, m) for t in record.targets for m in t.graphs}
    keep = {a.identifier for a in wanted}
    for trace, project in report.projects.items():
        ids = sorted({r.span_id for r in spans if r.trace_id == trace})
        for k in range(0, len(ids), BATCH):
            for a in phoenix.paged(f"/v1/projects/{project}/span_annotations",
                                   {"span_ids": ids[k:k + BATCH], "limit": 1000,
                                    "include_annotation_names": [ANNOTATION_NAME]}):
                meta = a.get("metadata") or {}
                if meta.get("graph_id") in graphs and a.get("identifier") not in keep:
                    phoenix.request("DELETE", f"/v1/projects/{project}/span_annotations",
                                    params={"name": ANNOTATION_NAME,
                                            "identifier": a["identifier"],
                                            "delete_all": "true"})
                    report.removed.append(a["identifier"])


def _find(phoenix: _Phoenix, refs: set[SpanRef], traces: set[str], wait: float,
          report: PhoenixReport) -> set[SpanRef]:
    """The refs whose spans Phoenix holds, waiting up to ``wait`` s for spans just sent; one
    InputError line for a trace (of ``traces`` or of a ref) that no project holds."""
    deadline = time.monotonic() + wait
    wanted = sorted(traces | {r.trace_id for r in refs})
    while True:
        held: set[SpanRef] = set()
        absent = []
        for trace in wanted:
            project, found = phoenix.spans_of(trace)
            if project is None:
                absent.append(trace)
                continue
            report.projects[trace] = project
            held |= {r for r in refs if r.trace_id == trace and r.span_id in found}
        if (held == refs and not absent) or time.monotonic() >= deadline:
            break
        time.sleep(0.5)
    if absent:
        raise InputError(f"Phoenix at {phoenix.url} holds no trace {absent[0]} (the agent's "
                         f"trace): send the trace to {phoenix.url}/v1/traces first, or give "
                         "the Phoenix that holds it")
    return held


def trace_url(report: PhoenixReport, trace_id: str) -> str | None:
    """The trace's page in Phoenix's UI."""
    project = report.projects.get(trace_id)
    return f"{report.url}/projects/{project}/traces/{trace_id}" if project else None
