"""`mtcabench annotate`: propose provenance graphs (LLM two-phase, lineage)."""

from __future__ import annotations

import typer

group = typer.Typer(help="Propose target spans and provenance graphs (LLM, lineage).",
                    no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(group, name="annotate")
