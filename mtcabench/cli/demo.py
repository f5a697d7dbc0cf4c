"""`mtcabench demo`: the main job end to end on the bundled sample."""

from __future__ import annotations

from pathlib import Path

import typer


def demo(
    out: Path = typer.Option(Path("runs/sample"), "--out", "-o", help="Output folder."),
) -> None:
    """Run the whole pipeline on raw/sample/ with embedded defaults (no keys or URLs needed)."""
    from mtcabench.demo import run_demo

    run_demo(out)


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
