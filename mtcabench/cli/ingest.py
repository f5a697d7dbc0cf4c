"""`mtcabench ingest`: raw TauBench / ConFETTI files to validated conversation records."""

from __future__ import annotations

from pathlib import Path

import typer

from mtcabench.cli import options
from mtcabench.ingest import ingest_confetti, ingest_taubench
from mtcabench.progress import err_console
from mtcabench.terminal import shown

group = typer.Typer(help="Turn raw agent conversations into validated conversation records.",
                    no_args_is_help=True)


@group.command("taubench")
def taubench(
    paths: list[Path] = typer.Argument(..., help="TauBench historical trajectory files."),
    out: Path = options.out("Conversations file to write (JSONL)."),
    agent_model: str | None = typer.Option(
        None, help="Agent model (default: from the file name <model>-<domain>.json)."),
    domain: str | None = typer.Option(None, help="Domain (default: from the file name)."),
) -> None:
    """Ingest TauBench runs: one conversation per (domain, model, task, trial)."""
    n = ingest_taubench(paths, out, agent_model=agent_model, domain=domain)
    err_console.print(f"wrote {n} conversations to {shown(out)}")


@group.command("confetti")
def confetti(
    path: Path = typer.Argument(..., help="ConFETTI BFCL-style JSON Lines file."),
    out: Path = options.out("Conversations file to write (JSONL)."),
    domain: str | None = typer.Option(None, help="Domain for every dialog (default: the "
                                         "record's category, else 'unknown')."),
) -> None:
    """Ingest ConFETTI dialogs, each rebuilt from its turn-level prefixes."""
    n = ingest_confetti(path, out, domain=domain)
    err_console.print(f"wrote {n} conversations to {shown(out)}")


def register(app: typer.Typer) -> None:
    app.add_typer(group, name="ingest")
