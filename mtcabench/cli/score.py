"""`mtcabench score` and `mtcabench show`: score submissions, draw a span's graphs."""

from __future__ import annotations

from pathlib import Path

import typer

from mtcabench.cli import options
from mtcabench.progress import err_console
from mtcabench.terminal import plain, shown


def score(
    submissions: list[Path] | None = typer.Argument(
        None, help="Submission files (JSON Lines) to score; see docs/scoring.md."),
    benchmark: str = options.benchmark(),
    compare: tuple[Path, Path] | None = typer.Option(
        None, "--compare", metavar="A B",
        help="Two submissions side by side: A, B, A - B with a paired bootstrap."),
    out: Path | None = options.out("Folder for reports and charts [default: score/ beside "
                                   "the first submission].", None),
    resamples: int = typer.Option(1000, help="Bootstrap resamples (0: no intervals; at most "
                                  "100,000)."),
    seed: int = typer.Option(0, help="Bootstrap seed (fixed, so reruns agree)."),
    average: str = typer.Option("macro", help="Average printed: macro, micro or both "
                                "(the files hold both)."),
    plot: bool = typer.Option(True, "--plot/--no-plot", help="Draw the chart by dependency type."),
    floors: bool = typer.Option(True, "--floors/--no-floors", help="Show the model-free floors "
                                "recency, first-user and string-match, computed on the same "
                                "spans, beside each submission's rows and --compare's (table, "
                                "Markdown, JSON)."),
) -> None:
    """Score submissions: edge and source precision/recall/F1, by dependency type, source
    dataset and gold depth, macro and micro averages with bootstrap 95% intervals, each row
    beside the model-free floors on the same spans."""
    from mtcabench.scoring.run import run_scoring

    run_scoring(submissions or [], benchmark, compare=compare, out=out, resamples=resamples,
                seed=seed, average=average, plot=plot, floors=floors)


def show(
    span_ids: list[str] = typer.Argument(..., help="Span ids to draw."),
    benchmark: str = options.benchmark(),
    submission: Path | None = typer.Option(
        None, "--submission", "-s", help="Submission whose graph is overlaid on the gold one."),
    out: Path = options.out("Folder for the pictures.", Path(".")),
    fmt: str = typer.Option("html", "--format", help="Picture format: html or svg."),
    text: str = typer.Option("mermaid", "--text", help="Text printed: mermaid, dot or none."),
) -> None:
    """Draw spans: the conversation with the gold graph and a submission's graph overlaid."""
    from mtcabench.errors import InputError
    from mtcabench.scoring.show import draw_spans, render_dot, render_mermaid

    if text not in ("mermaid", "dot", "none"):
        raise InputError(f"--text must be mermaid, dot or none, got {text!r}")
    views, paths = draw_spans(span_ids, benchmark, submission, out, fmt)
    for view, path in zip(views, paths):
        if text != "none":
            typer.echo(plain(render_mermaid(view) if text == "mermaid" else render_dot(view)))
        err_console.print(f"show: {shown(view.span.id)} -> {shown(path)}")


def register(app: typer.Typer) -> None:
    app.command("score")(score)
    app.command("show")(show)
