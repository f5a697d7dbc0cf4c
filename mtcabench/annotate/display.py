"""The live progress bar of an annotation run: items done, requests, tokens, cache hits, failures."""

from __future__ import annotations

import contextlib

from rich.progress import TextColumn

from mtcabench.annotate.llm.accounting import Accounting
from mtcabench.progress import Bar, progress_bar


class RunProgress:
    """A progress bar over conversations (or proposals) with the run's live counters."""

    def __init__(self, description: str, total: int | None, accounting: Accounting,
                 enabled: bool = True):
        self.accounting = accounting
        self._stack = contextlib.ExitStack()
        self._open = lambda: progress_bar(
            description, total, enabled=enabled, req=0, tok=0, hits=0, fail=0,
            columns=[TextColumn("req {task.fields[req]} · tok {task.fields[tok]} · "
                                "cache {task.fields[hits]} · fail {task.fields[fail]}")])
        self._bar: Bar | None = None

    def __enter__(self) -> RunProgress:
        self._bar = self._stack.enter_context(self._open())
        return self

    def __exit__(self, *exc) -> None:
        self.refresh()
        self._stack.close()

    def refresh(self) -> None:
        if self._bar is None:
            return
        a = self.accounting
        self._bar.update(req=a.requests, tok=a.spent_tokens, hits=a.cache_hits, fail=a.failures)

    def reset(self) -> None:
        """Start the bar over (a new pass over the same input, with the Batch API)."""
        self._bar.reset()
        self.refresh()

    def advance(self) -> None:
        self._bar.advance()
        self.refresh()

    def log(self, message: str) -> None:
        self._bar.log(message)
