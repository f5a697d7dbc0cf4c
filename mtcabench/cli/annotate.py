"""`mtcabench annotate`: propose provenance graphs (LLM two-phase, lineage).

The options the three LLM commands share are declared once, as the parameters of
:func:`_shared` (named after the fields of :class:`~mtcabench.annotate.AnnotateOptions`, their
defaults read from it); :class:`_AnnotateCommand` adds them to each command and hands the
command one ``AnnotateOptions`` built from them.
"""

from __future__ import annotations

import functools
from pathlib import Path

import typer
from typer.core import TyperCommand

from mtcabench.annotate.llm.accounting import Budget, Prices
from mtcabench.annotate.llm.providers import (
    DEFAULT_CONCURRENCY,
    DEFAULT_OPENAI_MODEL,
    EmbeddedProvider,
    provider_names,
)
from mtcabench.annotate.options import CACHE_NAME, AnnotateOptions
from mtcabench.annotate.phases import (
    COMPACT_SETTINGS,
    ProposePhase,
    RequestSettings,
    Sampling,
    VerifyPhase,
)
from mtcabench.cli import annotate_claims, annotate_counterfactual, annotate_lineage
from mtcabench.errors import ServiceError
from mtcabench.services.models import model_names

group = typer.Typer(help="Propose target spans and provenance graphs (LLM, lineage).",
                    no_args_is_help=True)

annotate_lineage.register(group)
annotate_counterfactual.register(group)
annotate_claims.register(group)

_ENDPOINT = "Endpoint"
_LIMITS = "Limits and cost"
#: The defaults, read (never rewritten) by the options below.
D = AnnotateOptions()
_FULL, _COMPACT = RequestSettings(), COMPACT_SETTINGS


def _by_endpoint(full, compact) -> str:
    return f"default {full}; {compact} on the embedded server"


def _shared(
    base_url: str | None = typer.Option(
        D.base_url, "--base-url", help="OpenAI-compatible API base URL, e.g. "
        "http://127.0.0.1:8080/v1. Default: Azure OpenAI if AZURE_OPENAI_ENDPOINT is set, "
        "else OpenAI if OPENAI_API_KEY is set, else the embedded llama.cpp server.",
        rich_help_panel=_ENDPOINT),
    model: str | None = typer.Option(
        D.model, "--model", help=f"Model name (needed with --base-url; the deployment on Azure; "
        f"{DEFAULT_OPENAI_MODEL} on OpenAI; on the embedded server a packaged model: "
        f"{', '.join(model_names())}).", rich_help_panel=_ENDPOINT),
    provider: str | None = typer.Option(
        D.provider, "--provider", help=f"Provider: {', '.join(provider_names())}. Default: the "
        "first that applies, in that order.", rich_help_panel=_ENDPOINT),
    response_format: str | None = typer.Option(
        D.response_format, "--response-format", help="Structured output flavour: json_schema "
        "(OpenAI) or json_object (llama.cpp, schema inside). Default: by endpoint.",
        rich_help_panel=_ENDPOINT),
    concurrency: int | None = typer.Option(
        D.concurrency, "--concurrency", min=1, max=256, help="Requests in flight at most ("
        + _by_endpoint(DEFAULT_CONCURRENCY, EmbeddedProvider.concurrency) + ")."),
    cache: Path | None = typer.Option(
        D.cache, "--cache", help=f"Response cache file (SQLite). Default: {CACHE_NAME} beside "
        "the outputs."),
    max_tokens: int | None = typer.Option(
        D.budget.max_tokens, "--max-tokens", min=1, help="Stop before this many tokens are "
        "spent.", rich_help_panel=_LIMITS),
    max_cost: float | None = typer.Option(
        D.budget.max_cost, "--max-cost", min=0, help="Stop before this cost in USD (needs "
        "prices).", rich_help_panel=_LIMITS),
    price_input: float = typer.Option(
        D.budget.prices.input_per_m, "--price-input", min=0, help="USD per 1M prompt tokens.",
        rich_help_panel=_LIMITS),
    price_output: float = typer.Option(
        D.budget.prices.output_per_m, "--price-output", min=0, help="USD per 1M completion "
        "tokens.", rich_help_panel=_LIMITS),
    batch: bool = typer.Option(D.batch, "--batch", help="Use the OpenAI Batch API (half price, "
                               "answers within 24 h)."),
    batch_poll_s: float = typer.Option(D.batch_poll_s, "--batch-poll", min=0.01,
                                       help="Seconds between batch status polls."),
    limit: int | None = typer.Option(D.limit, "--limit", min=1,
                                     help="Only the first N conversations."),
    phases: str = typer.Option(",".join(D.phases), "--phases", help="The LLM phases in order, "
                               "comma-separated (propose runs the first, verify the last)."),
    prompts_dir: Path | None = typer.Option(D.prompts_dir, "--prompts-dir",
                                            help="Folder of prompt templates."),
    propose_prompt: str | None = typer.Option(D.propose_prompt, "--propose-prompt",
                                              help="Template version, e.g. propose-v1."),
    verify_prompt: str | None = typer.Option(D.verify_prompt, "--verify-prompt",
                                             help="Template version, e.g. verify-v1."),
    targets: Path | None = typer.Option(
        D.targets, "--targets", help="The claims to annotate with --phases claim-propose,"
        "claim-verify (JSONL: conversation_id, turn, text, optional occurrence; the annotated "
        "set's pass-1 lines are such). Default: the claim proposer's."),
    timeout_s: float = typer.Option(
        D.timeout_s, "--timeout", min=0.1, help="Seconds per request, the whole of it: "
        "connecting, sending and every byte of the answer (then retried)."),
    max_attempts: int = typer.Option(D.max_attempts, "--max-attempts", min=1,
                                     help="Tries per request."),
    backoff_s: float = typer.Option(D.backoff_s, "--backoff", min=0, help="Base seconds of the "
                                    "exponential backoff (with jitter) between retries."),
    targets_per_request: int | None = typer.Option(
        D.targets_per_request, "--targets-per-request", min=1, help="Assistant turns per "
        "propose request (" + _by_endpoint(_FULL.targets_per_request,
                                           _COMPACT.targets_per_request) + ")."),
    max_turn_chars: int | None = typer.Option(
        D.max_turn_chars, "--max-turn-chars", min=100, help="Longer turns are shortened in "
        "prompts, with a note (" + _by_endpoint(_FULL.limits.max_turn_chars,
                                                _COMPACT.limits.max_turn_chars) + ")."),
    max_prompt_chars: int | None = typer.Option(
        D.max_prompt_chars, "--max-prompt-chars", min=100, help="Transcript budget; the oldest "
        "turns are left out beyond it, with a note (" + _by_endpoint(
            _FULL.limits.max_chars, _COMPACT.limits.max_chars) + ")."),
    propose_max_tokens: int | None = typer.Option(
        D.propose_max_tokens, "--propose-max-tokens", min=16, help="Answer limit of a propose "
        "request (" + _by_endpoint(ProposePhase.max_tokens, ProposePhase.compact_max_tokens)
        + ")."),
    verify_max_tokens: int | None = typer.Option(
        D.verify_max_tokens, "--verify-max-tokens", min=16, help="Answer limit of a verify "
        "request (" + _by_endpoint(VerifyPhase.max_tokens, VerifyPhase.compact_max_tokens)
        + ")."),
    temperature: float | None = typer.Option(
        D.temperature, "--temperature", min=0,
        help=f"Sampling temperature (default {Sampling().temperature:g})."),
    seed: int | None = typer.Option(D.seed, "--seed",
                                    help=f"Sampling seed (default {Sampling().seed})."),
    no_progress: bool = typer.Option(not D.progress, "--no-progress", help="No progress bar."),
) -> AnnotateOptions:
    """The options of one command (the parameters above are named after the fields)."""
    values = dict(locals())
    try:
        budget = Budget(max_tokens=values.pop("max_tokens"), max_cost=values.pop("max_cost"),
                        prices=Prices(values.pop("price_input"), values.pop("price_output")))
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    values["progress"] = not values.pop("no_progress")
    return AnnotateOptions(budget=budget, **values)


@functools.cache
def _shared_names() -> tuple[str, ...]:
    return tuple(p.name for p in _shared_params())


def _shared_params() -> list:
    """The click parameters of :func:`_shared`, built by typer from its signature."""
    holder = typer.Typer(add_completion=False)
    holder.command()(_shared)
    return list(typer.main.get_command(holder).params)


class _AnnotateCommand(TyperCommand):
    """A command with the shared options added after its own; they reach it as one
    AnnotateOptions in ``ctx.meta``."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.params.extend(_shared_params())

    def invoke(self, ctx):
        values = {name: ctx.params.pop(name) for name in _shared_names()}
        ctx.meta[__name__] = _shared(**values)
        return super().invoke(ctx)


def _options(ctx: typer.Context, **run_only) -> AnnotateOptions:
    return AnnotateOptions.of(ctx.meta[__name__], **run_only)


def _check_failures(summary) -> None:
    failed = summary.not_answered.get("failed", 0)
    if failed:
        raise ServiceError(f"{failed} request(s) failed after every retry; finished work is "
                           "kept, rerun the same command to retry them")


@group.command("propose", cls=_AnnotateCommand)
def propose(
    ctx: typer.Context,
    conversations: Path = typer.Argument(..., help="Conversations file (JSONL)."),
    out: Path = typer.Option(..., "--out", "-o", help="Proposals file to write (JSONL)."),
) -> None:
    """Phase 1: choose target spans and propose their provenance graphs."""
    from mtcabench.annotate import annotate_propose

    _check_failures(annotate_propose(conversations, out, _options(ctx)))


@group.command("verify", cls=_AnnotateCommand)
def verify(
    ctx: typer.Context,
    conversations: Path = typer.Argument(..., help="Conversations file (JSONL)."),
    proposals: Path = typer.Argument(..., help="Proposals file from `annotate propose`."),
    out: Path = typer.Option(..., "--out", "-o", help="Candidates file to write (JSONL)."),
) -> None:
    """Phase 2: check each proposed graph, correct it, and write candidates."""
    from mtcabench.annotate import annotate_verify

    _check_failures(annotate_verify(conversations, proposals, out, _options(ctx)))


@group.command("run", cls=_AnnotateCommand)
def run(
    ctx: typer.Context,
    conversations: Path = typer.Argument(..., help="Conversations file (JSONL)."),
    out_dir: Path = typer.Option(..., "--out-dir", "-o", help="Folder for proposals.jsonl, "
                                 "candidates.jsonl, the cache and summary.json."),
    annotators: str = typer.Option(",".join(D.annotators), "--annotators",
                                   help="Comma-separated: lineage, llm."),
    main: str = typer.Option(D.main, "--main", help="Whose graph is the main one when both "
                             "annotators propose the same span: lineage or llm."),
) -> None:
    """Both phases and the lineage annotator, combined into one candidate per span."""
    from mtcabench.annotate import annotate_run

    _check_failures(annotate_run(conversations, out_dir,
                                 _options(ctx, annotators=annotators, main=main)))


def register(app: typer.Typer) -> None:
    app.add_typer(group, name="annotate")
