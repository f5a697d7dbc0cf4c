"""Our own conversation records (JSON Lines of ``kind: conversation``, as ``ingest`` writes
them), read back as they are."""

from __future__ import annotations

from mtcabench.io import read_records
from mtcabench.model import Conversation
from mtcabench.transcripts._registry import NO, SURE, LogFormat, register_format
from mtcabench.transcripts._source import Source


def _sniff(source: Source) -> int:
    value = source.value
    records = [value] if isinstance(value, dict) else value
    if source.path is not None and isinstance(records, list) and records and all(
            isinstance(r, dict) and r.get("kind") == Conversation.KIND for r in records):
        return SURE
    return NO


def _read(source: Source) -> list[Conversation]:
    return list(read_records(source.path, Conversation))


register_format(LogFormat(
    "conversations", "conversation records", "JSON Lines of {kind: conversation} records, as "
    "ingest writes them", _sniff, _read, order=70))
