"""`mtcabench demo`: the main job end to end on the bundled sample."""

from __future__ import annotations

from pathlib import Path

import typer

from mtcabench.cli import _evaluator as ev
from mtcabench.cli import options


def demo(
    out: Path = options.out("Output folder.", Path("runs/sample")),
    base_url: str | None = options.base_url(
        "OpenAI-compatible LLM endpoint (default: OpenAI when OPENAI_API_KEY is set, else an "
        "embedded llama.cpp server with SmolLM2)."),
    model: str | None = options.llm_model("LLM model name for annotation."),
    annotators: str = typer.Option(
        "lineage,llm", "--annotators", help="Annotators, comma-separated: lineage (model-free) "
        "and llm (two phases). `--annotators lineage` runs without any LLM server, for machines "
        "where llama.cpp cannot be built."),
    scorer: str = ev.scorer("Base scorer for tracing"),
    serve: bool = typer.Option(False, "--serve", help="Keep the review server open at the end "
                               "(until Ctrl-C)."),
    step: list[str] | None = typer.Option(
        None, "--step", help="Run only these steps (repeatable; ingest always runs): annotate, "
        "review, release, trace, score."),
    scorer_settings: dict | None = None,
) -> None:
    """Run the whole pipeline on raw/sample/ with embedded defaults (no keys or URLs needed).

    Ingest, annotate (lineage + LLM, or lineage alone with --annotators lineage), push to Label Studio and print the reviewer's address,
    accept automatically (marked as such), build the release, trace with Tokengeist and flat,
    and print the score table. Label Studio is embedded unless LABEL_STUDIO_URL and
    LABEL_STUDIO_API_KEY are set.
    """
    from mtcabench.demo import run_demo

    run_demo(out, base_url=base_url, model=model, annotators=annotators, scorer=scorer,
             scorer_settings=scorer_settings, serve=serve, steps=step)


def register(app: typer.Typer) -> None:
    app.command("demo")(ev.with_scorer_options(demo))
