"""Reading a log file (or a Python value) in its format, and choosing one of its conversations."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mtcabench.errors import InputError
from mtcabench.io import ascii_int
from mtcabench.model import Conversation
from mtcabench.transcripts._registry import LogFormat, detect, get_format
from mtcabench.transcripts._source import Source, load


def format_of(source: Source, format: str | None = None) -> LogFormat:
    """The format ``format`` names, or the one detected from the shape of ``source``."""
    return get_format(format) if format is not None else detect(source)


def read_conversations(path: str | Path, format: str | None = None) -> list[Conversation]:
    """Every conversation of a log file, in the order of the log; ``format`` forces one
    (:data:`~mtcabench.transcripts.FORMATS`), else it is recognised from the file's shape."""
    source = load(path)
    conversations = format_of(source, format).read(source)
    if not conversations:
        raise InputError(f"{path}: no conversation in the log")
    return conversations


def conversations_from_value(value: Any, format: str | None = None) -> list[Conversation]:
    """Every conversation of a log given as a Python value (messages, items, a request)."""
    if isinstance(value, Mapping):
        value = dict(value)
    elif isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        value = list(value)
    source = Source(value)
    return format_of(source, format).read(source)


def choose(conversations: list[Conversation], select: str | None, where: str) -> Conversation:
    """The conversation ``select`` names: its id, the end of its id after a ``/``
    (``task-3/trial-0``, ``task-3``), or its position from 0; the only one when None."""
    if select is None:
        if len(conversations) == 1:
            return conversations[0]
        shown = ", ".join(c.id for c in conversations[:3])
        raise InputError(f"{where}: holds {len(conversations)} conversations; choose one with "
                         f"--conversation ID (e.g. {shown}) or its position from 0")
    only = conversations[0].id
    if len(conversations) == 1 and select != only and not only.endswith("/" + select):
        raise InputError(f"{where}: holds one conversation ({only}); leave out "
                         "--conversation")
    hits = [c for c in conversations if c.id == select or c.id.endswith("/" + select)]
    if not hits and re.fullmatch(r"task-[^/]+", select):
        hits = [c for c in conversations if f"/{select}/" in c.id + "/"]
    if not hits and (n := ascii_int(select)) is not None and n < len(conversations):
        hits = [conversations[n]]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        shown = ", ".join(c.id for c in conversations[:3])
        raise InputError(f"{where}: no conversation {select!r} among {len(conversations)} "
                         f"(ids such as {shown}, or a position from 0)")
    shown = ", ".join(c.id for c in hits[:3])
    raise InputError(f"{where}: {select!r} names {len(hits)} conversations ({shown}, ...); "
                     "give a longer id")


def read_transcript(path: str | Path, select: str | None = None,
                    format: str | None = None) -> Conversation:
    """The conversation of a log file; ``select`` chooses one of a file holding several: its
    id, the end of its id (``task-3/trial-0``) or its position from 0."""
    return choose(read_conversations(path, format), select, str(path))
