"""`mtcabench release`: placeholder until the release stage lands (see the issues)."""

from __future__ import annotations

import typer

group = typer.Typer(help="(release stage: not built yet)", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(group, name="release")
