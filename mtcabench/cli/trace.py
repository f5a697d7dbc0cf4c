"""`mtcabench trace`: placeholder until the trace stage lands (see the issues)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    pass
