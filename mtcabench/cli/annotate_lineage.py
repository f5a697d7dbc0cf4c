"""`mtcabench annotate lineage` (being built; see issue 8)."""

from __future__ import annotations

import typer


def register(group: typer.Typer) -> None:
    pass
