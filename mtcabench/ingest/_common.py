"""Shared helpers of the ingest adapters: loading raw JSON and writing conversations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from mtcabench.errors import InputError
from mtcabench.io import write_records
from mtcabench.model import Conversation


def load_json(path: Path) -> Any:
    """Parse a whole JSON file, with one clear error for a missing, non-UTF-8 or bad file."""
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError.at(path, f"malformed JSON ({exc.msg}, column {exc.colno})",
                            line=exc.lineno) from None


def write_conversations(path: str | Path, conversations: Iterable[Conversation]) -> int:
    """Write conversations atomically; a duplicate id aborts with nothing written."""
    seen: set[str] = set()

    def checked() -> Iterable[Conversation]:
        for conv in conversations:
            if conv.id in seen:
                raise InputError(f"duplicate conversation id {conv.id!r}: each run (source, "
                                 "domain, model, task, trial) may appear once; remove the copy")
            seen.add(conv.id)
            yield conv

    return write_records(path, checked())
