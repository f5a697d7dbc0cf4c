"""The record files of an annotation run: the sink that resumes them, the index it reads.

A :class:`RecordSink` appends records, skipping those an earlier run already wrote (so a
rerun never duplicates one), and creates its file with the first record (so a run refused
before any answer leaves no empty file behind). A :class:`ConversationIndex` gives random
access to a conversations file by id without loading it (``verify`` follows the proposals).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from mtcabench.errors import InputError
from mtcabench.io import JSONError, RecordAppender, format_validation_error, loads, read_done_keys
from mtcabench.model import Candidate, Conversation, Proposal


class RecordSink:
    """An appender that skips records an earlier run already wrote, and counts both."""

    def __init__(self, path: str | Path, tally):
        self.path = Path(path)
        self.done = read_done_keys(self.path)
        self.tally = tally
        self._out: RecordAppender | None = None  # opened with the first new record

    def write(self, record: Proposal | Candidate) -> None:
        self.tally.add(record)
        if record.id in self.done:
            self.tally.already += 1
            return
        if self._out is None:
            self._out = RecordAppender(self.path)
        self._out.write(record)
        self.done.add(record.id)
        self.tally.written += 1

    def close(self) -> None:
        if self._out is not None:
            self._out.close()


class ConversationIndex:
    """Random access to a conversations file by id without loading it: byte offsets only."""

    def __init__(self, path: str | Path, cache_size: int = 16):
        self.path = Path(path)
        self._offsets: dict[str, tuple[int, int]] = {}
        self._recent: dict[str, Conversation] = {}
        self._cache_size = cache_size
        if not self.path.is_file():
            raise InputError(f"{self.path}: no such file")
        with self.path.open("rb") as fh:
            offset = 0
            for lineno, raw in enumerate(fh, start=1):
                if raw.strip():
                    try:
                        cid = loads(raw).get("id")
                    except (JSONError, AttributeError):
                        raise InputError.at(self.path, "malformed JSON", line=lineno) from None
                    if cid in self._offsets:
                        raise InputError.at(self.path, "duplicate conversation id", line=lineno,
                                            record=str(cid))
                    self._offsets[str(cid)] = (offset, lineno)
                offset += len(raw)

    def __len__(self) -> int:
        return len(self._offsets)

    def __call__(self, conversation_id: str) -> Conversation:
        conv = self._recent.get(conversation_id)
        if conv is not None:
            return conv
        if conversation_id not in self._offsets:
            raise InputError(f"{self.path}: no conversation {conversation_id!r}, which a "
                             "proposal refers to; pass the conversations file they came from")
        offset, lineno = self._offsets[conversation_id]
        with self.path.open("rb") as fh:
            fh.seek(offset)
            raw = fh.readline()
        try:
            conv = Conversation.model_validate_json(raw)
        except ValidationError as exc:
            raise InputError.at(self.path, format_validation_error(exc), line=lineno,
                                record=conversation_id) from None
        if len(self._recent) >= self._cache_size:
            self._recent.pop(next(iter(self._recent)))
        self._recent[conversation_id] = conv
        return conv
