"""The live progress bar of an annotation run: items done, requests, tokens, cache hits, failures."""

from __future__ import annotations

from rich.progress import TextColumn

from mtcabench.annotate.accounting import Accounting
from mtcabench.progress import make_progress


class RunProgress:
    """A rich progress bar over conversations (or proposals) with the run's live counters."""

    def __init__(self, description: str, total: int | None, accounting: Accounting,
                 enabled: bool = True):
        self.accounting = accounting
        self.enabled = enabled
        self._progress = make_progress(TextColumn(
            "req {task.fields[req]} · tok {task.fields[tok]} · cache {task.fields[hits]} · "
            "fail {task.fields[fail]}")) if enabled else None
        self._description = description
        self._total = total
        self._task = None

    def __enter__(self) -> RunProgress:
        if self._progress is not None:
            self._progress.start()
            self._task = self._progress.add_task(self._description, total=self._total,
                                                 req=0, tok=0, hits=0, fail=0)
        return self

    def __exit__(self, *exc) -> None:
        if self._progress is not None:
            self.refresh()
            self._progress.stop()

    def refresh(self) -> None:
        if self._progress is None:
            return
        a = self.accounting
        self._progress.update(self._task, req=a.requests, tok=a.spent_tokens,
                              hits=a.cache_hits, fail=a.failures)

    def reset(self) -> None:
        """Start the bar over (a new pass over the same input, with the Batch API)."""
        if self._progress is not None:
            self._progress.reset(self._task, total=self._total)
            self.refresh()

    def advance(self) -> None:
        if self._progress is not None:
            self._progress.advance(self._task)
            self.refresh()

    def log(self, message: str) -> None:
        if self._progress is not None:
            self._progress.console.print(message)
