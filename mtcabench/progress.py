"""Progress bars for long work (rich), written to stderr so stdout stays clean for data."""

from __future__ import annotations

import contextlib
from typing import TypeVar
from collections.abc import Iterable, Iterator

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

T = TypeVar("T")

#: The console for messages and progress: stderr, so that piping stdout stays clean.
err_console = Console(stderr=True)


def make_progress(*extra_columns) -> Progress:
    """A progress display with the project's standard columns plus ``extra_columns``."""
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


@contextlib.contextmanager
def tracked(items: Iterable[T], description: str, total: int | None = None) -> Iterator[Iterator[T]]:
    """``with tracked(items, "ingest") as it:`` iterate ``it`` with a progress bar.

    A context manager rather than a bare generator, so that the bar is closed at once when
    the consumer fails (a suspended generator would only be closed by the garbage collector).
    """
    with make_progress() as progress:
        task = progress.add_task(description, total=total)

        def counted() -> Iterator[T]:
            for item in items:
                yield item
                progress.advance(task)

        yield counted()
