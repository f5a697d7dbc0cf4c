"""Shared helpers of the ingest adapters: loading raw JSON and writing conversations."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from collections.abc import Iterable

from mtcabench.errors import InputError
from mtcabench.io import input_file, not_utf8, parse_json, write_records
from mtcabench.model import Conversation


def load_json(path: Path) -> Any:
    """Parse a whole JSON file, with one clear error for a missing, non-UTF-8 or bad file."""
    data = input_file(path, "a JSON file").read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError.at(path, not_utf8(data, exc)) from None
    return parse_json(text, path)


def write_conversations(path: str | Path, conversations: Iterable[Conversation]) -> int:
    """Write conversations atomically; a duplicate id aborts with nothing written."""
    seen: dict[str, str] = {}

    def checked() -> Iterable[Conversation]:
        for conv in conversations:
            where = _origin(conv)
            if conv.id in seen:
                raise InputError(f"{where}: duplicate conversation id {conv.id!r} (first at "
                                 f"{seen[conv.id]}); each run (source, domain, model, task, "
                                 "trial) may appear once: remove the copy")
            seen[conv.id] = where
            yield conv

    return write_records(path, checked())


def _origin(conv: Conversation) -> str:
    origin = conv.metadata.get("origin") or {}
    if origin.get("file") is not None:
        return origin["file"] + (f" run {origin['run']}" if "run" in origin else "")
    return conv.id
