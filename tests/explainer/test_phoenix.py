"""`explain --phoenix` against a real Arize Phoenix (its own virtual environment, started
once per session on a free port with a temporary working folder): an agent's trace sent over
OTLP, the graph written as span annotations, read back over Phoenix's REST API and compared
with explain.json edge by edge; a rerun adds nothing; a trace it does not hold, a span it
cannot match, an absent server and an API key are each one line."""

from __future__ import annotations

import copy
import http.server
import json
import threading
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode
from mtcabench.explainer._provenance import evidence, turn_label
from mtcabench.model import EdgeKind, ExplanationRecord
from mtcabench.services.phoenix import start_phoenix
from mtcabench.transcripts import read_transcript
from tests.support.otlp import parse_otlp_json, post_otlp

ROOT = Path(__file__).parents[1]
OTEL = ROOT / "transcripts" / "logs" / "support.otel.json"
REFUND = ROOT / "transcripts" / "examples" / "refund_agent.json"
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
runner = CliRunner()


@pytest.fixture(scope="module")
def phoenix():
    """A real local Phoenix for this module; stopped at the end."""
    try:
        server = start_phoenix()
    except Exception as exc:  # noqa: BLE001 - the reason must be in the failure
        pytest.fail(f"the local Arize Phoenix server did not start: {exc}")
    yield server
    server.stop()


def explain(*args, env=None):
    return runner.invoke(app, ["explain", *map(str, args)], env=env)


def project_ids(url: str) -> list[str]:
    return [p["id"] for p in httpx.get(f"{url}/v1/projects").json()["data"]]


def wait_for_trace(url: str, trace_id: str, spans: int) -> str:
    """Phoenix inserts spans in the background: the project, once it holds them all."""
    for _ in range(60):
        for project in project_ids(url):
            data = httpx.get(f"{url}/v1/projects/{project}/spans",
                             params={"trace_id": trace_id, "limit": 1000}).json()["data"]
            if len(data) >= spans:
                return project
        time.sleep(0.5)
    raise AssertionError(f"Phoenix never showed trace {trace_id}")


def annotations(url: str, project: str, span_ids) -> list[dict]:
    response = httpx.get(f"{url}/v1/projects/{project}/span_annotations",
                         params={"span_ids": sorted(set(span_ids)), "limit": 1000,
                                 "include_annotation_names": ["provenance"]})
    response.raise_for_status()
    return response.json()["data"]


def renamed(span_id: str, prefix: str) -> str:
    return prefix + span_id[len(prefix):]


def with_trace_id(trace_id: str, prefix: str, drop_span: str | None = None) -> dict:
    """The example trace under another trace id, its span ids starting with ``prefix``
    (Phoenix holds one span per span id), less ``drop_span`` (its new id)."""
    data = copy.deepcopy(json.loads(OTEL.read_text()))
    for r in data["resourceSpans"]:
        for sc in r["scopeSpans"]:
            spans = []
            for s in sc["spans"]:
                s = dict(s, traceId=trace_id, spanId=renamed(s["spanId"], prefix))
                if s.get("parentSpanId"):
                    s["parentSpanId"] = renamed(s["parentSpanId"], prefix)
                if s["spanId"] != drop_span:
                    spans.append(s)
            sc["spans"] = spans
    return data


@pytest.fixture(scope="module")
def agent_trace(phoenix):
    """The example support agent's trace, sent to Phoenix over OTLP as its agent would."""
    post_otlp(phoenix.traces_url, parse_otlp_json(OTEL))
    return wait_for_trace(phoenix.url, TRACE, 7)


pytestmark = pytest.mark.phoenix


def test_every_edge_is_an_annotation_on_its_child_span_and_a_rerun_adds_nothing(
        phoenix, agent_trace, tiny_model_dir, tmp_path):
    args = (OTEL, "--model", tiny_model_dir, "--method", "tokengeist", "--method", "recency",
            "--threshold", "0", "--phoenix", phoenix.url)
    res = explain(*args, "--out", tmp_path / "why")
    assert res.exit_code == 0, res.output
    assert f"{phoenix.url}/projects/{agent_trace}/traces/{TRACE}" in res.output.replace("\n", "")
    record = ExplanationRecord.model_validate_json((tmp_path / "why" / "explain.json").read_text())
    conv = read_transcript(OTEL)
    spans = [s["span_id"] for s in conv.metadata["otel_spans"]]
    edges = [(t, m, e) for t in record.targets for m, g in t.graphs.items() for e in g.edges]
    assert len(edges) >= 4 and any(e.kind is EdgeKind.STRUCTURAL for _, _, e in edges)
    assert f"annotated {len(edges)} edge(s)" in res.output
    got = annotations(phoenix.url, agent_trace, spans)
    assert len(got) == len(edges)
    by_id = {a["identifier"]: a for a in got}
    for target, method, e in edges:
        gid = f"{target.span_id}#{method}"
        a = by_id[f"{gid}:{e.child}->{e.parent}"]
        assert a["span_id"] == spans[e.child]  # on the child turn's span
        assert a["name"] == "provenance" and a["annotator_kind"] == "CODE"
        assert a["result"]["label"] == turn_label(conv, e.parent)
        assert a["result"]["score"] == (None if e.score is None else pytest.approx(e.score))
        focus = target.span.text if e.child == target.span.turn else conv.turns[e.child].text
        assert a["result"]["explanation"] == evidence(conv, e, focus)
        assert a["metadata"]["graph_id"] == gid and a["metadata"]["method"] == method
        assert (a["metadata"]["child_turn"], a["metadata"]["parent_turn"]) == (e.child, e.parent)
        assert a["metadata"]["parent_span_id"] == spans[e.parent]
    # a rerun updates the same annotations: nothing added
    again = explain(*args)
    assert again.exit_code == 0, again.output
    after = annotations(phoenix.url, agent_trace, spans)
    assert sorted(a["id"] for a in after) == sorted(a["id"] for a in got)
    assert "removed" not in again.output
    # explained again with a higher threshold: the graph's dropped edges leave Phoenix too
    fewer = explain(OTEL, "--model", tiny_model_dir, "--method", "tokengeist", "--threshold",
                    "0.3", "--phoenix", phoenix.url, "--out", tmp_path / "fewer")
    assert fewer.exit_code == 0, fewer.output
    kept = ExplanationRecord.model_validate_json(
        (tmp_path / "fewer" / "explain.json").read_text()).targets[0].graphs["tokengeist"]
    ours = [a for a in annotations(phoenix.url, agent_trace, spans)
            if a["metadata"]["method"] == "tokengeist"]
    assert sorted((a["metadata"]["child_turn"], a["metadata"]["parent_turn"]) for a in ours) \
        == sorted(e.pair for e in kept.edges)
    dropped = len(record.targets[0].graphs["tokengeist"].edges) - len(kept.edges)
    assert dropped > 0 and f"removed {dropped} of edges" in fewer.output


def test_a_log_that_is_no_trace_is_sent_as_its_own_trace_then_annotated(phoenix, tmp_path):
    res = explain(REFUND, "--method", "recency", "--span", "R-99120", "--phoenix", phoenix.url,
                  "--otlp-file", tmp_path / "own.json")
    assert res.exit_code == 0, res.output
    own = parse_otlp_json(tmp_path / "own.json")
    spans = [s for r in own.resource_spans for sc in r.scope_spans for s in sc.spans]
    trace = spans[0].trace_id.hex()
    project = wait_for_trace(phoenix.url, trace, len(spans))
    got = annotations(phoenix.url, project, [s.span_id.hex() for s in spans])
    assert got and len(got) == int(res.output.split("annotated ")[1].split(" ")[0])
    again = explain(REFUND, "--method", "recency", "--span", "R-99120", "--phoenix", phoenix.url)
    assert again.exit_code == 0, again.output
    assert len(annotations(phoenix.url, project, [s.span_id.hex() for s in spans])) == len(got)


def test_a_trace_phoenix_does_not_hold_is_one_line(phoenix, agent_trace, tmp_path):
    other = tmp_path / "other.otel.json"
    other.write_text(json.dumps(with_trace_id("ab" * 16, "abab")))
    res = explain(other, "--method", "recency", "--phoenix", phoenix.url)
    assert res.exit_code == ExitCode.BAD_INPUT, res.output
    assert f"holds no trace {'ab' * 16}" in res.output and "Traceback" not in res.output


def test_a_span_phoenix_cannot_match_is_one_line_and_the_rest_is_annotated(phoenix, tmp_path):
    trace, dropped = "cd" * 16, "cdcdc3d4e5f60005"  # turn 6's execute_tool span
    data = with_trace_id(trace, "cdcd", drop_span=dropped)
    post_otlp(phoenix.traces_url, parse_otlp_json(data))
    project = wait_for_trace(phoenix.url, trace, 6)
    log = tmp_path / "partial.otel.json"
    log.write_text(json.dumps(with_trace_id(trace, "cdcd")))  # the log still has the span
    res = explain(log, "--method", "recency", "--phoenix", phoenix.url)
    assert res.exit_code == 0, res.output
    flat = res.output.replace("\n", "")
    assert flat.count("warning:") == 1 and f"not its span {dropped} (turn 6)" in flat
    got = annotations(phoenix.url, project, [f"cdcdc3d4e5f6000{k}" for k in range(1, 7)])
    assert got and all(a["span_id"] != dropped for a in got)


class _Locked(http.server.BaseHTTPRequestHandler):
    seen: list = []

    def do_GET(self):  # noqa: N802
        self.seen.append(self.headers.get("Authorization"))
        self.send_response(401)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_an_absent_or_locked_phoenix_is_one_line_and_the_key_is_never_printed(phoenix):
    res = explain(REFUND, "--method", "recency", "--phoenix", "http://127.0.0.1:9")
    assert res.exit_code == ExitCode.SERVICE
    assert "Phoenix at http://127.0.0.1:9 is not reachable" in res.output
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Locked)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        res = explain(REFUND, "--method", "recency", "--phoenix", url,
                      env={"PHOENIX_API_KEY": "phx-s3cret"})
    finally:
        server.shutdown()
    assert res.exit_code == ExitCode.SERVICE and "refused the request (HTTP 401)" in res.output
    assert "PHOENIX_API_KEY" in res.output and "s3cret" not in res.output
    assert _Locked.seen == ["Bearer phx-s3cret"]
    # a real Phoenix without authentication takes the request with the key set, too
    res = explain(REFUND, "--method", "recency", "--phoenix", phoenix.url,
                  env={"PHOENIX_API_KEY": "phx-s3cret"})
    assert res.exit_code == 0 and "s3cret" not in res.output
