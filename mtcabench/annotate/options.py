"""The options of the annotation entry points: one typed object, its defaults defined once.

Every default here is read from where it is defined (the retry policy, the batch poll, the
phases, the combination) and the CLI reads its defaults from here, so that no default is
written twice. Imports stay light (no openai SDK): the CLI builds its help from this module.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from mtcabench.annotate.combine import ANNOTATORS, DEFAULT_MAIN, MAIN_CHOICES
from mtcabench.annotate.llm.accounting import Budget
from mtcabench.annotate.llm.batch import BATCH_DISCOUNT, POLL_S
from mtcabench.annotate.llm.policy import RetryPolicy
from mtcabench.annotate.llm.providers import Endpoint, EndpointRequest
from mtcabench.annotate.phases import (
    COMPACT_SETTINGS,
    DEFAULT_PHASES,
    ProposePhase,
    RequestSettings,
    Sampling,
    TranscriptLimits,
    VerifyPhase,
)
from mtcabench.errors import InputError

_RETRY = RetryPolicy()

#: The name of the response cache beside the outputs.
CACHE_NAME = "annotate-cache.sqlite"


@dataclass
class AnnotateOptions:
    """Settings of ``annotate_propose``, ``annotate_verify`` and ``annotate_run`` (the CLI
    flags of the same names). None means "the endpoint's default" where it says so."""

    # ---- endpoint
    base_url: str | None = None
    model: str | None = None
    #: A registered provider (``base-url``, ``azure``, ``openai``, ``embedded``, ...);
    #: None: the first that applies.
    provider: str | None = None
    response_format: str | None = None  # json_schema | json_object (default by endpoint)
    server_log: str | None = None  # where the embedded server logs (default: a temp file)
    # ---- requests
    concurrency: int | None = None  # default: the endpoint's (4; 1 on the embedded server)
    cache: str | Path | None = None  # default: annotate-cache.sqlite beside the outputs
    budget: Budget = field(default_factory=Budget)
    batch: bool = False
    batch_poll_s: float = POLL_S
    timeout_s: float = _RETRY.timeout_s  # a whole request: connect, send, every byte back
    max_attempts: int = _RETRY.max_attempts
    backoff_s: float = _RETRY.backoff_s  # base of the exponential backoff between retries
    # ---- prompts
    phases: Sequence[str] = DEFAULT_PHASES
    settings: RequestSettings | None = None  # default: by endpoint (compact when embedded)
    # Overrides of single settings (None: the endpoint's default settings' value).
    targets_per_request: int | None = None
    max_turn_chars: int | None = None
    max_prompt_chars: int | None = None
    propose_max_tokens: int | None = None
    verify_max_tokens: int | None = None
    temperature: float | None = None
    seed: int | None = None
    prompts_dir: str | Path | None = None
    propose_prompt: str | None = None  # a version such as propose-v1; default: newest
    verify_prompt: str | None = None
    #: The claims the claim phases ask about (JSON Lines: conversation_id, turn, text and an
    #: optional occurrence; the annotated set's pass-1 lines are such). None: the proposer's.
    targets: str | Path | None = None
    # ---- annotate_run only
    annotators: Sequence[str] | str = ANNOTATORS
    main: str = DEFAULT_MAIN  # whose graph is the main one when both annotators give one
    # ---- input and display
    limit: int | None = None  # only the first N conversations
    progress: bool = True
    console: Console | None = None

    @classmethod
    def of(cls, options: AnnotateOptions | None = None, **fields) -> AnnotateOptions:
        """``options`` (or the defaults) with ``fields`` replaced; TypeError on an unknown one."""
        return dataclasses.replace(options or cls(), **fields)

    # ------------------------------------------------------------------ derived settings
    def chosen_annotators(self) -> tuple[str, ...]:
        """The annotators of a run, in their canonical order; InputError for unknown ones."""
        names = self.annotators
        if isinstance(names, str):
            names = [a.strip() for a in names.split(",") if a.strip()]
        unknown = [a for a in names if a not in ANNOTATORS]
        if unknown or not names:
            raise InputError(f"--annotators takes a comma-separated list of "
                             f"{', '.join(ANNOTATORS)}; got {','.join(names) or 'nothing'}")
        if self.main not in MAIN_CHOICES:
            raise InputError(f"--main must be one of {', '.join(MAIN_CHOICES)}, "
                             f"not {self.main!r}")
        return tuple(a for a in ANNOTATORS if a in names)

    def phase_names(self) -> tuple[str, ...]:
        if isinstance(self.phases, str):
            return tuple(p.strip() for p in self.phases.split(",") if p.strip())
        return tuple(self.phases)

    def prompt_version(self, phase: str) -> str | None:
        """The template version asked for a phase (None: the newest)."""
        return {ProposePhase.name: self.propose_prompt,
                VerifyPhase.name: self.verify_prompt}.get(phase)

    def retry_policy(self) -> RetryPolicy:
        return dataclasses.replace(_RETRY, timeout_s=self.timeout_s,
                                   max_attempts=self.max_attempts, backoff_s=self.backoff_s)

    def endpoint_request(self) -> EndpointRequest:
        return EndpointRequest(base_url=self.base_url, model=self.model,
                               response_format=self.response_format, server_log=self.server_log)

    def run_budget(self) -> Budget:
        """The budget, with Batch API prices when the run uses it."""
        prices = self.budget.prices
        if self.batch and prices.discount == 1.0:
            prices = dataclasses.replace(prices, discount=BATCH_DISCOUNT)
        return dataclasses.replace(self.budget, prices=prices)

    def claim_targets(self, phases: Sequence[str]) -> dict | None:
        """The claim targets of ``--targets`` (read and checked before any server starts), or
        None; InputError when no phase of the chain reads them."""
        if self.targets is None:
            return None
        if "claim-propose" not in phases:
            raise InputError("--targets names the claims the claim-propose phase annotates; "
                             "run it with --phases claim-propose,claim-verify")
        from mtcabench.annotate.claims import read_claim_targets

        return read_claim_targets(self.targets)

    def request_settings(self, endpoint: Endpoint, claim_targets: dict | None = None
                         ) -> RequestSettings:
        """The endpoint's default settings (compact for a small local model), overridden;
        ``claim_targets`` from :meth:`claim_targets`."""
        base = self.settings or (COMPACT_SETTINGS if endpoint.compact else RequestSettings())

        def pick(value, default):
            return default if value is None else value

        s, lim = base.sampling, base.limits
        answer_limits = dict(base.max_tokens)
        for phase, tokens in ((ProposePhase.name, self.propose_max_tokens),
                              (VerifyPhase.name, self.verify_max_tokens)):
            if tokens is not None:
                answer_limits[phase] = tokens
        try:
            return dataclasses.replace(
                base,
                sampling=Sampling(temperature=pick(self.temperature, s.temperature),
                                  seed=pick(self.seed, s.seed)),
                limits=TranscriptLimits(max_turn_chars=pick(self.max_turn_chars,
                                                            lim.max_turn_chars),
                                        max_chars=pick(self.max_prompt_chars, lim.max_chars)),
                targets_per_request=pick(self.targets_per_request, base.targets_per_request),
                max_tokens=answer_limits,
                claim_targets=claim_targets if claim_targets is not None else
                base.claim_targets,
            )
        except ValueError as exc:
            raise InputError(f"request settings: {exc}") from None
