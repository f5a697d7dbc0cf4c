"""User-facing errors and the exit codes the CLI documents.

A :class:`MtcaError` is a problem with what the user gave us (a file, a record, a flag, a
service address) or with the machine (a full disk, an output another process is writing).
The CLI prints it as one line and exits with its code; anything else is a bug and keeps its
traceback. Every message is redacted (:mod:`mtcabench.redact`) when the error is made.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from mtcabench.redact import redact


class ExitCode:
    """Exit codes of the ``mtcabench`` command (also listed in the README)."""

    OK = 0
    BUG = 1  # an unexpected error: a traceback is printed, please report it
    USAGE = 2  # wrong command-line usage (typer/click's own code)
    BAD_INPUT = 3  # a file, line or record is malformed or inconsistent
    SERVICE = 4  # a service (LLM endpoint, Label Studio, GitHub, the Hub) failed or refused
    INVALID = 5  # validation refused the data (graph rules, checksums, a release)
    STOPPED = 6  # stopped cleanly before finishing (budget reached); rerun to resume
    NO_SPACE = 7  # the disk (or quota) is full: nothing half-written was kept; free space, rerun
    BUSY = 8  # another mtcabench process is writing the same output now (its pid is named)


class MtcaError(Exception):
    """An error the user can fix; printed as one clear line, never as a traceback."""

    exit_code: int = ExitCode.BAD_INPUT

    def __init__(self, message: str, *, exit_code: int | None = None):
        # Whatever a message quotes (a server's answer, a header, a path), it never carries a
        # secret the process holds: every message is redacted here, once, before it is shown.
        message = redact(message)
        super().__init__(message)
        self.message = message
        if exit_code is not None:
            self.exit_code = exit_code


class InputError(MtcaError):
    """A malformed or inconsistent input file, line or record."""

    exit_code = ExitCode.BAD_INPUT

    @classmethod
    def at(
        cls,
        path: str | Path,
        reason: str,
        *,
        line: int | None = None,
        record: str | None = None,
    ) -> InputError:
        """Build the standard message: ``file:line (record id): reason``.

        A path or record id holding a line break or another control character is shown
        escaped, so that the message stays one line whatever the input holds.
        """
        where = _printable(str(path))
        if line is not None:
            where += f":{line}"
        if record is not None:
            where += f" (record {_printable(record)})"
        err = cls(f"{where}: {reason}")
        err.path, err.line, err.record = str(path), line, record
        return err


def _printable(text: str) -> str:
    return text if text.isprintable() else repr(text)[1:-1]


class UsageError(MtcaError):
    """Options that do not go together, or a required one missing: a mistake in how the
    command was called, not in a file (exit code 2, as click's own usage errors)."""

    exit_code = ExitCode.USAGE


class ServiceError(MtcaError):
    """A remote or local service could not be reached, or refused the request."""

    exit_code = ExitCode.SERVICE


class ValidationFailed(MtcaError):
    """Validation refused the data; ``failures`` lists every problem found."""

    exit_code = ExitCode.INVALID

    def __init__(self, message: str, failures: list[str] | None = None):
        self.failures = list(failures or [])
        full = message
        if self.failures:
            shown = self.failures[:50]
            full += "\n" + "\n".join(f"  - {f}" for f in shown)
            if len(self.failures) > len(shown):
                full += f"\n  ... and {len(self.failures) - len(shown)} more"
        super().__init__(full)


class Stopped(MtcaError):
    """Work stopped cleanly before the end (a budget was reached); a rerun resumes."""

    exit_code = ExitCode.STOPPED


class NoSpace(MtcaError):
    """The disk or the quota is full: the output was not (or not wholly) written."""

    exit_code = ExitCode.NO_SPACE


class OutputBusy(MtcaError):
    """Another process holds the output this run would write (see ``files.claim_output``)."""

    exit_code = ExitCode.BUSY


#: The modules of each extra (pyproject.toml's optional dependencies) whose absence names it.
EXTRA_MODULES = {"eval": frozenset({"torch", "transformers", "gguf", "accelerate"}),
                 "otel": frozenset({"opentelemetry", "google"})}


class MissingExtra(MtcaError, ModuleNotFoundError):
    """A feature needs an extra that is not installed: one line naming it and how to install
    it (exit 3 on the command line). Also a ModuleNotFoundError, as libraries raise for a
    missing optional dependency, so that ``except ImportError`` still catches it."""

    def __init__(self, what: str, extra: str, module: str):
        super().__init__(f"{what} needs {module}, which is not installed: pip install "
                         f"'mtcabench[{extra}]'")
        self.name, self.extra = module, extra


@contextlib.contextmanager
def needs_extra(what: str, extra: str = "eval") -> Iterator[None]:
    """Inside, a missing module of ``extra`` is :class:`MissingExtra` naming ``what`` needs
    it and the extra: the one place that says so, for the command line (``trace``,
    ``explain``) and the Python API (``mtcabench.Tracer``, ``mtcabench.explain``) alike."""
    try:
        yield
    except ModuleNotFoundError as exc:
        if (not isinstance(exc, MissingExtra) and exc.name
                and exc.name.split(".")[0] in EXTRA_MODULES[extra]):
            raise MissingExtra(what, extra, exc.name.split(".")[0]) from exc
        raise


#: What a full disk or quota reads as in the text of an error that carries no errno (pyarrow's
#: and ``datasets``' IOError, a library's own OSError): the strerror texts of the codes below.
_NO_SPACE_TEXT = ("no space left on device", "disk quota exceeded", "file too large")
_NO_SPACE_CODES = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def from_os_error(exc: BaseException) -> MtcaError | None:
    """:func:`from_exception` (the name the writers and caches call it by)."""
    return from_exception(exc)


def _errno_of(exc: OSError) -> int | None:
    """The errno of an OSError, or the one its text names when it carries none."""
    if exc.errno is not None:
        return exc.errno
    text = str(exc).lower()
    for code, name in zip(_NO_SPACE_CODES, _NO_SPACE_TEXT):
        if name in text:
            return code
    return None


def from_exception(exc: BaseException) -> MtcaError | None:
    """The one-line error for a failure the user's input or the machine caused, else None
    (a bug, which keeps its traceback). The one place the command line maps exceptions:

    - a full disk or quota (``ENOSPC``, ``EDQUOT``, ``EFBIG``, the same named only in the
      text of an error without errno, SQLite's "database or disk is full") is
      :class:`NoSpace` (exit 7);
    - a connection refused, reset or timed out is :class:`ServiceError` (exit 4);
    - any other ``OSError`` (a path that is a folder, a FIFO, a link loop, a name too long,
      a read-only file system, permission refused, an I/O error) is bad input (exit 3),
      naming the path and the reason;
    - running out of memory is one line (exit 3): an input too large for this machine;
    - a text that cannot be written as UTF-8 (a lone surrogate: a file name that is not
      UTF-8 reaching a writer) is bad input.
    """
    if isinstance(exc, MtcaError):
        return exc
    if isinstance(exc, sqlite3.OperationalError) and "full" in str(exc):
        return NoSpace(f"a database could not grow ({exc}); free some space (or write "
                       "elsewhere) and rerun: finished records are kept")
    if isinstance(exc, MemoryError):
        return MtcaError("ran out of memory: an input is too large for this machine's memory; "
                         "split it, or run on a machine with more memory")
    if isinstance(exc, UnicodeEncodeError) and "surrogate" in str(exc.reason):
        return InputError("a name or text that is not UTF-8 (a file name with bytes that are "
                          "not UTF-8?) cannot be written; rename the file and rerun")
    if not isinstance(exc, OSError):
        return None
    where = f"{_shown_path(exc.filename)}: " if exc.filename else ""
    code = _errno_of(exc)
    if code in _NO_SPACE_CODES:
        return NoSpace(f"{where}{os.strerror(code).lower()}; free some space (or write "
                       "elsewhere) and rerun")
    if code == errno.ENAMETOOLONG:
        return InputError(f"{where}a file name is longer than the file system allows (255 "
                          "bytes); choose a shorter name or path")
    if code in (errno.EROFS, errno.EACCES, errno.EPERM):
        return InputError(f"{where}{os.strerror(code).lower()}; choose a file or folder "
                          "you can read and write")
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return ServiceError(f"{where}{_reason(exc, code)}; check that the service is up and "
                            "reachable, then rerun")
    if code in _PATH_REASONS:
        return InputError(f"{where}{_PATH_REASONS[code]}")
    return InputError(f"{where}{_reason(exc, code)}")


#: What to do about the path errors a user meets most, by errno.
_PATH_REASONS = {
    errno.EISDIR: "is a folder where a file is expected; give a file path",
    errno.ENOTDIR: "a part of the path is a file where a folder is expected",
    errno.ELOOP: "is a symbolic link (or a loop of them) where a file is expected; give the "
                 "real path",
    errno.EEXIST: "already exists and is not what this command expects there (a file where a "
                  "folder should be?); move it or choose another path",
    errno.ENOENT: "no such file or folder",
    errno.ENXIO: "is a FIFO or device with no reader; give a regular file",
}


def _reason(exc: OSError, code: int | None) -> str:
    text = exc.strerror or (os.strerror(code) if code is not None else None) or str(exc)
    return _shown_path(text.strip() or type(exc).__name__).lower()


def _shown_path(value: object) -> str:
    """A path (bytes or text, maybe with surrogates from a non-UTF-8 name) as one safe line."""
    text = os.fsdecode(value) if isinstance(value, (bytes, str)) else str(value)
    return _printable(utf8_text(text))


def utf8_text(text: str) -> str:
    """``text`` as it can be written as UTF-8: a name read from a file system that holds bytes
    which are not UTF-8 (Python keeps them as lone surrogates) gets U+FFFD in their place."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        try:
            return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        except UnicodeEncodeError:
            return text.encode("utf-8", "replace").decode("utf-8")
