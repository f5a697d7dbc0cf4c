"""The record files of an annotation run: the sink that resumes them, the index it reads.

A :class:`RecordSink` appends records, skipping those an earlier run already wrote (so a
rerun never duplicates one), and creates its file with the first record (so a run refused
before any answer leaves no empty file behind). Before any request, it checks that the
records already there were made by the same annotator as this run's (model, prompt version
and prompt hash): a rerun with another ``--model`` or an edited prompt would pay for answers
it could not keep, so it is refused (exit 3) saying what differs. A :class:`ConversationIndex` gives random
access to a conversations file by id without loading it (``verify`` follows the proposals).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from mtcabench.errors import InputError
from mtcabench.io import (
    JSONError,
    RecordAppender,
    format_validation_error,
    input_file,
    loads,
    read_done_keys,
)
from mtcabench.model import Annotator, Candidate, Conversation, Proposal

#: What must match between an output's LLM records and the run writing more into it.
SIGNATURE = ("model", "prompt_version", "prompt_hash")


def check_signature(path: Path, expect: Annotator) -> None:
    """Refuse (exit 3) an output holding LLM records of another model or prompt than ``expect``."""
    if not path.is_file():
        return
    want = {k: getattr(expect, k) for k in SIGNATURE}
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.endswith(b"\n") or not raw.strip():
                continue
            try:
                ann = loads(raw).get("annotator")
            except (JSONError, AttributeError):
                continue  # read_done_keys reports a bad line
            if not isinstance(ann, dict) or ann.get("name") != expect.name:
                continue
            diff = [f"{k} {ann.get(k)!r} (this run: {want[k]!r})" for k in SIGNATURE
                    if ann.get(k) != want[k]]
            if diff:
                raise InputError.at(
                    path, "its records were made by another annotator: " + ", ".join(diff)
                    + "; nothing was sent. Write this run to a new output (-o/--out-dir), "
                    "or remove the file to redo it with this one", line=lineno)
            return  # one run writes one signature: the first LLM record speaks for all


class RecordSink:
    """An appender that skips records an earlier run already wrote, and counts both.

    ``expect``: the annotator of this run's records; existing LLM records of another model
    or prompt are refused (:func:`check_signature`) before anything is sent.
    """

    def __init__(self, path: str | Path, tally, expect: Annotator | None = None):
        self.path = Path(path)
        if expect is not None:
            check_signature(self.path, expect)
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
        input_file(self.path, "a JSON Lines file")
        with self.path.open("rb") as fh:
            offset = 0
            for lineno, raw in enumerate(fh, start=1):
                if raw.strip():
                    try:
                        cid = loads(raw).get("id")
                    except JSONError as exc:
                        raise InputError.at(self.path, exc.reason, line=lineno) from None
                    except AttributeError:
                        raise InputError.at(self.path, "not a JSON object (a conversation "
                                            "record)", line=lineno) from None
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
