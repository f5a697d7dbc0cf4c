"""When our own embedded server dies, the user reads that, in one line, and nothing is half-written.

The llama.cpp server is killed with SIGSEGV (what a mis-built native library does) while
`annotate run` uses it; the run must stop with exit 4 and one line naming the signal and the
server's log, never blame the user's --base-url, and leave only whole records behind. The
same for the check that scripts/setup.sh ends with.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from mtcabench.errors import ServiceError
from mtcabench.ingest import read_taubench, write_conversations
from mtcabench.resources import sample_path
from mtcabench.services.llm_server import LocalLLMServer, check_server

pytestmark = [pytest.mark.llm_server, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
DEATH_LINE = re.compile(r"the embedded LLM server \(llama\.cpp\) exited with signal SIGSEGV "
                        r"while answering; its log is (\S+)$")


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (read from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _llama_server_of(pid: int, timeout: float = 240.0) -> tuple[int, int]:
    """(pid, port) of the llama.cpp server started by process ``pid``, once it answers."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for child in _descendants(pid):
            try:
                argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"llama_cpp.server" in argv:
                port = int(argv[argv.index(b"--port") + 1])
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=2).status_code == 200:
                        return child, port
                except httpx.HTTPError:
                    pass
        time.sleep(0.3)
    raise AssertionError("the annotate run never started its llama.cpp server")


def _assert_only_whole_records(folder: Path) -> None:
    for path in folder.rglob("*"):
        assert not path.name.startswith("."), f"temporary file left behind: {path}"
        if path.suffix == ".jsonl":
            for n, line in enumerate(path.read_text().splitlines(), 1):
                assert line.endswith("}"), f"{path}:{n} is cut"
                json.loads(line)


def test_annotate_run_stops_with_one_line_when_the_server_crashes(tmp_path):
    conversations = tmp_path / "conversations.jsonl"
    write_conversations(conversations, read_taubench(sample_path()))
    out = tmp_path / "annotate"
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "MTCABENCH_LLM_MODEL")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mtcabench", "annotate", "run", str(conversations), "-o", str(out),
         "--no-progress"],
        env={**env, "COLUMNS": "400"}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        server_pid, _ = _llama_server_of(proc.pid)
        time.sleep(2.0)  # the first propose request is on its way or being answered
        os.kill(server_pid, signal.SIGSEGV)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 4, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, stderr
    match = DEATH_LINE.search(errors[0])
    assert match, errors[0]
    assert "--base-url" not in stderr and "Traceback" not in stderr
    assert Path(match.group(1)).is_file(), "the message points to a log that is not there"
    _assert_only_whole_records(out)


def test_the_setup_check_reports_a_server_that_dies_on_its_first_completion():
    server = LocalLLMServer().start()
    try:
        os.kill(server.proc.pid, signal.SIGSEGV)
        server.proc.wait(timeout=30)
        with pytest.raises(ServiceError) as info:
            check_server(server)
        assert DEATH_LINE.search(info.value.message), info.value.message
    finally:
        server.stop()
    assert server.log_path.is_file()  # a crashed server's log is kept for the user to read


def test_setup_fails_with_one_line_when_the_embedded_server_is_broken(tmp_path):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\0" * 64)  # a GGUF header and nothing a loader can use
    result = subprocess.run([str(ROOT / "scripts" / "setup.sh"), "--check-llm"],
                            env={**os.environ, "MTCABENCH_LLM_MODEL": str(broken)},
                            capture_output=True, text=True, timeout=300)
    assert result.returncode != 0
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert re.fullmatch(r"\[setup\] error: the embedded LLM server \(llama\.cpp\) exited with "
                        r"code \d+ while starting with the model \S*broken\.gguf; its log is \S+",
                        lines[0]), lines[0]
    log = Path(lines[0].rsplit(" ", 1)[1])
    assert log.is_file() and log.stat().st_size > 0


@pytest.mark.label_studio
def test_a_dead_embedded_label_studio_is_reported_as_such():
    from mtcabench.review._client import Connection, ReviewClient
    from mtcabench.services.label_studio import start_label_studio

    server = start_label_studio()
    try:
        os.killpg(server.process.pid, signal.SIGKILL)
        server.process.wait(timeout=30)
        client = ReviewClient(Connection.resolve(server.url, server.api_key),
                              liveness=server.failure)
        with client, pytest.raises(ServiceError) as info:
            client.check()
    finally:
        server.stop()
    assert re.fullmatch(r"the embedded Label Studio exited with signal SIGKILL while answering; "
                        r"its log is \S+", info.value.message), info.value.message
    assert server.log_path.is_file()
