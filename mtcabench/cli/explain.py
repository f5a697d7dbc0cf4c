"""`mtcabench explain FILE`: where the values and claims of an agent's answer came from.

Reads a transcript as agents log it (any format of :mod:`mtcabench.transcripts`: OpenAI chat
or Responses, Anthropic Messages, OpenTelemetry GenAI spans, Inspect AI logs, a TauBench run,
our conversation records), attributes the chosen spans with Tokengeist (and flat, or any method, for
comparison) on a causal LM, prints each provenance graph as a tree and, with ``--out``,
writes ``explain.json`` and one HTML page per span and method. torch is imported only when
the command runs.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from mtcabench.cli import _evaluator as ev
from mtcabench.cli import options
from mtcabench.errors import needs_extra
from mtcabench.evaluate import TraceSettings
from mtcabench.progress import err_console
from mtcabench.terminal import shown
from mtcabench.transcripts import format_names, formats_help


def explain(
    file: Path = typer.Argument(..., help=f"Agent log, its format recognised from its shape: "
                                f"{formats_help()}."),
    format: str | None = typer.Option(None, "--format", help=f"Read FILE as this format "
                                      f"({', '.join(format_names())}) [default: from its shape]."),
    conversation: str | None = typer.Option(None, "--conversation", help="Which conversation "
                                            "of a file holding several: its id, the end of its "
                                            "id (task-3/trial-0), or its position from 0."),
    turn: int | None = typer.Option(None, "--turn", help="Assistant turn to explain, from 0 "
                                    "[default: the last one with content]."),
    span: str | None = typer.Option(None, "--span", help="Text of the turn to explain (its "
                                    "first occurrence) [default turn: the last answer]."),
    start: int | None = typer.Option(None, "--start", help="Start offset of the span in the "
                                     "turn's text (with --end)."),
    end: int | None = typer.Option(None, "--end", help="End offset (exclusive)."),
    values: bool = typer.Option(False, "--values", help="Explain every id-, date- and "
                                "amount-like value of the turn (the lineage annotator's values)."),
    method: list[str] = ev.method(),
    scorer: str = ev.scorer(),
    model: str = ev.model(),
    out: Path | None = options.out("Folder to write explain.json and the HTML pages into.",
                                   default=None),
    top_k: int = ev.top_k(),
    threshold: float = ev.threshold(),
    d_max: int = ev.d_max(),
    alpha: float = ev.alpha(),
    match_values: bool = ev.match_values(),
    max_tokens: int | None = ev.max_tokens(
        "a span past it is attributed in a context window of the conversation (earlier "
        "turns shortened)."),
    seed: int = ev.seed(),
    verify_edges: bool = ev.verify_edges(),
    device: str = ev.device(),
    dtype: str = ev.dtype(),
    scorer_settings: dict | None = None,
) -> None:
    """Explain a span of a transcript: its provenance graph over the turns, as a tree."""
    from mtcabench.explainer import (
        check_output_folder,
        explain_conversation,
        output_paths,
        render_trees,
        resolve_targets,
        write_explanation,
    )
    from mtcabench.io import check_outputs_are_not_inputs
    from mtcabench.transcripts import read_transcript

    settings = TraceSettings(
        search=ev.search_settings(top_k, threshold, d_max, alpha, match_values), max_tokens=max_tokens,
        seed=seed, scorers=scorer_settings or {}, verify_edges=verify_edges)
    conv = read_transcript(file, conversation, format)
    targets = resolve_targets(conv, turn=turn, span=span, start=start, end=end, values=values)
    if out is not None:  # before any model runs: a bad --out was refused only after it
        paths = output_paths(targets, method, out)
        check_outputs_are_not_inputs([file, *settings.input_paths()], paths)
        check_output_folder(out, paths)
    with needs_extra("the evaluator"):
        result = explain_conversation(conv, targets, model=model, scorer=scorer,
                                      methods=method, settings=settings, device=device,
                                      dtype=dtype)
    console = Console(soft_wrap=False)
    for tree in render_trees(result):
        console.print(tree)
    if out is not None:
        paths = write_explanation(result, out)
        err_console.print(f"wrote {shown(paths[0])} and {len(paths) - 1} HTML page(s) to {shown(out)}")
    err_console.print(f"{shown(conv.id)}: {len(targets)} span(s), {result.tokens} tokens, "
                      f"{result.forward_passes} forward pass(es)"
                      + (f" on {shown(result.model)} ({shown(result.scorer)})" if result.model else ""))


def register(app: typer.Typer) -> None:
    app.command("explain")(ev.with_scorer_options(explain))
