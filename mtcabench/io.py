"""Reading and writing record files (JSON Lines) safely.

Readers stream, validate every line against its record type and report a bad line as
``file:line (record id): reason``. Writers never leave a half-written file behind: they
write to a temporary file in the target folder and rename it into place on success.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import IO, TypeVar
from collections.abc import Iterable, Iterator

import jsonlines
from pydantic import ValidationError

from mtcabench.errors import InputError
from mtcabench.model import Conversation, Record

R = TypeVar("R", bound=Record)


def format_validation_error(err: ValidationError) -> str:
    """One line from a pydantic error: the first problem, with its field path."""
    parts = []
    for e in err.errors()[:3]:
        loc = ".".join(str(x) for x in e.get("loc", ()) if x != "__root__")
        msg = e.get("msg", "").removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}" if loc else msg)
    more = len(err.errors()) - len(parts)
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def iter_json_lines(path: str | Path) -> Iterator[tuple[int, dict]]:
    """Yield ``(line number, object)`` for each non-blank line; bad lines raise InputError."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if path.is_dir():
        raise InputError(f"{path}: is a folder, expected a JSON Lines file")
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError.at(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})",
                                    line=lineno) from None
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError.at(path, f"malformed JSON ({exc.msg}, column {exc.colno})",
                                    line=lineno) from None
            if not isinstance(obj, dict):
                raise InputError.at(path, f"expected a JSON object, got {type(obj).__name__}",
                                    line=lineno)
            yield lineno, obj


def read_records(path: str | Path, record_type: type[R]) -> Iterator[R]:
    """Stream validated records of ``record_type`` from a JSON Lines file."""
    for lineno, obj in iter_json_lines(path):
        try:
            yield record_type.model_validate(obj)
        except ValidationError as exc:
            rid = obj.get("id") or obj.get("span_id")
            raise InputError.at(path, format_validation_error(exc), line=lineno,
                                record=str(rid) if rid else None) from None


def load_conversations(path: str | Path) -> dict[str, Conversation]:
    """All conversations of a file by id; a duplicate id is an error."""
    out: dict[str, Conversation] = {}
    for lineno, obj in iter_json_lines(path):
        try:
            conv = Conversation.model_validate(obj)
        except ValidationError as exc:
            raise InputError.at(path, format_validation_error(exc), line=lineno,
                                record=str(obj.get("id")) if obj.get("id") else None) from None
        if conv.id in out:
            raise InputError.at(path, "duplicate conversation id", line=lineno, record=conv.id)
        out[conv.id] = conv
    return out


def _same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file: the same inode (links, another spelling), or the same
    resolved path where the output does not exist yet."""
    with contextlib.suppress(OSError):
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    return os.path.realpath(a) == os.path.realpath(b)


def _inside(path: Path, folder: Path) -> bool:
    real, top = Path(os.path.realpath(path)), Path(os.path.realpath(folder))
    return real == top or top in real.parents


def check_outputs_are_not_inputs(inputs: Iterable[str | Path | None],
                                 outputs: Iterable[str | Path | None] = (), *,
                                 folders: Iterable[str | Path | None] = ()) -> None:
    """Refuse (exit 3) a command whose output would overwrite or append to one of its inputs.

    ``outputs`` are files a command writes; ``folders`` are folders it replaces or fills
    (no input may lie inside one). Paths are compared as files, not as strings: another
    spelling, a symbolic or a hard link to an input is the input. Every stage calls this
    before it opens anything for writing; None entries (options not given) are ignored.
    """
    ins = [Path(p) for p in inputs if p is not None]
    for out in (Path(p) for p in outputs if p is not None):
        for src in ins:
            if _same_file(src, out):
                raise InputError(f"{out}: this output is the input {src}; writing it would "
                                 "destroy the input: choose another output path")
    for folder in (Path(p) for p in folders if p is not None):
        for src in ins:
            if _inside(src, folder):
                raise InputError(f"{folder}: the output folder holds the input {src}; writing "
                                 "it would destroy the input: choose another output folder")


def _check_parent(path: Path) -> None:
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.exists():
        raise InputError(f"{path}: folder {parent} does not exist; create it or choose another path")
    if not parent.is_dir():
        raise InputError(f"{path}: {parent} is not a folder")


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w") -> Iterator[IO]:
    """Open a temporary file beside ``path``; rename it over ``path`` only on success."""
    path = Path(path)
    _check_parent(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp creates the file for its owner only; give it the usual permissions.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def dump_record(record: Record) -> dict:
    """The JSON object written for a record (None fields left out)."""
    return record.model_dump(mode="json", exclude_none=True)


def write_records(path: str | Path, records: Iterable[Record]) -> int:
    """Write records atomically; returns how many were written."""
    n = 0
    with atomic_write(path) as fh:
        writer = jsonlines.Writer(fh, compact=True, flush=False)
        for rec in records:
            writer.write(dump_record(rec))
            n += 1
    return n


class RecordAppender:
    """Append records to a file one by one, flushed per record, for resumable stages.

    A crash loses at most the record being written; :func:`read_done_keys` tells a rerun
    which records already exist so that none is written twice. A truncated last line (a
    crash mid-write) is cut off when the appender opens the file.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        _check_parent(self.path)
        _truncate_partial_last_line(self.path)
        self._fh = self.path.open("a", encoding="utf-8")

    def write(self, record: Record) -> None:
        self._fh.write(json.dumps(dump_record(record), ensure_ascii=False) + "\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> RecordAppender:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _truncate_partial_last_line(path: Path) -> None:
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb+") as fh:
        data = fh.read()
        if data.endswith(b"\n"):
            return
        cut = data.rfind(b"\n") + 1
        fh.truncate(cut)


def read_done_keys(path: str | Path) -> set[str]:
    """Ids (``id`` or ``span_id``) of the complete records in ``path`` (empty if absent).

    A last line without its newline is a record cut off by a crash and is not counted.
    """
    path = Path(path)
    if not path.exists():
        return set()
    keys: set[str] = set()
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.endswith(b"\n") or not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                raise InputError.at(path, "malformed JSON; remove the line or the file to redo it",
                                    line=lineno) from None
            key = obj.get("id") or obj.get("span_id") if isinstance(obj, dict) else None
            if key:
                keys.add(str(key))
    return keys
