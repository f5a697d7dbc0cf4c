"""A small local stand-in for the Hugging Face Hub's HTTP API, for tests at the HTTP boundary.

It answers the calls that ``mtcabench release publish`` and ``load_release("ORG/NAME")``
make through ``huggingface_hub`` (create repo, refs, tree, validate-yaml, preupload, commit,
tag, repo info, resolve), keeps the committed files in memory, and records every request
(method, path, headers, body) so that tests can assert what the client sent. It answers
every file as a regular (non-LFS) upload: the Hub's LFS/Xet storage protocol is a separate
service, out of scope here.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

import yaml


@dataclass
class Request:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes

    def json(self):
        return json.loads(self.body)

    def ndjson(self) -> list[dict]:
        return [json.loads(line) for line in self.body.splitlines() if line.strip()]


@dataclass
class Repo:
    repo_id: str
    private: bool
    commits: list[dict] = field(default_factory=list)  # {oid, message, description, files}
    tags: dict[str, str] = field(default_factory=dict)

    @property
    def head(self) -> dict:
        return self.commits[-1] if self.commits else {"oid": "0" * 40, "files": {}}

    def at(self, rev: str) -> dict | None:
        if rev in ("main", "refs/heads/main"):
            return self.head
        if rev in self.tags:
            rev = self.tags[rev]
        return next((c for c in self.commits if c["oid"] == rev), None)


def git_blob_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class FakeHub:
    """Start with ``with FakeHub() as hub:``; ``hub.url`` is the endpoint to give the client."""

    def __init__(self) -> None:
        self.repos: dict[str, Repo] = {}
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output quiet
                pass

            def _handle(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                req = Request(self.command, unquote(parts.path), parts.query,
                              {k.lower(): v for k, v in self.headers.items()}, body)
                with hub._lock:
                    hub.requests.append(req)
                    status, headers, payload = hub.route(req)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                if not isinstance(payload, bytes):
                    self.send_header("Content-Type", "application/json")
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_POST = do_HEAD = do_PUT = do_DELETE = _handle

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> FakeHub:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    # ------------------------------------------------------------------ routing

    def route(self, req: Request) -> tuple[int, dict, object]:
        p, m = req.path, req.method
        if m == "POST" and p == "/api/repos/create":
            return self.create_repo(req)
        if m == "POST" and p == "/api/validate-yaml":
            return self.validate_yaml(req)
        mt = re.match(r"^/api/datasets/([^/]+/[^/]+)(?:/(\w+)(?:/([^/]+))?(?:/(.*))?)?$", p)
        if mt:
            repo_id, action, rev, _path = mt.groups()
            repo = self.repos.get(repo_id)
            if repo is None:
                return 404, {"X-Error-Code": "RepoNotFound"}, {"error": "Repository not found"}
            if action is None and m == "GET":
                return self.info(repo, "main")
            handler = {
                ("GET", "refs"): lambda: self.refs(repo),
                ("GET", "tree"): lambda: self.tree(repo, rev or "main"),
                ("GET", "revision"): lambda: self.info(repo, rev or "main"),
                ("POST", "preupload"): lambda: self.preupload(req),
                ("POST", "commit"): lambda: self.commit(repo, req),
                ("POST", "tag"): lambda: self.tag(repo, rev or "main", req),
            }.get((m, action))
            if handler:
                return handler()
        mr = re.match(r"^/datasets/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$", p)
        if mr and m in ("GET", "HEAD"):
            return self.resolve(*mr.groups())
        return 404, {}, {"error": f"fake hub: no route for {m} {p}"}

    # ------------------------------------------------------------------ endpoints

    def create_repo(self, req: Request):
        body = req.json()
        repo_id = f"{body['organization']}/{body['name']}" if body.get("organization") else body["name"]
        url = f"{self.url}/datasets/{repo_id}"
        if repo_id in self.repos:
            return 409, {}, {"error": "You already created this dataset repo", "url": url}
        self.repos[repo_id] = Repo(repo_id, bool(body.get("private")))
        return 200, {}, {"url": url, "name": repo_id}

    def validate_yaml(self, req: Request):
        content = req.json()["content"]
        m = re.match(r"^---\n(.*?)\n---\n", content, re.DOTALL)
        try:
            meta = yaml.safe_load(m.group(1)) if m else None
        except yaml.YAMLError as exc:
            return 400, {}, {"errors": [{"message": str(exc)}], "warnings": []}
        if not isinstance(meta, dict):
            return 400, {}, {"errors": [{"message": "no metadata block"}], "warnings": []}
        return 200, {}, {"errors": [], "warnings": []}

    def refs(self, repo: Repo):
        branches = ([{"name": "main", "ref": "refs/heads/main", "targetCommit": repo.head["oid"]}]
                    if repo.commits else [])
        tags = [{"name": t, "ref": f"refs/tags/{t}", "targetCommit": oid}
                for t, oid in repo.tags.items()]
        return 200, {}, {"branches": branches, "tags": tags, "converts": []}

    def tree(self, repo: Repo, rev: str):
        commit = repo.at(rev)
        if commit is None:
            return 404, {"X-Error-Code": "RevisionNotFound"}, {"error": "Revision not found"}
        return 200, {}, [{"type": "file", "path": path, "size": len(data), "oid": git_blob_oid(data)}
                         for path, data in sorted(commit["files"].items())]

    def preupload(self, req: Request):
        files = [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                 for f in req.json()["files"]]
        return 200, {}, {"files": files, "commitOid": "0" * 40}

    def commit(self, repo: Repo, req: Request):
        lines = req.ndjson()
        header = lines[0]["value"]
        files = dict(repo.head["files"])
        for line in lines[1:]:
            if line["key"] == "file":
                files[line["value"]["path"]] = base64.b64decode(line["value"]["content"])
            elif line["key"] == "deletedFile":
                files.pop(line["value"]["path"], None)
            else:
                return 400, {}, {"error": f"fake hub: unsupported commit item {line['key']}"}
        oid = hashlib.sha1(json.dumps([repo.head["oid"], header, sorted(
            (k, hashlib.sha256(v).hexdigest()) for k, v in files.items())]).encode()).hexdigest()
        repo.commits.append({"oid": oid, "message": header["summary"],
                             "description": header.get("description", ""), "files": files})
        return 200, {}, {"commitUrl": f"{self.url}/datasets/{repo.repo_id}/commit/{oid}",
                         "commitOid": oid, "pullRequestUrl": None}

    def tag(self, repo: Repo, rev: str, req: Request):
        body = req.json()
        commit = repo.at(rev)
        if commit is None:
            return 404, {"X-Error-Code": "RevisionNotFound"}, {"error": "Revision not found"}
        if body["tag"] in repo.tags:
            return 409, {}, {"error": "Tag already exists"}
        repo.tags[body["tag"]] = commit["oid"]
        return 200, {}, {}

    def info(self, repo: Repo, rev: str):
        commit = repo.at(rev)
        if commit is None or not repo.commits:
            return 404, {"X-Error-Code": "RevisionNotFound"}, {"error": "Revision not found"}
        return 200, {}, {
            "id": repo.repo_id, "_id": repo.repo_id, "author": repo.repo_id.split("/")[0],
            "sha": commit["oid"], "private": repo.private, "disabled": False, "gated": False,
            "downloads": 0, "likes": 0, "tags": [], "lastModified": "2026-01-01T00:00:00.000Z",
            "createdAt": "2026-01-01T00:00:00.000Z",
            "siblings": [{"rfilename": path} for path in sorted(commit["files"])],
        }

    def resolve(self, repo_id: str, rev: str, path: str):
        repo = self.repos.get(repo_id)
        commit = repo.at(rev) if repo else None
        if commit is None:
            return 404, {"X-Error-Code": "RepoNotFound"}, {"error": "Repository not found"}
        if path not in commit["files"]:
            return 404, {"X-Error-Code": "EntryNotFound"}, {"error": "Entry not found"}
        data = commit["files"][path]
        return 200, {"X-Repo-Commit": commit["oid"], "ETag": f'"{git_blob_oid(data)}"',
                     "Content-Type": "application/octet-stream"}, data

    # ------------------------------------------------------------------ helpers for tests

    def find(self, method: str, pattern: str) -> list[Request]:
        return [r for r in self.requests if r.method == method and re.search(pattern, r.path)]
