"""Reading a log file (or a Python value) in its format, and choosing one of its conversations."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mtcabench.errors import InputError, utf8_text
from mtcabench.io import ascii_int
from mtcabench.model import Conversation
from mtcabench.transcripts._registry import LogFormat, detect, get_format
from mtcabench.transcripts._source import Source, load


def format_of(source: Source, format: str | None = None) -> LogFormat:
    """The format ``format`` names, or the one detected from the shape of ``source``."""
    return get_format(format) if format is not None else detect(source)


def read_conversations(path: str | Path, format: str | None = None, *,
                       id_stem: str | None = None) -> list[Conversation]:
    """Every conversation of a log file, in the order of the log; ``format`` forces one
    (:data:`~mtcabench.transcripts.FORMATS`), else it is recognised from the file's shape.
    ``id_stem`` replaces the file's stem at the start of the ids (see :func:`id_stems`)."""
    source = load(path)
    source.id_stem = id_stem
    conversations = format_of(source, format).read(source)
    if not conversations:
        raise InputError(f"{path}: no conversation in the log")
    return conversations


def id_stems(paths: Sequence[str | Path]) -> list[str]:
    """The start of the conversation ids of each of several log files read together: its
    stem, and where two files share a stem (``a/trace.json``, ``b/trace.json``), as many of
    its folders as tell them apart (``a/trace``, ``b/trace``). The same file given twice
    keeps one stem (its ids are duplicates, refused as such)."""
    resolved = [Path(os.path.abspath(p)) for p in paths]
    stems = [utf8_text(p.stem) for p in resolved]
    for stem in set(stems):
        group = [k for k, s in enumerate(stems) if s == stem]
        distinct = {resolved[k] for k in group}
        if len(distinct) < 2:
            continue
        for depth in range(1, max(len(resolved[k].parts) for k in group)):
            names = {k: "/".join([*resolved[k].parent.parts[-depth:], stem]) for k in group}
            if len(set(names.values())) == len(distinct):
                break
        for k in group:
            stems[k] = utf8_text(names[k].lstrip("/"))
    return stems


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
