"""`explain --otlp-file / --otlp-endpoint`: the graph as OpenTelemetry spans, read back with
the OpenTelemetry protobuf definitions (opentelemetry-proto): the provenance span under the
answer's span, one link per edge with the attributes docs/traces.md names, one
gen_ai.evaluation.result event; a trace of its own for a log that is no trace. A tiny
random-weight model gives content edges with evidence (no real model: these tests are fast)."""

from __future__ import annotations

import http.server
import json
import threading
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode, ServiceError
from mtcabench.explainer import _telemetry as T
from mtcabench.explainer._provenance import TREE_LINES, confidence, evidence, turn_label
from mtcabench.model import EdgeKind, ExplanationRecord
from mtcabench.transcripts import read_transcript
from tests.support.otlp import attributes, parse_otlp_json

ROOT = Path(__file__).parents[1]
OTEL = ROOT / "transcripts" / "logs" / "support.otel.json"
REFUND = ROOT / "transcripts" / "examples" / "refund_agent.json"
runner = CliRunner()


def explain(*args):
    res = runner.invoke(app, ["explain", *map(str, args)])
    return res


def spans_of(request: ExportTraceServiceRequest) -> list:
    return [s for r in request.resource_spans for sc in r.scope_spans for s in sc.spans]


@pytest.fixture(scope="module")
def otel_run(tmp_path_factory, tiny_model_dir):
    """support.otel.json explained by tokengeist and recency on the tiny model: explain.json
    and the OTLP JSON file."""
    out = tmp_path_factory.mktemp("otel-run")
    res = explain(OTEL, "--model", tiny_model_dir, "--method", "tokengeist", "--method",
                  "recency", "--threshold", "0", "--out", out / "why",
                  "--otlp-file", out / "graph.otlp.json")
    assert res.exit_code == 0, res.output
    assert "wrote 2 OpenTelemetry span(s)" in res.output
    record = ExplanationRecord.model_validate_json((out / "why" / "explain.json").read_text())
    return record, parse_otlp_json(out / "graph.otlp.json"), out


def test_provenance_spans_sit_under_the_answer_span_with_one_link_per_edge(otel_run):
    record, request, _ = otel_run
    conv = read_transcript(OTEL)
    turn_span = [s["span_id"] for s in conv.metadata["otel_spans"]]
    spans = spans_of(request)
    assert [s.name for s in spans] == [T.SPAN_NAME, T.SPAN_NAME]
    (target,) = record.targets
    assert target.span.turn == 8
    by_method = {attributes(s.attributes)[T.GRAPH_METHOD]: s for s in spans}
    assert set(by_method) == {"tokengeist", "recency"}
    edges_seen = 0
    for method, span in by_method.items():
        graph = target.graphs[method]
        # in the agent's trace, a child of the chat span that returned the answer
        assert span.trace_id.hex() == "4bf92f3577b34da6a3ce929d0e0e4736"
        assert span.parent_span_id.hex() == turn_span[8] == "a1b2c3d4e5f60006"
        attrs = attributes(span.attributes)
        assert attrs[T.GRAPH_ID] == f"{target.span_id}#{method}"
        assert attrs[T.SPAN_TURN] == 8 and attrs[T.SPAN_TEXT] == target.span.text
        assert len(span.links) == len(graph.edges) > 0
        for link, edge in zip(span.links, graph.edges):
            la = attributes(link.attributes)
            assert link.trace_id.hex() == span.trace_id.hex()
            assert link.span_id.hex() == turn_span[edge.parent]
            assert (la[T.EDGE_CHILD_TURN], la[T.EDGE_PARENT_TURN]) == (edge.child, edge.parent)
            assert la[T.EDGE_KIND] == edge.kind.value
            if edge.kind is EdgeKind.STRUCTURAL:
                assert la[T.LINK_TYPE] == "CAUSED_BY_GENERATION" and T.EDGE_SCORE not in la
                assert la[T.EDGE_EVIDENCE].startswith("answers the call get_")
            else:
                assert la[T.LINK_TYPE] == "INFORMED_BY"
                assert la[T.EDGE_SCORE] == pytest.approx(edge.score, abs=1e-6)
                assert la[T.EDGE_EVIDENCE] == evidence(conv, edge, target.span.text
                                                       if edge.child == 8
                                                       else conv.turns[edge.child].text)
            edges_seen += 1
        # one evaluation event: the graph's confidence and the tree in a few lines
        (event,) = span.events
        assert event.name == T.EVALUATION_EVENT == "gen_ai.evaluation.result"
        ea = attributes(event.attributes)
        assert ea[T.EVALUATION_NAME] == "provenance" and ea[T.EVALUATION_LABEL] == "traced"
        assert ea[T.EVALUATION_SCORE] == confidence(graph)  # explain.json's rounded scores
        lines = ea[T.EVALUATION_EXPLANATION].splitlines()
        assert lines[0].startswith(f"turn 8 assistant  {method}")
        assert 2 <= len(lines) <= TREE_LINES + 2
        assert turn_label(conv, graph.edges[0].parent) in ea[T.EVALUATION_EXPLANATION]
    assert edges_seen == sum(len(g.edges) for g in target.graphs.values())
    # tokengeist's content edges carry the parent's best sentence as evidence
    tg = target.graphs["tokengeist"]
    assert any(e.sentences for e in tg.edges)


def test_confidence_is_the_share_of_the_targets_own_content_edges(otel_run):
    record, _, _ = otel_run
    graph = record.targets[0].graphs["tokengeist"]
    direct = [e.score for e in graph.edges if e.child == graph.target and e.kind is EdgeKind.CONTENT]
    assert confidence(graph) == pytest.approx(min(1.0, sum(direct)), abs=1e-6)
    assert 0 < confidence(graph) <= 1
    assert confidence(graph.model_copy(update={"edges": []})) == 0.0


def test_a_log_that_is_no_trace_gets_a_trace_of_its_own(tmp_path, tiny_model_dir):
    files = [tmp_path / "a.otlp.json", tmp_path / "b.otlp.json"]
    for f in files:
        res = explain(REFUND, "--model", tiny_model_dir, "--span", "R-99120", "--otlp-file", f)
        assert res.exit_code == 0, res.output
    conv = read_transcript(REFUND)
    request = parse_otlp_json(files[0])
    spans = spans_of(request)
    turns = [s for s in spans if T.TURN_INDEX in attributes(s.attributes)]
    (root,) = [s for s in spans if s.name.startswith("conversation ")]
    (prov,) = [s for s in spans if s.name == T.SPAN_NAME]
    assert len(spans) == len(conv.turns) + 2
    assert [attributes(s.attributes)[T.TURN_INDEX] for s in turns] == list(range(len(conv.turns)))
    assert all(s.parent_span_id == root.span_id and s.trace_id == root.trace_id for s in turns)
    roles = [attributes(s.attributes)[T.TURN_ROLE] for s in turns]
    assert roles == [t.role.value for t in conv.turns]
    turn_ids = [s.span_id for s in turns]
    answer = attributes(prov.attributes)[T.SPAN_TURN]
    assert prov.parent_span_id == turn_ids[answer] and prov.trace_id == root.trace_id
    assert prov.links and all(link.span_id in turn_ids for link in prov.links)
    for link in prov.links:
        assert turn_ids.index(link.span_id) == attributes(link.attributes)[T.EDGE_PARENT_TURN]
    # a rerun writes the same trace: ids derived from the conversation's id
    again = spans_of(parse_otlp_json(files[1]))
    assert [(s.trace_id, s.span_id, s.parent_span_id) for s in again] == \
        [(s.trace_id, s.span_id, s.parent_span_id) for s in spans]


class _Collector(http.server.BaseHTTPRequestHandler):
    """An OTLP HTTP receiver: keeps each request's path, headers and body."""

    received: list = []
    status = 200

    def do_POST(self):  # noqa: N802 - the handler's name
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        self.send_response(self.status)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()
        self.wfile.write(b"" if self.status == 200 else b"no")

    def log_message(self, *args):
        pass


@pytest.fixture
def collector():
    _Collector.received = []
    _Collector.status = 200
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server, _Collector
    server.shutdown()


def test_otlp_endpoint_gets_protobuf_with_headers_from_the_environment(collector, tmp_path,
                                                                       monkeypatch):
    server, handler = collector
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20s3cret-key")
    url = f"http://127.0.0.1:{server.server_address[1]}"
    res = explain(OTEL, "--method", "recency", "--otlp-endpoint", url,
                  "--otlp-file", tmp_path / "same.json")
    assert res.exit_code == 0, res.output
    assert "s3cret" not in res.output and f"to {url}/v1/traces" in res.output
    ((path, headers, body),) = handler.received
    assert path == "/v1/traces" and headers["content-type"] == "application/x-protobuf"
    assert headers["authorization"] == "Bearer s3cret-key"
    request = ExportTraceServiceRequest.FromString(body)
    (span,) = spans_of(request)
    assert span.name == T.SPAN_NAME and span.links
    assert span.events[0].name == "gen_ai.evaluation.result"
    # the file holds the same spans as the endpoint got
    (same,) = spans_of(parse_otlp_json(tmp_path / "same.json"))
    assert (same.span_id, same.parent_span_id, len(same.links)) == \
        (span.span_id, span.parent_span_id, len(span.links))


def test_a_refusing_or_absent_endpoint_is_one_line(collector):
    server, handler = collector
    handler.status = 400  # not retried by the exporter
    record = ExplanationRecord(conversation="c")
    spans = T.make_spans(record, read_transcript(REFUND))
    with pytest.raises(ServiceError, match="did not take the spans"):
        T.send_otlp(spans, f"http://127.0.0.1:{server.server_address[1]}/v1/traces", timeout=2)
    with pytest.raises(ServiceError, match=r"127\.0\.0\.1:9/v1/traces did not take"):
        T.send_otlp(spans, "http://127.0.0.1:9", timeout=1)


def test_bad_options_are_refused_before_anything_runs(tmp_path):
    res = explain(REFUND, "--otlp-endpoint", "localhost:4318")
    assert res.exit_code == ExitCode.BAD_INPUT and "expected an http(s) URL" in res.output
    res = explain(REFUND, "--phoenix", "ftp://x")
    assert res.exit_code == ExitCode.BAD_INPUT and "--phoenix 'ftp://x'" in res.output
    copy = tmp_path / "log.json"
    copy.write_text(REFUND.read_text())
    res = explain(copy, "--method", "recency", "--otlp-file", copy)
    assert res.exit_code == ExitCode.BAD_INPUT and "Traceback" not in res.output
    assert json.loads(copy.read_text()) == json.loads(REFUND.read_text())  # not overwritten
    assert (tmp_path / "log.json").read_text() == REFUND.read_text()


def test_the_tracers_graph_writes_the_same_telemetry(tiny_loaded, tmp_path, tiny_model_dir):
    """Online: ``tracer.explain(...).to_otlp(file=...)`` writes what ``explain --otlp-file``
    writes for the same log, span and model."""
    import mtcabench

    tracer = mtcabench.Tracer(tiny_loaded, background=False)
    for message in json.loads(REFUND.read_text()):
        tracer.add(message)
    graph = tracer.explain(span="R-99120")
    spans = graph.to_otlp(file=tmp_path / "online.json")
    online = spans_of(parse_otlp_json(tmp_path / "online.json"))
    assert len(online) == len(spans) == len(read_transcript(REFUND).turns) + 2
    (prov,) = [s for s in online if s.name == T.SPAN_NAME]
    assert len(prov.links) == len(graph.edges) > 0
    assert [attributes(link.attributes)[T.EDGE_PARENT_TURN] for link in prov.links] == \
        [e.parent for e in graph.edges]
    event = attributes(prov.events[0].attributes)
    assert event[T.EVALUATION_SCORE] == confidence(graph.record().targets[0].graphs["tokengeist"])


def test_without_the_otel_extra_the_options_are_one_line_before_anything_runs(tmp_path):
    """Where the SDK is not installed, --otlp-* (and --phoenix on a log that is no trace) name
    the extra in one line and write nothing; --phoenix on a trace needs no extra."""
    import subprocess
    import sys

    block = (
        "import sys\n"
        "class _NoOtel:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in {'opentelemetry', 'google'}:\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, _NoOtel())\n"
        "from mtcabench.cli import main\nmain()\n")
    out = tmp_path / "x.json"
    for args in (["--otlp-file", str(out)], ["--phoenix", "http://127.0.0.1:9"]):
        res = subprocess.run([sys.executable, "-c", block, "explain", str(REFUND), "--method",
                              "recency", *args], cwd=ROOT.parent, capture_output=True,
                             text=True, timeout=120)
        lines = [x for x in (res.stdout + res.stderr).splitlines() if x.strip()]
        assert res.returncode == ExitCode.BAD_INPUT, res.stderr[-2000:]
        assert lines == ["error: writing the graph as OpenTelemetry telemetry needs "
                         "opentelemetry, which is not installed: pip install 'mtcabench[otel]'"]
    assert not out.exists()
    res = subprocess.run([sys.executable, "-c", block, "explain", str(OTEL), "--method",
                          "recency", "--phoenix", "http://127.0.0.1:9"], cwd=ROOT.parent,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == ExitCode.SERVICE and "is not reachable" in res.stderr
