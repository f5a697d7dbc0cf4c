"""`mtcabench view`: one static page for a whole run (every span, every submission)."""

from __future__ import annotations

from pathlib import Path

import typer

from mtcabench.cli import options
from mtcabench.progress import err_console


def view(
    submissions: list[Path] = typer.Argument(
        ..., help="Submission files (JSON Lines) shown side by side; see docs/scoring.md."),
    benchmark: str = options.benchmark(),
    out: Path = options.out("Folder for the page (index.html, view.js, view.css, data.js).",
                            Path("view")),
) -> None:
    """Write one page for a run: every span in a table with its dependency type, depth and each
    submission's edge F1, source hit and evidence hit@3; filters by type, depth, method, hit or
    miss and "methods disagree"; each row opens the span with gold and every method's graph
    side by side. Static files: open index.html in a browser, no server needed."""
    from mtcabench.scoring.view import write_site

    paths = write_site(benchmark, submissions, out)
    err_console.print(f"view: {len(submissions)} submission(s) -> {paths[0]}")


def register(app: typer.Typer) -> None:
    app.command("view")(view)
