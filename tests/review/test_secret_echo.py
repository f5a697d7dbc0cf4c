"""A Label Studio that echoes the request's Authorization header in an error (issue 22).

The server here plays a misbehaving Label Studio (or a proxy in front of one) at the HTTP
boundary: it answers every request 400/500 with a JSON body, or an HTML error page whose
title, holding the header. The key must reach neither the terminal nor any file, whole or in
part, and the run must end in one line with exit code 4.
"""

from __future__ import annotations

import http.server
import json
import secrets
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode
from mtcabench.ingest import read_taubench
from mtcabench.io import write_records

ROOT = Path(__file__).resolve().parents[2]

runner = CliRunner()


def _echo_server(status: int, shape: str):
    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self):
            auth = self.headers.get("Authorization", "")
            if shape == "json":
                # A long message whose end is the header: a cut at 200 characters would
                # keep its start (the key) if redaction came after the cut.
                body = json.dumps({"detail": "bad request " + "x" * 100 + f" (you sent {auth})"})
                ctype = "application/json"
            else:
                body = (f"<!DOCTYPE html><html><head><title>{status} for {auth}</title></head>"
                        f"<body>{auth}</body></html>")
                ctype = "text/html"
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = _answer

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _pieces(key: str, n: int = 8) -> list[str]:
    return [key[i:i + n] for i in range(0, len(key) - n + 1)]


@pytest.mark.parametrize("status,shape", [(400, "json"), (500, "json"), (500, "html"),
                                          (400, "html")])
@pytest.mark.parametrize("how", ["flag", "env"])
def test_review_pull_from_a_server_echoing_the_key(status, shape, how, tmp_path, monkeypatch):
    key = f"lskey{secrets.token_hex(20)}"
    server = _echo_server(status, shape)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        convs = tmp_path / "conversations.jsonl"
        write_records(convs, read_taubench(ROOT / "raw" / "sample" / "sample-airline.json"))
        args = ["review", "pull", "--conversations", str(convs), "-o",
                str(tmp_path / "reviewed.jsonl"), "--url", url]
        if how == "flag":
            monkeypatch.delenv("LABEL_STUDIO_API_KEY", raising=False)
            args += ["--api-key", key]
        else:
            monkeypatch.setenv("LABEL_STUDIO_API_KEY", key)
        res = runner.invoke(app, args)
    finally:
        server.shutdown()
        server.server_close()
    out = res.output.strip()
    assert res.exit_code == ExitCode.SERVICE, out
    assert out.startswith("error:") and "\n" not in out and "Traceback" not in out, out
    assert f"HTTP {status}" in out, out
    leaked = [p for p in _pieces(key) if p in out]
    assert not leaked, f"part of the key reached the terminal: {out}"
    assert "[redacted]" in out, out  # the echo was there, and was redacted
    for path in tmp_path.rglob("*"):
        assert not path.is_file() or key not in path.read_text(errors="replace")
