"""`raw fetch`: ids verified from a local folder and over HTTP; a mismatch is refused."""

from __future__ import annotations

import hashlib
import http.server
import json
import subprocess
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode
from mtcabench.raw import DEFAULT_MANIFEST, RawFile, git_blob_id, load_manifest

from tests.support.paths import TAU2_FILES, TAU2_MORE, TAU2_RELEASE_2, every_real_runs_file

runner = CliRunner()


def test_git_blob_id_matches_git(tmp_path):
    f = tmp_path / "x.txt"
    f.write_bytes(b"hello\nworld\n")
    expected = subprocess.run(["git", "hash-object", str(f)], capture_output=True, text=True,
                              check=True).stdout.strip()
    assert git_blob_id(f.read_bytes()) == expected


def test_manifest_lists_the_upstream_files():
    entries = {e.name: e for e in load_manifest()}
    assert {e.source for e in entries.values()} == {"taubench", "tau2", "confetti"}
    assert len([e for e in entries.values() if e.source == "taubench"]) == 6
    conf = entries["confetti/BFCL_v2_conversationsclean.json"]
    assert conf.commit == "1fe163c0aba25d192e2c57cb31ade246a217f0cf"
    assert conf.git_blob == "7ffcc26243b8cfdf362bdbd2bfd66a4ad684305f"
    assert entries["taubench/gpt-4o-airline.json"].license == "MIT"


def make_manifest(tmp_path: Path, content: bytes, *, sha256: bool = True) -> Path:
    entry = {"name": "demo/file.json", "source": "demo", "repo": "org/repo", "commit": "abc123",
             "path": "data/file.json", "git_blob": git_blob_id(content), "license": "MIT"}
    if sha256:
        entry["sha256"] = hashlib.sha256(content).hexdigest()
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps({"manifest_version": 1, "files": [entry]}))
    return path


def test_fetch_from_real_shared_copy(taubench_airline, tmp_path):
    dest = tmp_path / "data"
    res = runner.invoke(app, ["raw", "fetch", "--from", str(taubench_airline.parent), "--only",
                              "taubench/gpt-4o-airline.json", "--dest", str(dest),
                              "--manifest", str(DEFAULT_MANIFEST)])
    assert res.exit_code == 0, res.output
    assert (dest / "taubench" / "gpt-4o-airline.json").read_bytes() == taubench_airline.read_bytes()


def test_fetch_from_folder_refuses_mismatch(tmp_path):
    manifest = make_manifest(tmp_path, b'{"right": true}\n')
    src = tmp_path / "src"
    src.mkdir()
    (src / "file.json").write_bytes(b'{"right": false}\n')
    dest = tmp_path / "data"
    res = runner.invoke(app, ["raw", "fetch", "--from", str(src), "--dest", str(dest),
                              "--manifest", str(manifest)])
    assert res.exit_code == ExitCode.INVALID
    assert "does not match the manifest" in res.output and "git blob id" in res.output
    assert not (dest / "demo" / "file.json").exists()


class _Handler(http.server.BaseHTTPRequestHandler):
    files: dict[str, bytes] = {}
    seen: list[str] = []

    def do_GET(self):  # noqa: N802 - http.server API
        self.seen.append(self.path)
        body = self.files.get(self.path)
        self.send_response(200 if body is not None else 404)
        self.end_headers()
        self.wfile.write(body or b"not found")

    def log_message(self, *args):
        pass


@pytest.fixture()
def raw_server(monkeypatch):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("MTCABENCH_GITHUB_RAW_URL", f"http://127.0.0.1:{server.server_port}")
    _Handler.files, _Handler.seen = {}, []
    yield _Handler
    server.shutdown()


def test_download_verifies_ids(raw_server, tmp_path):
    content = b'[{"task_id": 0}]\n'
    manifest = make_manifest(tmp_path, content)
    raw_server.files["/org/repo/abc123/data/file.json"] = content
    dest = tmp_path / "data"
    res = runner.invoke(app, ["raw", "fetch", "--dest", str(dest), "--manifest", str(manifest)])
    assert res.exit_code == 0, res.output
    assert raw_server.seen == ["/org/repo/abc123/data/file.json"]  # the pinned commit's path
    assert (dest / "demo" / "file.json").read_bytes() == content
    # A second fetch finds the verified copy and downloads nothing.
    assert runner.invoke(app, ["raw", "fetch", "--dest", str(dest), "--manifest",
                               str(manifest)]).exit_code == 0
    assert len(raw_server.seen) == 1


def test_download_refuses_tampered_file(raw_server, tmp_path):
    manifest = make_manifest(tmp_path, b"original\n")
    raw_server.files["/org/repo/abc123/data/file.json"] = b"tampered\n"
    dest = tmp_path / "data"
    res = runner.invoke(app, ["raw", "fetch", "--dest", str(dest), "--manifest", str(manifest)])
    assert res.exit_code == ExitCode.INVALID and "sha256" in res.output
    assert not dest.exists() or not any(dest.rglob("*.json"))


def test_download_http_error_is_a_service_error(raw_server, tmp_path):
    manifest = make_manifest(tmp_path, b"x")
    res = runner.invoke(app, ["raw", "fetch", "--dest", str(tmp_path / "d"), "--manifest",
                              str(manifest)])
    assert res.exit_code == ExitCode.SERVICE and "HTTP 404" in res.output


def test_unknown_name_is_refused(tmp_path):
    res = runner.invoke(app, ["raw", "fetch", "--only", "nope.json", "--dest", str(tmp_path)])
    assert res.exit_code == ExitCode.BAD_INPUT and "not in the manifest: nope.json" in res.output


def test_manifest_lists_every_tau2_file_with_its_ids():
    tau2 = [e for e in load_manifest() if e.source == "tau2"]
    assert len(tau2) == TAU2_FILES
    for e in tau2:
        assert e.name.startswith("tau2/") and e.repo == "sierra-research/tau2-bench"
        assert len(e.commit) == 40 and len(e.git_blob) == 40 and len(e.sha256 or "") == 64
        assert e.license == "MIT" and e.size and e.path.endswith(".json")
    assert {e.name.split("/")[1].split("-")[0] for e in tau2} == {
        "airline", "retail", "telecom", "medical", "medical_triage"}
    assert {e.name for e in tau2} == {f"tau2/{n}" for n in (*TAU2_RELEASE_2, *TAU2_MORE)}
    modified = [e for e in tau2 if e.removed]
    assert [e.name for e in modified] == ["tau2/airline-gpt-oss-120b-langchain.json"]
    assert modified[0].removed == ("info.agent_info.llm_args.api_key",
                                   "info.user_info.llm_args.api_key")
    assert modified[0].upstream_git_blob == "0620dda831909001fe4bd79dd3cb0bd4cb41a85f"
    assert modified[0].upstream_git_blob != modified[0].git_blob and "[removed]" in (
        modified[0].note or "")


def test_fetch_verifies_the_two_retail_taubench_files_from_the_shared_copy(tmp_path):
    # The folder holding all three TauBench files: not the airline file's own folder, which
    # after CI's `raw fetch --only taubench/gpt-4o-airline.json` is raw/data/ with that one file.
    files = every_real_runs_file()
    assert files is not None, ("the 31 real runs files are needed: set MTCABENCH_RAW to a folder "
                               "holding tau-bench/ and tau2-bench/, or run `mtcabench raw fetch`")
    taubench = files[0].parent
    names = ["taubench/retail-grok-3.json", "taubench/retail-gpt-4.1-mini.json"]
    args = ["raw", "fetch", "--from", str(taubench.parent), "--dest", str(tmp_path)]
    res = runner.invoke(app, [*args, *(a for n in names for a in ("--only", n))])
    assert res.exit_code == 0, res.output
    for name in names:
        copy = taubench / name.split("/")[1]
        assert (tmp_path / name).read_bytes() == copy.read_bytes()
        assert f"ok  {name}" in res.output


def test_fetch_verifies_every_tau2_file_from_the_shared_copy(tau2_results, tmp_path):
    dest = tmp_path / "data"
    # the folder holding the copies (named as the manifest names them), or one above it
    for folder in (tau2_results, tau2_results.parent):
        res = runner.invoke(app, ["raw", "fetch", "--from", str(folder), "--source", "tau2",
                                  "--dest", str(dest / folder.name)])
        assert res.exit_code == 0, res.output
        fetched = sorted((dest / folder.name / "tau2").iterdir())
        assert len(fetched) == TAU2_FILES
        for f in fetched:
            assert f.read_bytes() == (tau2_results / f.name).read_bytes()


def test_a_tampered_copy_under_the_manifest_s_name_is_refused(tmp_path):
    content = b'{"simulations": []}\n'
    entry = {"name": "tau2/airline-x.json", "source": "tau2", "repo": "org/repo",
             "commit": "abc123", "path": "results/run_1.json", "git_blob": git_blob_id(content),
             "sha256": hashlib.sha256(content).hexdigest(), "license": "MIT"}
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"manifest_version": 1, "files": [entry]}))
    src = tmp_path / "src"
    (src / "elsewhere").mkdir(parents=True)
    (src / "airline-x.json").write_bytes(b'{"simulations": [1]}\n')  # tampered
    args = ["raw", "fetch", "--from", str(src), "--dest", str(tmp_path / "d"), "--manifest",
            str(manifest)]
    res = runner.invoke(app, args)
    assert res.exit_code == ExitCode.INVALID and "does not match the manifest" in res.output
    # a right copy under the upstream name elsewhere below the folder is found and taken
    (src / "elsewhere" / "run_1.json").write_bytes(content)
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert (tmp_path / "d" / "tau2" / "airline-x.json").read_bytes() == content


def test_a_path_with_colons_is_fetched_percent_encoded(raw_server, tmp_path):
    content = b'{"simulations": []}\n'
    entry = {"name": "tau2/ft.json", "source": "tau2", "repo": "org/repo", "commit": "abc123",
             "path": "results/ft:gpt-4.1:x_airline.json", "git_blob": git_blob_id(content),
             "license": "MIT"}
    assert RawFile(**entry).url.endswith("/org/repo/abc123/results/ft%3Agpt-4.1%3Ax_airline.json")
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"manifest_version": 1, "files": [entry]}))
    raw_server.files["/org/repo/abc123/results/ft%3Agpt-4.1%3Ax_airline.json"] = content
    res = runner.invoke(app, ["raw", "fetch", "--dest", str(tmp_path / "d"), "--manifest",
                              str(manifest)])
    assert res.exit_code == 0, res.output
    assert raw_server.seen == ["/org/repo/abc123/results/ft%3Agpt-4.1%3Ax_airline.json"]


def _modified_manifest(tmp_path: Path, upstream: bytes, ours: bytes) -> Path:
    entry = {"name": "tau2/keyed.json", "source": "tau2", "repo": "org/repo", "commit": "abc123",
             "path": "runs/keyed.json", "git_blob": git_blob_id(ours),
             "sha256": hashlib.sha256(ours).hexdigest(), "license": "MIT",
             "upstream_git_blob": git_blob_id(upstream),
             "removed": ["info.agent_info.llm_args.api_key", "info.user_info.llm_args.api_key"],
             "note": "modified: the provider key replaced by [removed]"}
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps({"manifest_version": 1, "files": [entry]}))
    return path


SECRET = "sk-upstream-0123456789abcdef"
UPSTREAM = (b'{"info": {"agent_info": {"llm_args": {"base_url": "https://x.test/v1", '
            b'"api_key": "' + SECRET.encode() + b'", "temperature": 0}}, '
            b'"user_info": {"llm_args": {"api_key":  "' + SECRET.encode() + b'"}}}, '
            b'"simulations": [{"content": "my api_key is mine"}]}\n')
OURS = UPSTREAM.replace(b'"' + SECRET.encode() + b'"', b'"[removed]"')


def test_a_modified_file_downloaded_from_upstream_is_written_without_its_key(raw_server,
                                                                           tmp_path):
    manifest = _modified_manifest(tmp_path, UPSTREAM, OURS)
    raw_server.files["/org/repo/abc123/runs/keyed.json"] = UPSTREAM
    res = runner.invoke(app, ["raw", "fetch", "--dest", str(tmp_path / "d"), "--manifest",
                              str(manifest)])
    assert res.exit_code == 0, res.output
    written = (tmp_path / "d" / "tau2" / "keyed.json").read_bytes()
    assert written == OURS and SECRET.encode() not in written


def test_a_modified_file_is_taken_as_our_copy_or_as_upstream_from_a_folder(tmp_path):
    manifest = _modified_manifest(tmp_path, UPSTREAM, OURS)
    for content in (OURS, UPSTREAM):
        src = tmp_path / "src"
        src.mkdir(exist_ok=True)
        (src / "keyed.json").write_bytes(content)
        dest = tmp_path / f"d-{len(content)}"
        res = runner.invoke(app, ["raw", "fetch", "--from", str(src), "--dest", str(dest),
                                  "--manifest", str(manifest)])
        assert res.exit_code == 0, res.output
        assert (dest / "tau2" / "keyed.json").read_bytes() == OURS


def test_a_modified_file_whose_other_bytes_differ_is_refused(raw_server, tmp_path):
    manifest = _modified_manifest(tmp_path, UPSTREAM, OURS)
    raw_server.files["/org/repo/abc123/runs/keyed.json"] = UPSTREAM.replace(b"mine", b"ours")
    res = runner.invoke(app, ["raw", "fetch", "--dest", str(tmp_path / "d"), "--manifest",
                              str(manifest)])
    assert res.exit_code == ExitCode.INVALID and "does not match the manifest" in res.output
    assert not (tmp_path / "d" / "tau2" / "keyed.json").exists()
