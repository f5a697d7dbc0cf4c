"""`mtcabench score`: placeholder until the score stage lands (see the issues)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    pass
