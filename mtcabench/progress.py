"""Progress bars for long work (rich), written to stderr so stdout stays clean for data.

One way to have a bar or not: :func:`progress_bar` gives a :class:`Bar` whose methods do
nothing when progress is off (``enabled=False``, as ``--no-progress`` asks), so callers never
test whether they have one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from mtcabench.terminal import plain, shown

T = TypeVar("T")

#: The console for messages and progress: stderr, so that piping stdout stays clean.
err_console = Console(stderr=True)


def make_progress(*extra_columns: ProgressColumn) -> Progress:
    """A rich progress display with the project's standard columns plus ``extra_columns``."""
    return Progress(
        SpinnerColumn(),
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        *extra_columns,
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=False,
    )


class Bar:
    """One task on a progress display, or nothing at all when progress is off."""

    def __init__(self, progress: Progress | None, description: str, total: int | None,
                 **fields: Any):
        self._progress = progress
        self._total = total
        # the description is interpolated into the bar's markup: a file name is text
        self._task = (progress.add_task(shown(description), total=total, **fields)
                      if progress is not None else None)

    @property
    def enabled(self) -> bool:
        return self._progress is not None

    def advance(self, n: float = 1) -> None:
        if self._progress is not None:
            self._progress.advance(self._task, n)

    def update(self, **fields: Any) -> None:
        """Set the task's fields (the values extra columns show), or its ``total``."""
        if self._progress is not None:
            self._progress.update(self._task, **fields)

    def reset(self) -> None:
        """Start over (a new pass over the same input)."""
        if self._progress is not None:
            self._progress.reset(self._task, total=self._total)

    def log(self, message: str) -> None:
        """A line above the bar (printed when progress is off too: it is information); text
        from a server or a file, so printed as text, never as markup or control codes."""
        console = self._progress.console if self._progress is not None else err_console
        console.print(Text(plain(message)))


@contextlib.contextmanager
def progress_bar(description: str, total: int | None = None, *, enabled: bool = True,
                 columns: Iterable[ProgressColumn] = (), **fields: Any) -> Iterator[Bar]:
    """``with progress_bar("trace", total=n, enabled=show) as bar: ... bar.advance()``.

    The display stops when the block ends, also on an error, so a failure's message is not
    drawn over by a live bar.
    """
    if not enabled:
        yield Bar(None, description, total)
        return
    with make_progress(*columns) as progress:
        yield Bar(progress, description, total, **fields)


@contextlib.contextmanager
def tracked(items: Iterable[T], description: str, total: int | None = None,
            *, enabled: bool = True) -> Iterator[Iterator[T]]:
    """``with tracked(items, "ingest") as it:`` iterate ``it`` with a progress bar.

    A context manager rather than a bare generator, so that the bar is closed at once when
    the consumer fails (a suspended generator would only be closed by the garbage collector).
    """
    with progress_bar(description, total, enabled=enabled) as bar:

        def counted() -> Iterator[T]:
            for item in items:
                yield item
                bar.advance()

        yield counted()
