"""`mtcabench ingest`: raw TauBench / ConFETTI files to validated conversation records."""

from __future__ import annotations

from itertools import chain
from pathlib import Path

import typer

from mtcabench.cli import options
from mtcabench.ingest import read_confetti, read_taubench, write_conversations
from mtcabench.progress import err_console, tracked

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
    convs = chain.from_iterable(read_taubench(p, agent_model=agent_model, domain=domain)
                                for p in paths)
    with tracked(convs, "ingest taubench") as items:
        n = write_conversations(out, items)
    err_console.print(f"wrote {n} conversations to {out}")


@group.command("confetti")
def confetti(
    path: Path = typer.Argument(..., help="ConFETTI BFCL-style JSON Lines file."),
    out: Path = options.out("Conversations file to write (JSONL)."),
    domain: str | None = typer.Option(None, help="Domain for every dialog (default: the "
                                         "record's category, else 'unknown')."),
) -> None:
    """Ingest ConFETTI dialogs, each rebuilt from its turn-level prefixes."""
    with tracked(read_confetti(path, domain=domain), "ingest confetti") as items:
        n = write_conversations(out, items)
    err_console.print(f"wrote {n} conversations to {out}")


def register(app: typer.Typer) -> None:
    app.add_typer(group, name="ingest")
