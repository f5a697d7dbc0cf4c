"""A server that is not Label Studio (an HTML error page, a web site) is one short line (issue 12)."""

from __future__ import annotations

import http.server
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtcabench.lineage import propose_lineage
from mtcabench.cli import app
from mtcabench.errors import ExitCode
from mtcabench.ingest import read_taubench
from mtcabench.io import write_records

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()
PAGE = (b"<!DOCTYPE html>\n<html>\n<head><title>502 Bad Gateway</title></head>\n<body>\n"
        + b"<center><h1>502 Bad Gateway</h1></center>\n<p>nginx</p>\n" * 200 + b"</body></html>\n")


@pytest.fixture(params=[502, 200, 404])
def html_server(request):
    status = request.param

    class Handler(http.server.BaseHTTPRequestHandler):
        def _page(self):
            self.send_response(status)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(PAGE)))
            self.end_headers()
            self.wfile.write(PAGE)

        do_GET = do_POST = do_PATCH = _page

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", status
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("review-inputs")
    convs = list(read_taubench(ROOT / "raw" / "sample" / "sample-airline.json"))
    write_records(folder / "conversations.jsonl", convs)
    write_records(folder / "candidates.jsonl", list(propose_lineage(convs)))
    return folder


def one_short_line(res, *needles: str) -> str:
    out = res.output.strip()
    assert res.exit_code == ExitCode.SERVICE, out
    assert "Traceback" not in out and "<p>" not in out and "<html" not in out.lower(), out
    assert out.startswith("error:") and "\n" not in out and len(out) < 400, out
    for needle in needles:
        assert needle in out, out
    return out


def test_push_to_an_html_page(html_server, inputs):
    url, status = html_server
    res = runner.invoke(app, ["review", "push", "-c", str(inputs / "candidates.jsonl"),
                              "--conversations", str(inputs / "conversations.jsonl"),
                              "--url", url, "--api-key", "k"])
    line = one_short_line(res, url, f"HTTP {status}", "not Label Studio")
    assert "502 Bad Gateway" in line  # the page's title says what the server is


def test_pull_from_an_html_page(html_server, inputs, tmp_path):
    url, status = html_server
    res = runner.invoke(app, ["review", "pull", "--conversations",
                              str(inputs / "conversations.jsonl"), "-o", str(tmp_path / "r.jsonl"),
                              "--url", url, "--api-key", "k"])
    one_short_line(res, url, f"HTTP {status}")
    assert not (tmp_path / "r.jsonl").exists()
