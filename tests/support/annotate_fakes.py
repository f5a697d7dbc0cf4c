"""HTTP-level doubles for what the tests cannot reach: OpenAI's API, its Batch API, and faults.

:class:`FakeOpenAI` is a real HTTP server on 127.0.0.1 (a free port) that speaks the parts of
the OpenAI API the annotator uses, records every request it receives (method, path,
headers, body) and can be told to answer the next chat requests with faults: ``429`` (with
``Retry-After``), ``500``, a ``timeout`` (answers too late), ``truncated`` (a response body cut
in the middle of its JSON: the connection closes early), ``truncated-json`` (a complete HTTP
message whose JSON is cut short), ``drip`` (a good answer whose body comes one byte at a time,
``drip_s`` apart) and ``drip-all`` (the status line and headers too). Answers come from a
responder function given the request body. With ``echo_auth`` it is hostile: every answer,
error message and batch result holds the credentials the request carried. It also speaks
Azure OpenAI's routes (``/openai/deployments/<name>/chat/completions?api-version=...``,
``/openai/files``, ``/openai/batches``) and its ``api-key`` header.

:class:`CountingProxy` forwards to a real server (the llama.cpp one) and logs each request
and whether it completed, so that a test can count requests at the HTTP layer.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx


@dataclass
class Recorded:
    method: str
    path: str
    headers: httpx.Headers  # case-insensitive, as HTTP headers are
    body: bytes
    at: float

    def json(self) -> Any:
        return json.loads(self.body)


def completion(content: str, model: str = "fake", finish_reason: str = "stop",
               prompt_chars: int = 400) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:8]}", "object": "chat.completion", "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                     "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": prompt_chars // 4, "completion_tokens": len(content) // 4 + 1,
                  "total_tokens": prompt_chars // 4 + len(content) // 4 + 1},
    }


def _user_message(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def phase_of(body: dict[str, Any]) -> str:
    return "verify" if "TARGET SPAN in turn" in _user_message(body) else "propose"


def script_responder(propose: dict[tuple[str, int], list[dict]],
                     verify: dict[tuple[str, int, str], dict] | None = None,
                     default_verify: Callable[[int, str], dict] | None = None
                     ) -> Callable[[dict[str, Any]], str]:
    """Answers from tables: propose by (a marker text in the transcript, target turn), verify
    by (marker, turn, span text). The marker tells conversations apart (e.g. a user id)."""
    verify = verify or {}

    def respond(body: dict[str, Any]) -> str:
        text = _user_message(body)
        if phase_of(body) == "propose":
            targets = [int(x) for x in re.search(r"TARGET TURNS: ([\d, ]+)", text)
                       .group(1).split(",")]
            spans = [s for (marker, turn), items in propose.items()
                     if marker in text and turn in targets for s in items]
            return json.dumps({"spans": spans})
        m = re.search(r'TARGET SPAN in turn (\d+): "(.*)"', text)
        turn, span = int(m.group(1)), m.group(2)
        for (marker, t, s), answer in verify.items():
            if marker in text and t == turn and s == span:
                return json.dumps(answer)
        if default_verify is not None:
            return json.dumps(default_verify(turn, span))
        return json.dumps({"dependency_type": "hallucination", "edges": [], "primed_by": [],
                           "confidence": 0.1, "rationale": "unknown span"})

    return respond


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, *args) -> None:  # quiet
        pass

    def _read(self) -> bytes:
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _send(self, status: int, body: bytes | dict | str, headers: dict[str, str] | None = None,
              content_type: str = "application/json", cut: bool = False,
              drip: float = 0.0, drip_head: bool = False) -> None:
        if isinstance(body, dict):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        if drip:
            return self._drip(status, body, content_type, drip, drip_head)
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if cut:  # announce the full length, send half, close: a truncated body
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(body)

    def _drip(self, status: int, body: bytes, content_type: str, every: float,
              head_too: bool) -> None:
        """The whole answer, well formed, one byte every ``every`` seconds."""
        head = (f"HTTP/1.1 {status} OK\r\nContent-Type: {content_type}\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode()
        if not head_too:
            self.wfile.write(head)
            self.wfile.flush()
        try:
            for i in range(0 if head_too else len(head), len(head) + len(body)):
                time.sleep(every)
                self.wfile.write((head + body)[i:i + 1])
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up, as it should

    def do_GET(self) -> None:
        self.server.owner._handle(self, "GET", b"")

    def do_POST(self) -> None:
        self.server.owner._handle(self, "POST", self._read())


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: Any


class FakeOpenAI:
    """A fake OpenAI-compatible API on a free local port; see the module docstring."""

    def __init__(self, responder: Callable[[dict[str, Any]], str] | None = None, *,
                 latency_s: float = 0.0, timeout_sleep_s: float = 2.0, api_key: str | None = None,
                 batch_polls_before_done: int = 1, drip_s: float = 0.02,
                 echo_auth: bool = False):
        self.responder = responder or (lambda body: json.dumps({"spans": []}))
        self.latency_s = latency_s
        self.timeout_sleep_s = timeout_sleep_s
        self.api_key = api_key
        self.drip_s = drip_s
        self.echo_auth = echo_auth
        self.faults: deque[str] = deque()
        self.requests: list[Recorded] = []
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.batch_polls_before_done = batch_polls_before_done
        self.status_faults = 0  # the next N batch status polls answer 500
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def root_url(self) -> str:
        """The server without ``/v1``: an Azure OpenAI endpoint's form."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def start(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def chat_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path.split("?")[0].endswith("/chat/completions")]

    # ------------------------------------------------------------------ dispatch
    def _credentials(self, h: _Handler) -> str:
        return " ".join(v for v in (h.headers.get("Authorization"), h.headers.get("api-key")) if v)

    def _handle(self, h: _Handler, method: str, body: bytes) -> None:
        with self._lock:
            self.requests.append(Recorded(method, h.path, httpx.Headers(list(h.headers.items())),
                                          body, time.time()))
        if self.api_key is not None and self.api_key not in (
                (h.headers.get("Authorization") or "").removeprefix("Bearer "),
                h.headers.get("api-key")):
            echo = f": {self._credentials(h)}" if self.echo_auth else ""
            h._send(401, {"error": {"message": f"Incorrect API key provided{echo}"}})
            return
        # A proxy is sent the absolute URL: it stands in for the server named there.
        path = re.sub(r"^https?://[^/]+", "", h.path.split("?", 1)[0]).removeprefix("/v1")
        # Azure OpenAI: /openai/deployments/<name>/chat/completions, /openai/files, ...
        path = re.sub(r"^/openai/deployments/[^/]+", "", path).removeprefix("/openai")
        if method == "POST" and path == "/chat/completions":
            return self._chat(h, json.loads(body))
        if method == "POST" and path == "/files":
            return self._upload(h, body)
        if method == "POST" and path == "/batches":
            return self._create_batch(h, json.loads(body))
        m = re.fullmatch(r"/batches/([\w-]+)", path)
        if method == "GET" and m:
            return self._batch_status(h, m.group(1))
        m = re.fullmatch(r"/files/([\w-]+)/content", path)
        if method == "GET" and m:
            return h._send(200, self.files[m.group(1)], content_type="application/jsonl")
        h._send(404, {"error": {"message": f"no route {method} {path}"}})

    def _chat(self, h: _Handler, body: dict[str, Any]) -> None:
        with self._lock:
            fault = self.faults.popleft() if self.faults else None
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            self._answer(h, body, fault)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _answer(self, h: _Handler, body: dict[str, Any], fault: str | None) -> None:
        if self.latency_s:
            time.sleep(self.latency_s)
        if self.echo_auth:  # a hostile server: the key comes back in the answer
            body = {**body, "_echo": self._credentials(h)}
        if fault == "429":
            return h._send(429, {"error": {"message": "Rate limit reached"}},
                           headers={"Retry-After": "1"})
        if fault == "500":
            return h._send(500, {"error": {"message": "The server had an error"}})
        if fault == "timeout":
            time.sleep(self.timeout_sleep_s)
            return h._send(200, completion(self._respond(body)))
        content = self._respond(body)
        chars = sum(len(m["content"]) for m in body["messages"])
        answer = completion(content, body.get("model", "fake"), prompt_chars=chars)
        if fault == "truncated-json":  # a complete HTTP message whose JSON is cut short
            return h._send(200, json.dumps(answer)[:60])
        h._send(200, answer, cut=(fault == "truncated"),
                drip=self.drip_s if fault in ("drip", "drip-all") else 0.0,
                drip_head=fault == "drip-all")

    def _respond(self, body: dict[str, Any]) -> str:
        content = self.responder({k: v for k, v in body.items() if k != "_echo"})
        if "_echo" in body:
            content = f"{content} (you sent {body['_echo']})"
        return content

    # ------------------------------------------------------------------ batch API
    def _upload(self, h: _Handler, body: bytes) -> None:
        # Minimal multipart parsing: the purpose field and the one file part.
        ctype = h.headers["Content-Type"]
        boundary = ctype.split("boundary=")[1].encode()
        purpose, content = None, None
        for part in body.split(b"--" + boundary):
            head, _, data = part.partition(b"\r\n\r\n")
            data = data.removesuffix(b"\r\n")
            if b'name="purpose"' in head:
                purpose = data.decode()
            elif b'name="file"' in head:
                content = data
        file_id = f"file-{uuid.uuid4().hex[:10]}"
        self.files[file_id] = content or b""
        h._send(200, {"id": file_id, "object": "file", "purpose": purpose,
                      "bytes": len(content or b"")})

    def _create_batch(self, h: _Handler, req: dict[str, Any]) -> None:
        batch_id = f"batch_{uuid.uuid4().hex[:10]}"
        self.batches[batch_id] = {"id": batch_id, "object": "batch", "status": "validating",
                                  "input_file_id": req["input_file_id"],
                                  "endpoint": req["endpoint"], "polls": 0,
                                  "completion_window": req["completion_window"]}
        h._send(200, {k: v for k, v in self.batches[batch_id].items() if k != "polls"})

    def _batch_status(self, h: _Handler, batch_id: str) -> None:
        if self.status_faults:
            self.status_faults -= 1
            return h._send(500, {"error": {"message": "status unavailable"}})
        b = self.batches[batch_id]
        b["polls"] += 1
        lines = [json.loads(x) for x in self.files[b["input_file_id"]].splitlines() if x.strip()]
        if b["polls"] <= self.batch_polls_before_done:
            b["status"] = "in_progress"
        elif b["status"] != "completed":
            out = []
            for line in lines:
                content = self._respond({**line["body"], "_echo": self._credentials(h)}
                                        if self.echo_auth else line["body"])
                chars = sum(len(m["content"]) for m in line["body"]["messages"])
                out.append(json.dumps({
                    "id": f"batch_req_{uuid.uuid4().hex[:8]}", "custom_id": line["custom_id"],
                    "response": {"status_code": 200, "request_id": "req",
                                 "body": completion(content, prompt_chars=chars)},
                    "error": None}))
            out_id = f"file-{uuid.uuid4().hex[:10]}"
            self.files[out_id] = ("\n".join(out) + "\n").encode()
            b.update(status="completed", output_file_id=out_id)
        counts = {"total": len(lines), "completed": len(lines) if b["status"] == "completed" else 0,
                  "failed": 0}
        h._send(200, {**{k: v for k, v in b.items() if k != "polls"}, "request_counts": counts})


class CountingProxy:
    """Forwards ``/v1/...`` to a real server and logs each request: body hash and outcome.

    The log is a file (one JSON line per event), so that it survives a killed client and a
    test can read it from another process's point of view.
    """

    def __init__(self, upstream: str, log: Path):
        self.upstream = upstream.rstrip("/")
        self.log = Path(log)
        self._lock = threading.Lock()
        self._client = httpx.Client(timeout=600)
        self._httpd = _Server(("127.0.0.1", 0), _ProxyHandler)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def _write(self, event: dict[str, Any]) -> None:
        with self._lock, self.log.open("a") as fh:
            fh.write(json.dumps(event) + "\n")

    def events(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(x) for x in self.log.read_text().splitlines() if x.strip()]

    def start(self) -> CountingProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._client.close()

    def forward(self, h: _ProxyHandler, method: str, body: bytes) -> None:
        import hashlib

        digest = hashlib.sha256(body).hexdigest()
        self._write({"event": "sent", "path": h.path, "sha": digest, "at": time.time(),
                     "body": json.loads(body) if body else None})
        path = h.path.removeprefix("/v1")
        r = self._client.request(method, f"{self.upstream}{path}", content=body,
                                 headers={"Content-Type": "application/json"})
        try:
            h._send(r.status_code, r.content)
        except (BrokenPipeError, ConnectionResetError):
            self._write({"event": "client-gone", "sha": digest, "at": time.time()})
            return
        self._write({"event": "answered", "path": h.path, "sha": digest,
                     "status": r.status_code, "at": time.time()})


class _ProxyHandler(_Handler):
    def do_GET(self) -> None:
        self.server.owner.forward(self, "GET", b"")

    def do_POST(self) -> None:
        self.server.owner.forward(self, "POST", self._read())
