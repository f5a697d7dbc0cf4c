"""User-facing errors and the exit codes the CLI documents.

A :class:`MtcaError` is a problem with what the user gave us (a file, a record, a flag, a
service address). The CLI prints it as one line and exits with its code; anything else is a
bug and keeps its traceback.
"""

from __future__ import annotations

from pathlib import Path


class ExitCode:
    """Exit codes of the ``mtcabench`` command (also listed in the README)."""

    OK = 0
    BUG = 1  # an unexpected error: a traceback is printed, please report it
    USAGE = 2  # wrong command-line usage (typer/click's own code)
    BAD_INPUT = 3  # a file, line or record is malformed or inconsistent
    SERVICE = 4  # a service (LLM endpoint, Label Studio, GitHub, the Hub) failed or refused
    INVALID = 5  # validation refused the data (graph rules, checksums, a release)
    STOPPED = 6  # stopped cleanly before finishing (budget reached); rerun to resume


class MtcaError(Exception):
    """An error the user can fix; printed as one clear line, never as a traceback."""

    exit_code: int = ExitCode.BAD_INPUT

    def __init__(self, message: str, *, exit_code: int | None = None):
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
