"""Counting what a run spends and produces, and the budget guard that stops it in time.

The counters are shared by the request threads (hence the lock). The budget guard reserves
an estimate for each request before it is sent (prompt characters / 4 plus the completion
limit) and refuses a request whose worst case would cross the token or cost limit, so a run
stops *before* the limit, never after it.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Prices:
    """Prices in US dollars per million tokens (0 when unknown: cost is then not tracked)."""

    input_per_m: float = 0.0
    output_per_m: float = 0.0
    #: Multiplier on both prices (0.5 for the OpenAI Batch API).
    discount: float = 1.0

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return self.discount * (prompt_tokens * self.input_per_m
                                + completion_tokens * self.output_per_m) / 1e6


@dataclass
class Budget:
    """Limits on tokens and cost for one invocation; None means no limit."""

    max_tokens: int | None = None
    max_cost: float | None = None
    prices: Prices = field(default_factory=Prices)

    def __post_init__(self) -> None:
        if self.max_cost is not None and not (self.prices.input_per_m or self.prices.output_per_m):
            raise ValueError("a cost limit needs prices (--price-input/--price-output per 1M tokens)")


class Accounting:
    """Thread-safe counters of one run, plus the budget guard."""

    def __init__(self, budget: Budget | None = None):
        self.budget = budget or Budget()
        self._lock = threading.Lock()
        self.started = time.monotonic()
        self.requests = 0  # HTTP chat requests answered (not cache hits)
        self.cache_hits = 0
        self.failures = 0  # requests given up after retries
        self.retries: Counter[str] = Counter()
        self.failure_reasons: Counter[str] = Counter()
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self._reserved_tokens = 0
        self._reserved_cost = 0.0
        self.stopped_by_budget = False

    # ------------------------------------------------------------------ budget
    def reserve(self, prompt_chars: int, max_completion: int) -> tuple[int, float] | None:
        """Reserve a request's worst case; None (and the run should stop) if it would not fit."""
        est_prompt = prompt_chars // 4 + 16
        tokens = est_prompt + max_completion
        cost = self.budget.prices.cost(est_prompt, max_completion)
        with self._lock:
            b = self.budget
            if b.max_tokens is not None and (
                    self.spent_tokens + self._reserved_tokens + tokens > b.max_tokens):
                self.stopped_by_budget = True
                return None
            if b.max_cost is not None and (self.cost + self._reserved_cost + cost > b.max_cost):
                self.stopped_by_budget = True
                return None
            self._reserved_tokens += tokens
            self._reserved_cost += cost
            return tokens, cost

    def release(self, reservation: tuple[int, float]) -> None:
        with self._lock:
            self._reserved_tokens -= reservation[0]
            self._reserved_cost -= reservation[1]

    def clear_reservations(self) -> None:
        """Drop every reservation (after a Batch API round, whose real usage is now counted)."""
        with self._lock:
            self._reserved_tokens = 0
            self._reserved_cost = 0.0

    # ------------------------------------------------------------------ counting
    def answered(self, prompt_tokens: int, completion_tokens: int) -> None:
        with self._lock:
            self.requests += 1
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens

    def hit(self) -> None:
        with self._lock:
            self.cache_hits += 1

    def retried(self, reason: str) -> None:
        with self._lock:
            self.retries[reason] += 1

    def failed(self, reason: str) -> None:
        with self._lock:
            self.failures += 1
            self.failure_reasons[reason] += 1

    @property
    def spent_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def cost(self) -> float:
        return self.budget.prices.cost(self.prompt_tokens, self.completion_tokens)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started
