"""`mtcabench annotate`: propose provenance graphs (LLM two-phase, lineage)."""

from __future__ import annotations

import typer

from mtcabench.cli import annotate_lineage

group = typer.Typer(help="Propose target spans and provenance graphs (LLM, lineage).",
                    no_args_is_help=True)

annotate_lineage.register(group)


def register(app: typer.Typer) -> None:
    app.add_typer(group, name="annotate")
