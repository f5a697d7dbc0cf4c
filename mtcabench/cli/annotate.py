"""`mtcabench annotate`: propose provenance graphs (LLM two-phase, lineage)."""

from __future__ import annotations

import inspect
from pathlib import Path

import typer

from mtcabench.cli import annotate_lineage
from mtcabench.errors import ServiceError

group = typer.Typer(help="Propose target spans and provenance graphs (LLM, lineage).",
                    no_args_is_help=True)

annotate_lineage.register(group)

_ENDPOINT = "Endpoint"
_LIMITS = "Limits and cost"


def _options(
    base_url: str | None = typer.Option(
        None, "--base-url", help="OpenAI-compatible API base URL, e.g. http://127.0.0.1:8080/v1. "
        "Default: OpenAI if OPENAI_API_KEY is set, else the embedded llama.cpp server.",
        rich_help_panel=_ENDPOINT),
    model: str | None = typer.Option(None, "--model", help="Model name (needed with "
                                        "--base-url).", rich_help_panel=_ENDPOINT),
    response_format: str | None = typer.Option(
        None, "--response-format", help="Structured output flavour: json_schema (OpenAI) or "
        "json_object (llama.cpp, schema inside). Default: by endpoint.",
        rich_help_panel=_ENDPOINT),
    concurrency: int | None = typer.Option(
        None, "--concurrency", min=1, max=256,
        help="Requests in flight at most (default 4; 1 on the embedded server)."),
    cache: Path | None = typer.Option(None, "--cache", help="Response cache file (SQLite). "
                                         "Default: annotate-cache.sqlite beside the outputs."),
    max_tokens: int | None = typer.Option(None, "--max-tokens", min=1, help="Stop before "
                                             "this many tokens are spent.",
                                             rich_help_panel=_LIMITS),
    max_cost: float | None = typer.Option(None, "--max-cost", min=0, help="Stop before this "
                                             "cost in USD (needs prices).",
                                             rich_help_panel=_LIMITS),
    price_input: float = typer.Option(0.0, "--price-input", min=0, help="USD per 1M prompt "
                                      "tokens.", rich_help_panel=_LIMITS),
    price_output: float = typer.Option(0.0, "--price-output", min=0, help="USD per 1M "
                                       "completion tokens.", rich_help_panel=_LIMITS),
    batch: bool = typer.Option(False, "--batch", help="Use the OpenAI Batch API (half price, "
                               "answers within 24 h)."),
    batch_poll: float = typer.Option(30.0, "--batch-poll", min=0.01,
                                     help="Seconds between batch status polls."),
    limit: int | None = typer.Option(None, "--limit", min=1,
                                        help="Only the first N conversations."),
    prompts_dir: Path | None = typer.Option(None, "--prompts-dir",
                                               help="Folder of prompt templates."),
    propose_prompt: str | None = typer.Option(None, "--propose-prompt",
                                                 help="Template version, e.g. propose-v1."),
    verify_prompt: str | None = typer.Option(None, "--verify-prompt",
                                                help="Template version, e.g. verify-v1."),
    timeout: float = typer.Option(300.0, "--timeout", min=0.1, help="Seconds per request."),
    max_attempts: int = typer.Option(6, "--max-attempts", min=1, help="Tries per request."),
    backoff: float = typer.Option(1.0, "--backoff", min=0, help="Base seconds of the "
                                  "exponential backoff (with jitter) between retries."),
    targets_per_request: int | None = typer.Option(
        None, "--targets-per-request", min=1, help="Assistant turns per propose request "
        "(default 3; 2 on the embedded server)."),
    max_turn_chars: int | None = typer.Option(
        None, "--max-turn-chars", min=100, help="Longer turns are shortened in prompts, with a "
        "note (default 1500; 700 embedded)."),
    max_prompt_chars: int | None = typer.Option(
        None, "--max-prompt-chars", min=100, help="Transcript budget; the oldest turns are left "
        "out beyond it, with a note (default 12000; 5000 embedded)."),
    propose_max_tokens: int | None = typer.Option(None, "--propose-max-tokens", min=16,
                                                     help="Answer limit of a propose request."),
    verify_max_tokens: int | None = typer.Option(None, "--verify-max-tokens", min=16,
                                                    help="Answer limit of a verify request."),
    temperature: float | None = typer.Option(None, "--temperature", min=0,
                                                help="Sampling temperature (default 0)."),
    seed: int | None = typer.Option(None, "--seed", help="Sampling seed (default 0)."),
    no_progress: bool = typer.Option(False, "--no-progress", help="No progress bar."),
) -> dict:
    from mtcabench.annotate import Budget, Prices

    try:
        budget = Budget(max_tokens=max_tokens, max_cost=max_cost,
                        prices=Prices(price_input, price_output, 0.5 if batch else 1.0))
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    return dict(base_url=base_url, model=model, response_format=response_format,
                concurrency=concurrency, cache=cache, budget=budget, batch=batch,
                batch_poll_s=batch_poll, limit=limit, prompts_dir=prompts_dir,
                propose_prompt=propose_prompt, verify_prompt=verify_prompt, timeout_s=timeout,
                max_attempts=max_attempts, backoff_s=backoff, progress=not no_progress,
                targets_per_request=targets_per_request, max_turn_chars=max_turn_chars,
                max_prompt_chars=max_prompt_chars, propose_max_tokens=propose_max_tokens,
                verify_max_tokens=verify_max_tokens, temperature=temperature, seed=seed)


def _check_failures(summary) -> None:
    failed = summary.not_answered.get("failed", 0)
    if failed:
        raise ServiceError(f"{failed} request(s) failed after every retry; finished work is "
                           "kept, rerun the same command to retry them")


def _with_options(fn):
    """Give a command the shared options (typer reads them from the signature)."""
    own = list(inspect.signature(fn).parameters.values())
    shared = list(inspect.signature(_options).parameters.values())
    fn.__signature__ = inspect.Signature(own[:-1] + shared)

    def wrapper(*args, **kwargs):
        opts = _options(**{p.name: kwargs.pop(p.name) for p in shared})
        return fn(*args, **kwargs, options=opts)

    wrapper.__signature__ = fn.__signature__
    # typer resolves the (string) annotations with get_type_hints on the wrapper.
    wrapper.__annotations__ = {**_options.__annotations__, **fn.__annotations__}
    wrapper.__annotations__.pop("options", None)
    wrapper.__doc__ = fn.__doc__
    wrapper.__name__ = fn.__name__
    return wrapper


@group.command("propose")
@_with_options
def propose(
    conversations: Path = typer.Argument(..., help="Conversations file (JSONL)."),
    out: Path = typer.Option(..., "--out", "-o", help="Proposals file to write (JSONL)."),
    options: dict | None = None,
) -> None:
    """Phase 1: choose target spans and propose their provenance graphs."""
    from mtcabench.annotate import annotate_propose

    _check_failures(annotate_propose(conversations, out, **options))


@group.command("verify")
@_with_options
def verify(
    conversations: Path = typer.Argument(..., help="Conversations file (JSONL)."),
    proposals: Path = typer.Argument(..., help="Proposals file from `annotate propose`."),
    out: Path = typer.Option(..., "--out", "-o", help="Candidates file to write (JSONL)."),
    options: dict | None = None,
) -> None:
    """Phase 2: check each proposed graph, correct it, and write candidates."""
    from mtcabench.annotate import annotate_verify

    _check_failures(annotate_verify(conversations, proposals, out, **options))


@group.command("run")
@_with_options
def run(
    conversations: Path = typer.Argument(..., help="Conversations file (JSONL)."),
    out_dir: Path = typer.Option(..., "--out-dir", "-o", help="Folder for proposals.jsonl, "
                                 "candidates.jsonl, the cache and summary.json."),
    annotators: str = typer.Option("lineage,llm", "--annotators",
                                   help="Comma-separated: lineage, llm."),
    main: str = typer.Option("lineage", "--main", help="Whose graph is the main one when both "
                             "annotators propose the same span: lineage or llm."),
    options: dict | None = None,
) -> None:
    """Both phases and the lineage annotator, combined into one candidate per span."""
    from mtcabench.annotate import annotate_run

    _check_failures(annotate_run(conversations, out_dir, annotators=annotators, main=main,
                                 **options))


def register(app: typer.Typer) -> None:
    app.add_typer(group, name="annotate")
