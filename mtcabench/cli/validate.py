"""`mtcabench validate` and `mtcabench stats`: check and describe record files."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from mtcabench.cli import options
from mtcabench.errors import ValidationFailed
from mtcabench.progress import err_console
from mtcabench.stats import conversation_stats
from mtcabench.validate import validate_file
from mtcabench.terminal import shown


def validate(
    path: Path = typer.Argument(..., help="A record file (conversations, proposals, ...)."),
    conversations: Path | None = options.conversations(
        "Conversations file, needed to check graph records.", None),
) -> None:
    """Validate every record of a file; graphs are checked against every graph rule."""
    report = validate_file(path, conversations)
    if not report.ok:
        raise ValidationFailed(f"{path}: {len(report.violations)} rule violation(s) in "
                               f"{report.records} {report.kind} records",
                               [str(v) for v in report.violations])
    extra = f", {report.skipped_rejected} rejected records not checked" if report.skipped_rejected else ""
    err_console.print(f"{shown(path)}: {report.checked} {report.kind} records valid{extra}")


def stats(
    path: Path = typer.Argument(..., help="Conversations file."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Counts by source, domain and role, and conversation lengths."""
    s = conversation_stats(path).as_dict()
    if as_json:
        typer.echo(json.dumps(s, indent=2))
        return
    console = Console()
    table = Table(title=f"{shown(path)}: {s['conversations']} conversations, {s['tool_calls']} tool calls")
    table.add_column("group")
    table.add_column("key")
    table.add_column("count", justify="right")
    for title, key in (("source", "by_source"), ("domain", "by_domain"),
                       ("turns by role", "turns_by_role")):
        for k, v in sorted(s[key].items()):
            table.add_row(title, shown(k), str(v))
    for title, key in (("turns/conversation", "turns_per_conversation"),
                       ("chars/conversation", "chars_per_conversation")):
        d = s[key]
        table.add_row(title, "min / median / p90 / max",
                      f"{d['min']} / {d['median']:g} / {d['p90']} / {d['max']}")
    console.print(table)


def register(app: typer.Typer) -> None:
    app.command("validate")(validate)
    app.command("stats")(stats)
