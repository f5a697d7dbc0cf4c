"""`mtcabench review`: placeholder until the review stage lands (see the issues)."""

from __future__ import annotations

import typer

group = typer.Typer(help="(review stage: not built yet)", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(group, name="review")
