"""The registry of agent-log formats: each format is one module that registers a
:class:`LogFormat`, declaring in one place how to recognise and read its whole files and,
where the format has them, its single messages (what an agent hands the online Tracer).

The built-in formats are listed in :data:`BUILT_IN` (name -> the module that registers it),
imported when first asked for; a format of your own is one module calling
:func:`register_format`. Detection asks every format how sure it is of a file's shape
(:func:`detect`) or of one message's (:func:`detect_message`), by the same rule.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mtcabench.errors import InputError
from mtcabench.model import Conversation, Turn
from mtcabench.registry import Registry
from mtcabench.transcripts._source import Source

if TYPE_CHECKING:
    from mtcabench.transcripts._turns import TurnBuilder

#: How sure a format is that a value is its own: its markers are there; the shape fits but
#: carries no marker of any format (plain user/assistant text reads alike in all); no.
SURE, PLAUSIBLE, NO = 2, 1, 0


@dataclass(frozen=True)
class LogFormat:
    """One format of agent log: how to recognise and read its files and its messages."""

    name: str  # what --format takes
    title: str  # how help texts and errors name it
    shape: str  # one line on what a file of it looks like (--help, docs)
    sniff: Callable[[Source], int]  # SURE, PLAUSIBLE or NO
    read: Callable[[Source], list[Conversation]]  # every conversation of the log, in order
    order: int = 50  # place in listings, and among plausible formats (OpenAI chat first)
    #: How sure the format is that one message, as an agent loop holds it, is its own (SURE,
    #: PLAUSIBLE, NO); None: the format has no messages of its own (its files hold runs or
    #: records whose messages are another format's).
    sniff_message: Callable[[Any], int] | None = None
    #: The turns one such message gives, added to the builder (``here`` names it in errors);
    #: a message may give several turns or none (reasoning only).
    read_message: Callable[[TurnBuilder, Any, str], list[Turn]] | None = None


#: The built-in formats, in the order they are listed: name -> the module that registers it.
BUILT_IN = {
    "openai-chat": "mtcabench.transcripts._chat",
    "openai-responses": "mtcabench.transcripts._responses",
    "anthropic-messages": "mtcabench.transcripts._anthropic",
    "otel-genai": "mtcabench.transcripts._otel",
    "inspect-ai": "mtcabench.transcripts._inspect",
    "taubench": "mtcabench.transcripts._taubench",
    "tau2": "mtcabench.transcripts._tau2",
    "confetti": "mtcabench.transcripts._confetti",
    "conversations": "mtcabench.transcripts._records",
}

#: Every log format by name (``--format``).
FORMATS: Registry[LogFormat] = Registry("log format", lazy=BUILT_IN)


def register_format(fmt: LogFormat) -> LogFormat:
    """Add a format (the registry's one rule: the same one again is harmless, another under
    a taken name is an error)."""
    return FORMATS.register(fmt)


def formats() -> list[LogFormat]:
    """Every format, built-in ones imported, by ``order`` (registration order on a tie)."""
    return sorted(FORMATS.load_all().values(), key=lambda f: f.order)


def format_names() -> list[str]:
    """The formats' names, in listing order."""
    return [f.name for f in formats()]


def formats_help() -> str:
    """The formats, one sentence each, for --help texts."""
    return "; ".join(f"{f.name}: {f.title}, {f.shape}" for f in formats())


def get_format(name: str) -> LogFormat:
    if name not in FORMATS:
        raise InputError(f"unknown log format {name!r}; choose one of "
                         f"{', '.join(format_names())}")
    return FORMATS.get(name)


def detect(source: Source) -> LogFormat:
    """The format of ``source`` from its shape: the one sure format; else the first plausible
    one in listing order (OpenAI chat first); several sure ones or none is an InputError
    that lists the formats checked."""
    known = formats()
    scores = [(fmt, fmt.sniff(source)) for fmt in known]
    sure = [f for f, s in scores if s == SURE]
    if len(sure) == 1:
        return sure[0]
    if len(sure) > 1:
        names = " and ".join(f.title for f in sure)
        raise InputError(f"{source.label}: ambiguous agent log: it has the marks of {names}; "
                         f"choose one with --format ({', '.join(f.name for f in sure)})")
    plausible = [f for f, s in scores if s == PLAUSIBLE]
    if plausible:
        return plausible[0]
    if isinstance(source.value, list) and not source.value:
        raise InputError(f"{source.label}: an empty list; expected an agent log with at least "
                         "one message")
    checked = ", ".join(f"{f.title} ({f.name})" for f in known)
    raise InputError(f"{source.label}: not a transcript of a known format (checked: {checked}); "
                     "force one with --format NAME to see what does not fit")


def detect_message(message: Any, here: str) -> LogFormat:
    """The format of one message from its own shape, by :func:`detect`'s rule: the one sure
    format; else the first plausible one (OpenAI chat: plain text messages read alike in
    every format); the marks of two formats, or of none, is an InputError naming ``here``."""
    scores = [(f, f.sniff_message(message)) for f in formats() if f.sniff_message is not None]
    sure = [f for f, s in scores if s == SURE]
    if len(sure) == 1:
        return sure[0]
    if len(sure) > 1:
        raise InputError(f"{here}: ambiguous message: it has the marks of "
                         f"{' and '.join(f.title for f in sure)}; give it in one format")
    plausible = [f for f, s in scores if s == PLAUSIBLE]
    if plausible:
        return plausible[0]
    raise InputError(f"{here}: expected a message object or a list of Responses items, got "
                     f"{type(message).__name__}")
