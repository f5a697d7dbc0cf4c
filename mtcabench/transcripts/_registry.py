"""The registry of agent-log formats: each format is one module that registers a
:class:`LogFormat`; detection asks every format how sure it is of a file's shape."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mtcabench.errors import InputError
from mtcabench.model import Conversation
from mtcabench.transcripts._source import Source

#: How sure a format is that a value is its own: its markers are there; the shape fits but
#: carries no marker of any format (plain user/assistant text reads alike in all); no.
SURE, PLAUSIBLE, NO = 2, 1, 0


@dataclass(frozen=True)
class LogFormat:
    """One format of agent log: how to recognise it and how to read its conversations."""

    name: str  # what --format takes
    title: str  # how help texts and errors name it
    shape: str  # one line on what a file of it looks like (--help, docs)
    sniff: Callable[[Source], int]  # SURE, PLAUSIBLE or NO
    read: Callable[[Source], list[Conversation]]  # every conversation of the log, in order
    order: int = 50  # place in listings, and among plausible formats (OpenAI chat first)


FORMATS: dict[str, LogFormat] = {}


def register_format(fmt: LogFormat) -> LogFormat:
    if fmt.name in FORMATS:
        raise ValueError(f"log format {fmt.name!r} registered twice")
    ordered = sorted([*FORMATS.values(), fmt], key=lambda f: f.order)
    FORMATS.clear()
    FORMATS.update((f.name, f) for f in ordered)
    return fmt


def formats_help() -> str:
    """The formats, one sentence each, for --help texts."""
    return "; ".join(f"{f.name}: {f.title}, {f.shape}" for f in FORMATS.values())


def get_format(name: str) -> LogFormat:
    if name not in FORMATS:
        raise InputError(f"unknown log format {name!r}; choose one of {', '.join(FORMATS)}")
    return FORMATS[name]


def detect(source: Source) -> LogFormat:
    """The format of ``source`` from its shape: the one sure format; else the first plausible
    one in registry order (OpenAI chat first); several sure ones or none is an InputError
    that lists the formats checked."""
    scores = {name: fmt.sniff(source) for name, fmt in FORMATS.items()}
    sure = [FORMATS[n] for n, s in scores.items() if s == SURE]
    if len(sure) == 1:
        return sure[0]
    if len(sure) > 1:
        names = " and ".join(f.title for f in sure)
        raise InputError(f"{source.label}: ambiguous agent log: it has the marks of {names}; "
                         f"choose one with --format ({', '.join(f.name for f in sure)})")
    plausible = [FORMATS[n] for n, s in scores.items() if s == PLAUSIBLE]
    if plausible:
        return plausible[0]
    if isinstance(source.value, list) and not source.value:
        raise InputError(f"{source.label}: an empty list; expected an agent log with at least "
                         "one message")
    checked = ", ".join(f"{f.title} ({f.name})" for f in FORMATS.values())
    raise InputError(f"{source.label}: not a transcript of a known format (checked: {checked}); "
                     "force one with --format NAME to see what does not fit")
