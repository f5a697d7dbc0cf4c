"""annotate under issue 22 (round 2): an LLM endpoint echoing the key in a long error or as
``\\uXXXX`` escapes in a quote, two runs on one output at once, a rerun with another model or
an edited prompt, and a response cache on a full disk (for real: a small tmpfs)."""

from __future__ import annotations

import http.server
import json
import os
import secrets
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode
from tests.support.annotate_data import good_propose_table, good_verify
from tests.support.annotate_fakes import FakeOpenAI, script_responder

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def error_line(text: str) -> str:
    assert "Traceback" not in text, text
    errors = [line for line in text.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and text.strip().endswith(errors[0]), text
    return errors[0]


def pieces(key: str, n: int = 8) -> list[str]:
    return [key[i:i + n] for i in range(len(key) - n + 1)]


def new_key() -> str:
    return f"sk-h2-{secrets.token_hex(24)}"


def propose_args(conversations: Path, out: Path, url: str, model: str = "fake") -> list[str]:
    return ["annotate", "propose", str(conversations), "-o", str(out), "--base-url", url,
            "--model", model, "--no-progress", "--backoff", "0.01"]


def files_text(folder: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file())


# ---------------------------------------------------------------- the key in a long error


def _refusing_server(body: bytes, content_type: str):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            auth = self.headers.get("Authorization", "")
            data = body.replace(b"{AUTH}", auth.encode())
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(400)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.parametrize("shape", ["json-message", "text-body"])
def test_a_400_ending_with_the_authorization_header_shows_no_part_of_the_key(
        shape, tiny_path, tmp_path, monkeypatch):
    key = new_key()
    monkeypatch.setenv("OPENAI_API_KEY", key)
    if shape == "json-message":  # cut at 300 characters: the key starts at about 260
        message = "invalid request: " + "m" * 240 + " Authorization: {AUTH}"
        server = _refusing_server(json.dumps({"error": {"message": message}}).encode(),
                                  "application/json")
    else:  # not JSON, cut at 200: the key starts at about 150
        server = _refusing_server(b"bad gateway " + b"t" * 120 + b" headers: Authorization: "
                                  b"{AUTH}", "text/plain")
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        res = runner.invoke(app, propose_args(tiny_path, tmp_path / "p.jsonl", url))
    finally:
        server.shutdown()
        server.server_close()
    assert res.exit_code == ExitCode.SERVICE, res.output
    line = error_line(res.output)
    assert "HTTP 400" in line and "[redacted]" in line, line
    assert not [p for p in pieces(key) if p in res.output], line
    assert key not in files_text(tmp_path)


# ---------------------------------------------------------------- the key as \uXXXX escapes


@pytest.mark.slow  # a few seconds: a fresh interpreter or a whole run
def test_a_quote_that_is_the_header_in_unicode_escapes_is_stored_redacted(tiny_path, tmp_path,
                                                                          monkeypatch):
    key = new_key()
    monkeypatch.setenv("OPENAI_API_KEY", key)
    escaped = "".join(f"\\u{ord(c):04x}" for c in f"Authorization: Bearer {key}")
    content = ('{"spans": [{"turn": 4, "quote": "' + escaped + '", "dependency_type": '
               '"direct", "edges": [{"child": 4, "parent": 3, "evidence": "' + escaped
               + '"}], "rationale": "' + escaped + '"}]}')
    out = tmp_path / "p.jsonl"
    with FakeOpenAI(lambda body: content, api_key=key) as fake:
        res = runner.invoke(app, propose_args(tiny_path, out, fake.base_url))
    assert res.exit_code == 0, res.output
    records = [json.loads(line) for line in out.read_text().splitlines()]
    rejected = [r for r in records if r.get("rejections")]
    assert rejected, records  # the quote was really answered, and rejected (not in the text)
    text = files_text(tmp_path)
    assert "[redacted]" in text
    for piece in pieces(key, 12):
        assert piece not in text and piece not in res.output
    assert escaped[:60] not in text  # nor the escaped spelling, which a reader decodes


# ---------------------------------------------------------------- another model, another prompt


@pytest.mark.slow  # a few seconds: a fresh interpreter or a whole run
def test_a_rerun_with_another_model_or_prompt_is_refused_before_any_request(tiny_path, tmp_path):
    out = tmp_path / "p.jsonl"
    with FakeOpenAI(script_responder(good_propose_table(), default_verify=good_verify)) as fake:
        first = runner.invoke(app, propose_args(tiny_path, out, fake.base_url))
        assert first.exit_code == 0, first.output
        sent, before = len(fake.chat_requests()), out.read_bytes()
        assert sent > 0

        other = runner.invoke(app, propose_args(tiny_path, out, fake.base_url, model="other"))
        assert other.exit_code == ExitCode.BAD_INPUT, other.output
        line = error_line(other.output)
        assert "model 'fake' (this run: 'other')" in line and "nothing was sent" in line, line

        prompts = tmp_path / "prompts"
        shutil.copytree(ROOT / "prompts", prompts)
        template = prompts / "propose-v1.md"
        template.write_text(template.read_text() + "\nBe extra careful with numbers.\n")
        edited = runner.invoke(app, [*propose_args(tiny_path, out, fake.base_url),
                                     "--prompts-dir", str(prompts)])
        assert edited.exit_code == ExitCode.BAD_INPUT, edited.output
        assert "prompt_hash" in error_line(edited.output)

        assert len(fake.chat_requests()) == sent  # nothing was paid for
        assert out.read_bytes() == before  # the old records are as they were
        same = runner.invoke(app, propose_args(tiny_path, out, fake.base_url))
        assert same.exit_code == 0, same.output  # the same run resumes as before


# ---------------------------------------------------------------- two runs on one output


@pytest.mark.slow
def test_two_runs_on_one_output_at_once_the_second_is_refused(tiny_path, tmp_path):
    out = tmp_path / "p.jsonl"
    with FakeOpenAI(script_responder(good_propose_table(), default_verify=good_verify)) as solo:
        res = runner.invoke(app, propose_args(tiny_path, tmp_path / "solo.jsonl", solo.base_url))
        assert res.exit_code == 0, res.output
        one_run = len(solo.chat_requests())
    with FakeOpenAI(script_responder(good_propose_table(), default_verify=good_verify),
                    latency_s=1.0) as fake:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": ""}
        first = subprocess.Popen([sys.executable, "-m", "mtcabench",
                                  *propose_args(tiny_path, out, fake.base_url),
                                  "--concurrency", "1"],
                                 env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
        try:
            deadline = time.monotonic() + 60
            while not fake.chat_requests() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert fake.chat_requests(), "the first run should be sending"
            second = runner.invoke(app, propose_args(tiny_path, out, fake.base_url))
            _, err = first.communicate(timeout=120)
        finally:
            if first.poll() is None:
                first.kill()
                first.wait()
        assert first.returncode == 0, err
        assert second.exit_code == ExitCode.BUSY, second.output
        line = error_line(second.output)
        assert f"pid {first.pid}" in line and "p.jsonl" in line, line
        assert len(fake.chat_requests()) == one_run  # every request paid once
    ids = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert ids and len(ids) == len(set(ids))  # every id written once
    assert not list(tmp_path.glob(".*.lock"))


# ---------------------------------------------------------------- a full disk under the cache


@pytest.mark.parametrize("size_kb", [8, 16, 24, 40])
def test_a_response_cache_on_a_full_disk_is_one_line(size_kb, tiny_path, tmp_path, small_disk):
    with FakeOpenAI(script_responder(good_propose_table(), default_verify=good_verify)) as fake:
        proc, _ = small_disk.run([*propose_args(tiny_path, tmp_path / "p.jsonl", fake.base_url),
                                  "--cache", str(small_disk.path / "cache.sqlite")], size_kb=size_kb,
                                 env={"OPENAI_API_KEY": ""})
    assert proc.returncode == ExitCode.NO_SPACE, proc.stderr
    line = error_line(proc.stderr)
    assert "cache.sqlite" in line and "no space left" in line, line


# ---------------------------------------------------------------- a password in --base-url


@pytest.mark.slow  # a few seconds: a fresh interpreter or a whole run
def test_a_password_in_the_base_url_is_shown_and_stored_nowhere(tiny_path, tmp_path):
    password = f"pw{secrets.token_hex(12)}"
    with FakeOpenAI(script_responder(good_propose_table(), default_verify=good_verify)) as fake:
        url = fake.base_url.replace("http://", f"http://mtca:{password}@")
        ok = runner.invoke(app, propose_args(tiny_path, tmp_path / "p.jsonl", url))
        assert ok.exit_code == 0, ok.output
        assert fake.chat_requests()  # the run really went through that URL
    # The same URL once the server is gone: the "cannot reach" line names the URL.
    (tmp_path / "q").mkdir()
    gone = runner.invoke(app, propose_args(tiny_path, tmp_path / "q" / "q.jsonl", url))
    assert gone.exit_code == ExitCode.SERVICE, gone.output
    assert "mtca:[redacted]@" in error_line(gone.output)
    for res in (ok, gone):
        assert password not in res.output
    assert password not in files_text(tmp_path)


# ---------------------------------------------------------------- a long output name


def test_a_legal_249_byte_output_name_and_the_names_derived_from_it(tiny_path, tmp_path):
    folder = tmp_path / "o"
    folder.mkdir()
    out = folder / ("p" * 243 + ".jsonl")
    with FakeOpenAI(script_responder(good_propose_table(), default_verify=good_verify)) as fake:
        res = runner.invoke(app, propose_args(tiny_path, out, fake.base_url))
    assert res.exit_code == 0, res.output
    names = os.listdir(folder)
    assert out.name in names and any(n.endswith("-summary.json") for n in names), names
    assert all(len(n.encode()) <= 255 for n in names)
