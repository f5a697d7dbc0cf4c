"""A local Label Studio server for the demo and the tests, started and stopped by us.

Label Studio lives in its own virtual environment (it pins many packages); the command is
``$MTCABENCH_LABEL_STUDIO_BIN``, by default ``~/.cache/mtcabench/ls-venv/bin/label-studio``.
Its first start on an empty data folder runs the database migrations (about 3 minutes), so
a migrated folder without any user is kept as a template in the cache
(``label-studio-template-<version>``) and copied for each server (start in about 10 s).
Each server gets its own admin user, password and API token, made up at start and passed
through the environment (not the command line, which other local users can read).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from mtcabench.errors import MtcaError, ServiceError
from mtcabench.services._process import describe_exit, free_port

#: Environment variable naming the ``label-studio`` executable.
BIN_ENV = "MTCABENCH_LABEL_STUDIO_BIN"
#: Environment variable naming the cache folder (templates live there).
CACHE_ENV = "MTCABENCH_CACHE_DIR"
DEFAULT_CACHE = Path.home() / ".cache" / "mtcabench"
DEFAULT_BIN = DEFAULT_CACHE / "ls-venv" / "bin" / "label-studio"

#: How long a start may take: a migration (first start) is slow on 2 cores.
MIGRATE_TIMEOUT_S = 900.0
START_TIMEOUT_S = 180.0

DATABASE_FILE = "label_studio.sqlite3"
_PORT_LINE = re.compile(r"Starting development server at http://[^:/]+:(\d+)/")
# Variables Label Studio reads as credentials (get_env tries LABEL_STUDIO_X, HEARTEX_X, X):
# stray values from the caller's environment must not create users we do not know about.
_CREDENTIAL_VARS = [
    f"{prefix}{name}"
    for prefix in ("LABEL_STUDIO_", "HEARTEX_", "")
    for name in ("USERNAME", "PASSWORD", "USER_TOKEN")
]


@dataclass
class LabelStudioServer:
    """A running local Label Studio: where it is and how to log in. Stop it with :meth:`stop`."""

    url: str
    username: str
    password: str = field(repr=False)
    api_key: str = field(repr=False)
    data_dir: Path
    process: subprocess.Popen = field(repr=False)
    log_path: Path
    _cleanup: Path | None = field(default=None, repr=False)

    def stop(self, timeout: float = 20.0) -> None:
        """Stop the server (its whole process group) and remove its temporary folder.

        The folder of a server that died by itself is kept: its log explains the death.
        """
        crashed = self.process.poll() not in (None, 0)
        _stop_process(self.process, timeout)
        if self._cleanup is not None and not crashed:
            shutil.rmtree(self._cleanup, ignore_errors=True)
        self._cleanup = None

    def failure(self, doing: str = "answering") -> str | None:
        """Why the server is gone, as one line naming its log; None while it runs."""
        code = self.process.poll()
        if code is None:
            return None
        return f"the embedded Label Studio {describe_exit(code)} while {doing}; its log is {self.log_path}"

    @property
    def running(self) -> bool:
        return self.process.poll() is None


def cache_dir() -> Path:
    """The mtcabench cache folder ($MTCABENCH_CACHE_DIR or ~/.cache/mtcabench)."""
    return Path(os.environ.get(CACHE_ENV) or DEFAULT_CACHE).expanduser()


def label_studio_bin() -> Path:
    """The ``label-studio`` executable; a clear ServiceError when it is not installed."""
    path = Path(os.environ.get(BIN_ENV) or DEFAULT_BIN).expanduser()
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise ServiceError(
            f"Label Studio is not installed at {path}: install it in its own virtual environment "
            f"(python3.11 -m venv {DEFAULT_CACHE / 'ls-venv'} && "
            f"{DEFAULT_CACHE / 'ls-venv' / 'bin' / 'pip'} install label-studio), or set {BIN_ENV} "
            "to its label-studio command, or give LABEL_STUDIO_URL and LABEL_STUDIO_API_KEY of a "
            "running server"
        )
    return path


def label_studio_version(bin_path: Path) -> str:
    """Version of the Label Studio installed beside ``bin_path`` (read from its metadata)."""
    python = bin_path.parent / "python"
    if python.exists():
        try:
            out = subprocess.run(
                [str(python), "-c",
                 "from importlib.metadata import version; print(version('label-studio'))"],
                capture_output=True, text=True, timeout=60, check=True,
            )
            return out.stdout.strip()
        except (subprocess.SubprocessError, OSError):
            pass
    for dist in bin_path.parent.parent.glob("lib/python*/site-packages/label_studio-*.dist-info"):
        return dist.name.removeprefix("label_studio-").removesuffix(".dist-info")
    return "unknown"


def _server_env(data_dir: Path, credentials: dict[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _CREDENTIAL_VARS}
    env.pop("LABEL_STUDIO_API_KEY", None)  # the client's key has nothing to do in the server
    env.update(
        LABEL_STUDIO_BASE_DATA_DIR=str(data_dir),
        # Legacy tokens (what --user-token sets) are off in 1.23 unless set before the
        # organisation is created, i.e. before the first user exists.
        LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN="true",
        LABEL_STUDIO_LATEST_VERSION_CHECK="false",  # no PyPI call at every start
        LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK="true",
        PYTHONUNBUFFERED="1",
    )
    if credentials:
        env.update(credentials)
    return env


def _launch(bin_path: Path, data_dir: Path, port: int, log_path: Path,
            credentials: dict[str, str] | None) -> subprocess.Popen:
    cmd = [str(bin_path), "start", "--no-browser", "--internal-host", "127.0.0.1",
           "--port", str(port), "--log-level", "INFO"]
    log = log_path.open("ab")
    try:
        return subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=_server_env(data_dir, credentials), start_new_session=True,
        )
    finally:
        log.close()


def _stop_process(process: subprocess.Popen, timeout: float) -> None:
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)


def _log_tail(log_path: Path, lines: int = 15) -> str:
    try:
        text = log_path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(text[-lines:])


def _wait_healthy(process: subprocess.Popen, port: int, log_path: Path, timeout: float) -> int:
    """Wait for GET /health; returns the port the server really listens on."""
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=5.0) as client:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise ServiceError(
                    f"Label Studio exited with code {process.returncode} while starting "
                    f"(log {log_path}):\n{_log_tail(log_path)}"
                )
            # Label Studio moves to the next port when ours was taken meanwhile: follow it.
            found = _PORT_LINE.findall(log_path.read_text(errors="replace"))
            if found:
                port = int(found[-1])
            try:
                r = client.get(f"http://127.0.0.1:{port}/health")
                if r.status_code == 200 and "UP" in r.text:
                    return port
            except httpx.HTTPError:
                pass
            time.sleep(1.0)
    raise ServiceError(
        f"Label Studio did not answer GET /health on port {port} within {timeout:.0f} s "
        f"(log {log_path}):\n{_log_tail(log_path)}"
    )


def ensure_template(bin_path: Path | None = None) -> Path:
    """The migrated, user-less data folder for this Label Studio version (built once, ~3 min)."""
    bin_path = bin_path or label_studio_bin()
    version = label_studio_version(bin_path)
    root = cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    template = root / f"label-studio-template-{version}"
    if (template / ".complete").exists():
        return template
    # Several processes (parallel test sessions) may get here: one migrates, the others wait.
    with (root / f".label-studio-template-{version}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (template / ".complete").exists():
            return template
        work = Path(tempfile.mkdtemp(prefix=f".label-studio-template-{version}.", dir=root))
        data = work / "data"
        data.mkdir()
        log_path = work / "migrate.log"
        process = _launch(bin_path, data, free_port(), log_path, credentials=None)
        try:
            _wait_healthy(process, 0, log_path, MIGRATE_TIMEOUT_S)
        except ServiceError:
            _stop_process(process, 20)
            shutil.rmtree(work, ignore_errors=True)
            raise
        _stop_process(process, 30)
        (data / ".env").unlink(missing_ok=True)  # holds this run's SECRET_KEY; each copy makes its own
        (data / ".complete").write_text(version + "\n")
        if template.exists():
            shutil.rmtree(template)
        os.replace(data, template)
        shutil.rmtree(work, ignore_errors=True)
    return template


def _copy_template(template: Path, data_dir: Path) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    shutil.copytree(template, data_dir, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(".complete", ".env"))
    data_dir.chmod(0o700)


def start_label_studio(
    data_dir: str | Path | None = None,
    *,
    port: int | None = None,
    username: str = "reviewer@mtcabench.local",
    password: str | None = None,
    api_key: str | None = None,
    timeout: float = START_TIMEOUT_S,
) -> LabelStudioServer:
    """Start a local Label Studio on 127.0.0.1 and wait until it answers; the caller stops it.

    ``data_dir`` None: a temporary folder, removed on stop. A new or empty ``data_dir`` is
    filled from the migrated template and kept. A ``data_dir`` that already holds a
    database is reused as it is: its user and token were set at its first start, so the
    same ``username``, ``password`` and ``api_key`` must be given again.
    """
    bin_path = label_studio_bin()
    cleanup = Path(tempfile.mkdtemp(prefix="mtcabench-label-studio-")) if data_dir is None else None
    process = None
    try:
        data_dir = Path(data_dir if data_dir is not None else cleanup / "data").absolute()
        reused = (data_dir / DATABASE_FILE).exists()
        if reused and (password is None or api_key is None):
            raise ServiceError(
                f"{data_dir} already holds a Label Studio database: give the password and API "
                "key it was created with, or choose an empty folder"
            )
        if not reused:
            _copy_template(ensure_template(bin_path), data_dir)
        password = password or secrets.token_urlsafe(12)
        api_key = api_key or secrets.token_hex(20)
        port = port or free_port()
        log_path = (cleanup or data_dir) / "label-studio.log"
        credentials = {
            "LABEL_STUDIO_USERNAME": username,
            "LABEL_STUDIO_PASSWORD": password,
            "LABEL_STUDIO_USER_TOKEN": api_key,
        }
        process = _launch(bin_path, data_dir, port, log_path, credentials)
        port = _wait_healthy(process, port, log_path, timeout)
        url = f"http://127.0.0.1:{port}"
        _check_token(url, api_key, log_path)
    except BaseException:
        if process is not None:
            _stop_process(process, 20)
        if cleanup is not None:
            shutil.rmtree(cleanup, ignore_errors=True)
        raise
    server = LabelStudioServer(url=url, username=username, password=password, api_key=api_key,
                               data_dir=data_dir, process=process, log_path=log_path,
                               _cleanup=cleanup)
    # The server runs in its own session (a Ctrl-C meant for us must not kill it half-way):
    # make sure it does not outlive this process when a caller forgets to stop it.
    atexit.register(server.stop)
    return server


def _check_token(url: str, api_key: str, log_path: Path) -> None:
    # Also proves that the server on this port is ours, not another one that took it.
    r = httpx.get(f"{url}/api/current-user/whoami",
                  headers={"Authorization": f"Token {api_key}"}, timeout=30)
    if r.status_code != 200:
        raise ServiceError(
            f"the local Label Studio at {url} refused its own API token (HTTP {r.status_code}); "
            f"log {log_path}"
        )


@contextlib.contextmanager
def local_label_studio(data_dir: str | Path | None = None, **kwargs) -> Iterator[LabelStudioServer]:
    """Context manager around :func:`start_label_studio`: the server stops on exit."""
    server = start_label_studio(data_dir, **kwargs)
    try:
        yield server
    finally:
        server.stop()


def _main(argv: list[str]) -> int:
    """``python -m mtcabench.services.label_studio prepare``: build the migrated template now.

    scripts/setup.sh calls it so that the first test or demo run does not pay for the
    migrations (minutes on a fresh machine).
    """
    if argv != ["prepare"]:
        print("usage: python -m mtcabench.services.label_studio prepare", file=sys.stderr)
        return 2
    try:
        print(f"Label Studio template ready: {ensure_template()}")
    except MtcaError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
