"""The options several commands share, declared once: their flags, their help, their defaults.

Each function returns the ``typer.Option`` of one shared option, used as a parameter's
default (the annotation gives the type, as for any typer option)::

    from mtcabench.cli import options

    def pull(
        conversations: Path = options.conversations(),
        out: Path = options.out("Reviewed decisions (JSONL), rewritten."),
        project: str = options.project(),
        no_progress: bool = options.no_progress(),
    ) -> None: ...

The flags are fixed here, so ``--out``/``-o`` or ``--benchmark``/``-b`` mean the same in every
command; a command passes what is its own: what the option holds (``help``), its ``default``
(required when left out) and any other ``typer.Option`` setting (``rich_help_panel``, ``min``,
``envvar``) as keywords. Nothing here imports a stage, so ``--help`` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

#: The Label Studio project of the review commands unless told otherwise: the value of
#: mtcabench.review.DEFAULT_PROJECT (a test checks), written here so that ``--help`` does not
#: import the review stage and its Label Studio client.
DEFAULT_PROJECT = "mtcabench review"


def out(help: str, default: Any = ..., **extra: Any) -> Any:
    """``--out`` / ``-o``: the file or folder a command writes."""
    return typer.Option(default, "--out", "-o", help=help, **extra)


def benchmark(help: str = "Benchmark folder, release folder or Hub id.", **extra: Any) -> Any:
    """``--benchmark`` / ``-b`` (required): a benchmark folder, release folder or Hub id."""
    return typer.Option(..., "--benchmark", "-b", help=help, **extra)


def conversations(help: str = "Conversations (JSONL).", default: Any = ..., *,
                  short: bool = False, **extra: Any) -> Any:
    """``--conversations`` (and ``-c`` where ``short``): a conversations file."""
    flags = ("--conversations", "-c") if short else ("--conversations",)
    return typer.Option(default, *flags, help=help, **extra)


def candidates(help: str = "Candidates (JSONL).", default: Any = ..., *, short: bool = True,
               **extra: Any) -> Any:
    """``--candidates`` / ``-c``: the annotation stage's candidates file."""
    flags = ("--candidates", "-c") if short else ("--candidates",)
    return typer.Option(default, *flags, help=help, **extra)


def project(**extra: Any) -> Any:
    """``--project`` / ``-p``: the Label Studio project, by title or numeric id."""
    return typer.Option(DEFAULT_PROJECT, "--project", "-p", help="Project title or numeric id "
                        "(created by push if the title is new).", **extra)


def label_studio_url(**extra: Any) -> Any:
    """``--url``: the Label Studio server; left out, the review stage reads $LABEL_STUDIO_URL."""
    return typer.Option(None, "--url", help="Label Studio URL [default: $LABEL_STUDIO_URL].",
                        **extra)


def label_studio_api_key(**extra: Any) -> Any:
    """``--api-key``: Label Studio's token; left out, the stage reads $LABEL_STUDIO_API_KEY."""
    return typer.Option(None, "--api-key", show_default=False, help="Label Studio API key "
                        "(legacy token) [default: $LABEL_STUDIO_API_KEY]; never printed.",
                        **extra)


def base_url(help: str, **extra: Any) -> Any:
    """``--base-url``: an OpenAI-compatible LLM endpoint (left out: the command's default)."""
    return typer.Option(None, "--base-url", help=help, **extra)


def llm_model(help: str, **extra: Any) -> Any:
    """``--model``: the LLM's model name at that endpoint."""
    return typer.Option(None, "--model", help=help, **extra)


def manifest(default: Path, **extra: Any) -> Any:
    """``--manifest``: the raw-sources manifest file."""
    return typer.Option(default, "--manifest", help="Manifest file.", **extra)


def no_progress(**extra: Any) -> Any:
    """``--no-progress``: no progress bar (pass ``enabled=not no_progress`` to progress_bar)."""
    return typer.Option(False, "--no-progress", help="No progress bar.", **extra)
