"""`mtcabench ingest`: raw TauBench / tau2-bench / ConFETTI files and agent logs of any format
(:mod:`mtcabench.transcripts`) to validated conversation records."""

from __future__ import annotations

from pathlib import Path

import typer

from mtcabench.cli import options
from mtcabench.ingest import ingest_confetti, ingest_tau2, ingest_taubench, ingest_transcripts
from mtcabench.progress import err_console
from mtcabench.terminal import shown
from mtcabench.transcripts import format_names, formats_help

def _say(line: str) -> None:
    """A reader's line on where a name came from, on stderr (text from the input escaped)."""
    err_console.print(shown(line))


group = typer.Typer(help="Turn raw agent conversations into validated conversation records.",
                    no_args_is_help=True)


@group.command("taubench")
def taubench(
    paths: list[Path] = typer.Argument(..., help="TauBench historical trajectory files."),
    out: Path = options.out("Conversations file to write (JSONL)."),
    agent_model: str | None = typer.Option(
        None, help="Agent model (default: from the file name, <model>-<domain>.json, "
        "<domain>-<model>.json or tau-bench's tool-calling-<model>-<temperature>_range_...; "
        "a line says so)."),
    domain: str | None = typer.Option(
        None, help="Domain (default: the runs' own, by their policy's title '# <Domain> agent "
        "policy' and their tools; else a domain the file name starts or ends with, and a line "
        "says so)."),
) -> None:
    """Ingest TauBench runs: one conversation per (domain, model, task, trial)."""
    n = ingest_taubench(paths, out, agent_model=agent_model, domain=domain, report=_say)
    err_console.print(f"wrote {n} conversations to {shown(out)}")


@group.command("tau2")
def tau2(
    paths: list[Path] = typer.Argument(..., help="tau2-bench files: results ({info, tasks, "
                                       "simulations}), wrappers ({domain, agent, model, "
                                       "simulations}) or bare lists of simulations."),
    out: Path = options.out("Conversations file to write (JSONL)."),
    domain: str | None = typer.Option(
        None, help="Domain of a bare list of simulations [default: the one its policy's title "
        "'# <Domain> agent policy' names]."),
    agent_model: str | None = typer.Option(
        None, help="Agent model of a bare list of simulations (it does not record one)."),
    agent_implementation: str | None = typer.Option(
        None, help="Agent implementation of a bare list of simulations [default: none; its "
        "ids say 'unnamed']."),
) -> None:
    """Ingest tau2-bench runs: one conversation per simulation, id by (domain, agent model,
    agent implementation, task, trial), the system turn rebuilt from the policy the run was
    given. A file that records a name refuses a flag giving another."""
    n = ingest_tau2(paths, out, domain=domain, agent_model=agent_model,
                    agent_implementation=agent_implementation, report=_say)
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


@group.command("transcripts", help=(
    "Ingest agent logs of any format: every conversation of every file (several traces, "
    "several Inspect samples), ids from the file name and the log's own ids. Formats, "
    f"recognised from each file's shape: {formats_help()}."))
def transcripts(
    paths: list[Path] = typer.Argument(..., help="Agent log files."),
    out: Path = options.out("Conversations file to write (JSONL)."),
    format: str | None = typer.Option(None, "--format", help="Read every file as this format "
                                      f"({', '.join(format_names())}) [default: from each file's shape]."),
    source: str | None = typer.Option(None, help="The records' source [default: transcript]."),
    domain: str | None = typer.Option(None, help="The records' domain [default: transcript]."),
) -> None:
    n = ingest_transcripts(paths, out, format=format, source=source, domain=domain)
    err_console.print(f"wrote {n} conversations to {shown(out)}")


def register(app: typer.Typer) -> None:
    app.add_typer(group, name="ingest")
