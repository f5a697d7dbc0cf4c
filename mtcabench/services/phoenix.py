"""A local Arize Phoenix server for the tests and the docs, started and stopped by us.

Phoenix lives in its own virtual environment (it pins its own FastAPI, SQLAlchemy and
OpenTelemetry; scripts/locks/phoenix.txt, installed by scripts/setup.sh); the command is
``$MTCABENCH_PHOENIX_BIN``, by default ``~/.cache/mtcabench/phoenix-venv/bin/phoenix``. Each
server gets a working folder of its own (``PHOENIX_WORKING_DIR``: its SQLite database, no
database server), a free port on 127.0.0.1 for the UI, the REST API and OTLP over HTTP, and
another for OTLP over gRPC; its telemetry to Arize is switched off.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from mtcabench.errors import ServiceError
from mtcabench.services._process import describe_exit, free_port

#: Environment variable naming the ``phoenix`` executable.
BIN_ENV = "MTCABENCH_PHOENIX_BIN"
DEFAULT_BIN = Path.home() / ".cache" / "mtcabench" / "phoenix-venv" / "bin" / "phoenix"
#: A first start migrates an empty database (about 30 s on 2 busy cores).
START_TIMEOUT_S = 240.0
#: Variables of the caller's environment that would change what the server does (another
#: database, authentication, another port): not passed on.
_DROPPED_PREFIX = "PHOENIX_"


@dataclass
class PhoenixServer:
    """A running local Phoenix: its URL (UI, REST API, OTLP HTTP at ``/v1/traces``)."""

    url: str
    working_dir: Path
    process: subprocess.Popen = field(repr=False)
    log_path: Path
    _cleanup: Path | None = field(default=None, repr=False)

    @property
    def traces_url(self) -> str:
        return f"{self.url}/v1/traces"

    def stop(self, timeout: float = 20.0) -> None:
        """Stop the server (its process group); its temporary folder is removed unless it
        died by itself (its log explains the death)."""
        crashed = self.process.poll() not in (None, 0)
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        if self._cleanup is not None and not crashed:
            shutil.rmtree(self._cleanup, ignore_errors=True)
        self._cleanup = None


def phoenix_bin() -> Path:
    """The ``phoenix`` executable; one ServiceError line saying how to install it."""
    path = Path(os.environ.get(BIN_ENV) or DEFAULT_BIN).expanduser()
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise ServiceError(
            f"Arize Phoenix is not installed at {path}: run scripts/setup.sh (it installs "
            "scripts/locks/phoenix.txt into its own virtual environment), or set "
            f"{BIN_ENV} to a phoenix command")
    return path


def _log_tail(path: Path, lines: int = 12) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def start_phoenix(working_dir: str | Path | None = None,
                  timeout: float = START_TIMEOUT_S) -> PhoenixServer:
    """Start ``phoenix serve`` on free localhost ports and wait until ``/healthz`` answers;
    a ServiceError naming the log when it exits or does not answer in ``timeout`` s."""
    bin_path = phoenix_bin()
    cleanup = None
    if working_dir is None:
        cleanup = Path(tempfile.mkdtemp(prefix="mtcabench-phoenix-"))
        working_dir = cleanup / "data"
    working_dir = Path(working_dir)
    working_dir.mkdir(parents=True, exist_ok=True)
    log_path = working_dir.parent / f"{working_dir.name}.log"
    port, grpc_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(_DROPPED_PREFIX)}
    env.update(PHOENIX_WORKING_DIR=str(working_dir), PHOENIX_HOST="127.0.0.1",
               PHOENIX_PORT=str(port), PHOENIX_GRPC_PORT=str(grpc_port),
               PHOENIX_TELEMETRY_ENABLED="false")
    with open(log_path, "wb") as log:
        process = subprocess.Popen([str(bin_path), "serve"], stdout=log,
                                   stderr=subprocess.STDOUT, env=env, start_new_session=True)
    server = PhoenixServer(f"http://127.0.0.1:{port}", working_dir, process, log_path, cleanup)
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=5.0) as client:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise ServiceError(f"Phoenix {describe_exit(process.returncode)} while "
                                   f"starting; its log is {log_path}:\n{_log_tail(log_path)}")
            with contextlib.suppress(httpx.HTTPError):
                if client.get(f"{server.url}/healthz").status_code == 200:
                    return server
            time.sleep(0.5)
    server.stop()
    raise ServiceError(f"Phoenix did not answer {server.url}/healthz within {timeout:g} s; "
                       f"its log is {log_path}:\n{_log_tail(log_path)}")


@contextlib.contextmanager
def local_phoenix(working_dir: str | Path | None = None) -> Iterator[PhoenixServer]:
    """A local Phoenix for the duration of a ``with`` block."""
    server = start_phoenix(working_dir)
    try:
        yield server
    finally:
        server.stop()
