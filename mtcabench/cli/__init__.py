"""The ``mtcabench`` command: a thin layer over the stage modules, the top of the package.

Each stage registers its commands from its own module in this package; options that several
commands share (``--out``, ``--benchmark``, ``--conversations``, ...) are declared once in
:mod:`mtcabench.cli.options`. A user error (:class:`mtcabench.errors.MtcaError`) is printed as
one line and exits with its documented code, and so is any failure that the user's input or
the machine can cause (:func:`mtcabench.errors.from_exception`, the one mapping); any other
exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import sys

import typer
from rich.text import Text
from typer.core import TyperGroup

from mtcabench._version import __version__
from mtcabench.errors import ExitCode, MtcaError, from_exception
from mtcabench.progress import err_console
from mtcabench.redact import RedactedStream, redacted_output
from mtcabench.terminal import plain


class _WholeHelpGroup(TyperGroup):
    """A group whose command list gives each command's first sentence whole, wrapped: click
    cuts it to the terminal's width minus the names ("Validate every record of a file;
    graphs are checked..."), mid-phrase."""

    def format_commands(self, ctx, formatter):  # noqa: D401 - click API
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, cmd.get_short_help_str(limit=10_000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


#: The order of ``mtcabench --help``: the entry points first (explain any agent log; the
#: main job on the sample), then the stages in pipeline order. A command not named here is
#: listed after these.
COMMAND_ORDER = ("explain", "demo", "raw", "ingest", "validate", "stats", "annotate", "review",
                 "release", "trace", "trace-merge", "at2-learn", "score", "show", "view")


class _Group(_WholeHelpGroup):
    """Root group: turns user errors into one clear line and an exit code."""

    def list_commands(self, ctx):  # noqa: D401 - click API
        names = super().list_commands(ctx)
        rank = {name: k for k, name in enumerate(COMMAND_ORDER)}
        return sorted(names, key=lambda n: (rank.get(n, len(rank)), names.index(n)))

    def invoke(self, ctx):  # noqa: D401 - click API
        try:
            with redacted_output():  # everything a command prints, stdout too (redact)
                return super().invoke(ctx)
        except KeyboardInterrupt:
            err_console.print("interrupted; finished records are kept, rerun to resume")
            raise typer.Exit(130) from None
        except Exception as exc:
            # The one mapping (errors.from_exception): an error of ours, a full disk, a path that
            # is a folder or a FIFO, a lost connection, memory: one line and its exit code.
            # Anything else (typer's own exits and usage errors included) is raised as it is.
            mapped = from_exception(exc)
            if mapped is None:
                raise
            report_error(mapped)
            raise typer.Exit(mapped.exit_code) from None


def report_error(exc: MtcaError) -> None:
    # Text (not markup) so that rule names like [edge-backwards] print as they are; the
    # message quotes the user's input, so no control code of it reaches the terminal.
    err_console.print(Text.assemble(("error: ", "bold red"), plain(exc.message)), soft_wrap=True)


EXIT_CODES_HELP = (
    "Exit codes: 0 ok; 1 unexpected error (a bug, with traceback); 2 usage; 3 bad input "
    "(file, line, record named); 4 a service failed (LLM endpoint, Label Studio, GitHub, Hub); "
    "5 validation refused the data; 6 stopped before the end (budget), rerun to resume; "
    "7 no space left on the disk (nothing half-written kept); 8 another process is writing "
    "the same output (its pid is named)."
)

app = typer.Typer(
    cls=_Group,
    name="mtcabench",
    help="Multi-turn context attribution: explain where an agent's answer came from; build, "
    "review, publish and score the MTCABench benchmark.\n\n" + EXIT_CODES_HELP,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"mtcabench {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """Build, review, publish and score MTCABench."""


def _register() -> None:
    # One module per stage; each adds its commands or group to the root app.
    from mtcabench.cli import (  # noqa: PLC0415 - registration order is the help order
        annotate,
        demo,
        explain,
        ingest,
        raw,
        release,
        review,
        score,
        trace,
        validate,
        view,
    )

    for module in (explain, demo, raw, ingest, validate, annotate, review, release, trace, score,
                   view):
        module.register(app)
    # Command groups list their commands whole too.
    for info in app.registered_groups:
        if info.typer_instance is not None:
            info.typer_instance.info.cls = _WholeHelpGroup


_register()


def main() -> None:
    """Console-script entry point."""
    # The last line of defence: whatever reaches stderr, a bug's traceback included, is
    # redacted (mtcabench.redact); messages of ours were redacted when they were made.
    if not isinstance(sys.stderr, RedactedStream):
        sys.stderr = RedactedStream(sys.stderr)
    try:
        app()
    except Exception as exc:  # raised outside a command (e.g. in a callback)
        mapped = from_exception(exc)
        if mapped is None:
            raise
        report_error(mapped)
        sys.exit(mapped.exit_code)


__all__ = ["app", "main", "ExitCode"]
