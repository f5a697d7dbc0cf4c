"""Writing conversations, shared by the ingest commands (reading is the format layer's,
:mod:`mtcabench.transcripts`)."""

from __future__ import annotations

from pathlib import Path
from collections.abc import Iterable

from mtcabench.errors import InputError
from mtcabench.io import write_records
from mtcabench.model import Conversation


def write_conversations(path: str | Path, conversations: Iterable[Conversation]) -> int:
    """Write conversations atomically; a duplicate id aborts with nothing written."""
    seen: dict[str, str] = {}

    def checked() -> Iterable[Conversation]:
        for conv in conversations:
            where = _origin(conv)
            if conv.id in seen:
                raise InputError(f"{where}: duplicate conversation id {conv.id!r} (first at "
                                 f"{seen[conv.id]}); each run (source, domain, agent model and "
                                 "implementation, task, trial) may appear once: remove the "
                                 "copy, or ingest the two into separate files")
            seen[conv.id] = where
            yield conv

    return write_records(path, checked())


def _origin(conv: Conversation) -> str:
    origin = conv.metadata.get("origin") or {}
    if origin.get("file") is not None:
        return origin["file"] + (f" run {origin['run']}" if "run" in origin else "")
    return conv.id
