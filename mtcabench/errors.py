"""User-facing errors and the exit codes the CLI documents.

A :class:`MtcaError` is a problem with what the user gave us (a file, a record, a flag, a
service address) or with the machine (a full disk, an output another process is writing).
The CLI prints it as one line and exits with its code; anything else is a bug and keeps its
traceback. Every message is redacted (:mod:`mtcabench.redact`) when the error is made.
"""

from __future__ import annotations

import errno
import os
import sqlite3
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


def from_os_error(exc: BaseException) -> MtcaError | None:
    """The one-line error for a machine-side failure the user can fix, else None (a bug).

    A full disk or quota (``ENOSPC``, ``EDQUOT``, ``EFBIG``, SQLite's "database or disk is
    full") is :class:`NoSpace`; a file name longer than the file system allows, a read-only
    file system or a permission refused is bad input (the user chose the path).
    """
    if isinstance(exc, sqlite3.OperationalError) and "full" in str(exc):
        return NoSpace(f"a database could not grow ({exc}); free some space (or write "
                       "elsewhere) and rerun: finished records are kept")
    if not isinstance(exc, OSError):
        return None
    where = f"{exc.filename}: " if exc.filename else ""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return NoSpace(f"{where}{os.strerror(exc.errno).lower()}; free some space (or write "
                       "elsewhere) and rerun")
    if exc.errno == errno.ENAMETOOLONG:
        return InputError(f"{where}a file name is longer than the file system allows (255 "
                          "bytes); choose a shorter name or path")
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return InputError(f"{where}{os.strerror(exc.errno).lower()}; choose a file or folder "
                          "you can read and write")
    return None
