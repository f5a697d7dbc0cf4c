"""Reading and writing record files (JSON Lines) safely: the one writer discipline.

Readers stream, validate every line against its record type and report a bad line as
``file:line (record id): reason``. Every JSON text read from a file goes through
:func:`parse_json`, so that any parse failure, a value nested too deeply included, is that
one-line message and never a traceback. Writers never leave a half-written file behind: they
write to a temporary file in the target folder and rename it into place on success; the
temporary file is removed on an error, Ctrl-C, SIGTERM or SIGHUP, and a full disk is one line
(:class:`~mtcabench.errors.NoSpace`, exit 7). The files of one output set (``score``'s five)
are written inside :func:`all_or_nothing`: all of them appear, or none. A run that owns an
output for its whole length (``annotate propose``, ``release build``) holds
:func:`claim_output` on it: a second process is refused (exit 8) naming the first.
Every record line written is redacted (:mod:`mtcabench.redact`).

Names: a file named after a user's name or id gets :func:`derived_name` (safe characters, never
hidden, shortened with a hash so that it fits the file system's 255 bytes with its suffix);
an output name the user gave that is itself too long is refused by :func:`check_output_path`.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
import signal
import tempfile
import threading
from pathlib import Path
from typing import IO, Any, TypeVar
from collections.abc import Iterable, Iterator

import jsonlines
from pydantic import ValidationError
from pydantic_core import from_json

from mtcabench.errors import InputError, NoSpace, OutputBusy, from_os_error
from mtcabench.model import Conversation, Record
from mtcabench.redact import scrubber

R = TypeVar("R", bound=Record)


def _one_line(text: str) -> str:
    # A field name or message holding a line break or another control character (a key of
    # the input, say) is shown escaped: the message stays one line.
    return text if text.isprintable() else repr(text)[1:-1]


def format_validation_error(err: ValidationError) -> str:
    """One line from a pydantic error: the first problem, with its field path."""
    parts = []
    for e in err.errors()[:3]:
        loc = ".".join(_one_line(str(x)) for x in e.get("loc", ()) if x != "__root__")
        msg = _one_line(e.get("msg", "").removeprefix("Value error, "))
        parts.append(f"{loc}: {msg}" if loc else msg)
    more = len(err.errors()) - len(parts)
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


#: How deeply a JSON value read from a file may nest (arrays and objects). The parser's own
#: limit: it does not depend on the call stack (the json module's does, and fails with a
#: RecursionError), and it is below pydantic's serialisation limit (about 255 levels), so
#: whatever a reader accepts can be written again.
MAX_JSON_DEPTH = 200

_POSITION = re.compile(r"^(?P<msg>.*) at line (?P<line>\d+) column (?P<col>\d+)$", re.DOTALL)


class JSONError(ValueError):
    """A JSON text that does not parse: ``reason`` says why, ``line`` and ``column`` where."""

    def __init__(self, reason: str, line: int | None = None, column: int | None = None):
        super().__init__(reason)
        self.reason, self.line, self.column = reason, line, column


def loads(text: str | bytes) -> Any:
    """Parse one JSON text; any failure is a :class:`JSONError`, deep nesting included.

    For values inside a record (a tool call's arguments given as a JSON string): the caller
    adds where the text came from. Files are read with :func:`parse_json`.
    """
    try:
        return from_json(text)
    except ValueError as exc:
        m = _POSITION.match(str(exc))
        msg, line, col = (m["msg"], int(m["line"]), int(m["col"])) if m else (str(exc), None, None)
        if "recursion limit" in msg:
            reason = (f"nested more than {MAX_JSON_DEPTH} levels deep"
                      + (f" (column {col})" if col is not None else "")
                      + "; flatten the value or leave it out")
        else:
            reason = f"malformed JSON ({msg}" + (f", column {col})" if col is not None else ")")
        raise JSONError(reason, line, col) from None


def parse_json(text: str | bytes, path: str | Path, *, line: int | None = None) -> Any:
    """Parse a JSON text read from ``path``: a whole file, or its line ``line``.

    A failure is an InputError naming the file and the line (the given one, else the line of
    the document where parsing failed).
    """
    try:
        return loads(text)
    except JSONError as exc:
        where = line if line is not None else exc.line
        raise InputError.at(path, exc.reason, line=where) from None


def iter_json_lines(path: str | Path, *,
                    max_line_bytes: int | None = None) -> Iterator[tuple[int, dict]]:
    """Yield ``(line number, object)`` for each non-blank line; bad lines raise InputError.

    ``max_line_bytes`` refuses a longer line before reading the rest of it, for readers that
    know how long a valid line can be (the scorer): memory then stays bounded by that.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if path.is_dir():
        raise InputError(f"{path}: is a folder, expected a JSON Lines file")
    with path.open("rb") as fh:
        lineno = 0
        while True:
            raw = fh.readline() if max_line_bytes is None else fh.readline(max_line_bytes + 1)
            if not raw:
                return
            lineno += 1
            if max_line_bytes is not None and len(raw) > max_line_bytes:
                raise InputError.at(path, f"line longer than {max_line_bytes} bytes, more than "
                                    "any valid line of this file can be", line=lineno)
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError.at(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})",
                                    line=lineno) from None
            if not line.strip():
                continue
            obj = parse_json(line, path, line=lineno)
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
    (no input may lie inside one, under any name: a hard link of an input inside the folder
    counts). Paths are compared as files, not as strings: another spelling, a symbolic or a
    hard link to an input is the input. Every stage calls this before it opens anything for
    writing; None entries (options not given) are ignored.
    """
    ins = [Path(p) for p in inputs if p is not None]
    for out in (Path(p) for p in outputs if p is not None):
        for src in ins:
            if _same_file(src, out):
                raise InputError(f"{out}: this output is the input {src}; writing it would "
                                 "destroy the input: choose another output path")
    for folder in (Path(p) for p in folders if p is not None):
        for src in ins:
            if _inside(src, folder) or _linked_inside(src, folder):
                raise InputError(f"{folder}: the output folder holds the input {src}; writing "
                                 "it would destroy the input: choose another output folder")


def _linked_inside(src: Path, folder: Path) -> bool:
    """Whether a file under ``folder`` is ``src`` under another name (a hard link)."""
    try:
        st = src.stat()
    except OSError:
        return False
    if st.st_nlink < 2 or not folder.is_dir():
        return False
    for dirpath, _, names in os.walk(folder):
        for name in names:
            with contextlib.suppress(OSError):
                other = os.stat(os.path.join(dirpath, name), follow_symlinks=False)
                if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
                    return True
    return False


#: The longest file name (in bytes) that the file systems we write to accept.
NAME_MAX = 255
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def fit_name(name: str, max_bytes: int = NAME_MAX) -> str:
    """``name`` if its UTF-8 form fits ``max_bytes``; else cut, with ``~`` and a hash of the
    whole name, so that two long names that share a start still get two files."""
    if len(name.encode("utf-8")) <= max_bytes:
        return name
    tag = "~" + hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    cut = name.encode("utf-8")[: max_bytes - len(tag)].decode("utf-8", "ignore")
    return cut + tag


def derived_name(text: str, suffix: str = "", *, default: str = "file",
                 room: int = 0) -> str:
    """The one name policy for a file named after a user's name or id (a span id, a
    submission's file name): unsafe characters become ``_``, a leading ``.`` or ``-`` is
    dropped (no hidden page, nothing read as an option), and the stem is shortened with a
    hash so that stem, ``suffix`` and ``room`` more bytes fit :data:`NAME_MAX`."""
    stem = _UNSAFE.sub("_", text).strip("_").lstrip(".-") or default
    return fit_name(stem, NAME_MAX - len(suffix.encode("utf-8")) - room) + suffix


def check_output_path(path: str | Path) -> Path:
    """Refuse (exit 3) an output file path whose folder is missing, that is a folder, or whose
    name is longer than the file system allows."""
    path = Path(path)
    size = len(os.fsencode(path.name))
    if size > NAME_MAX:
        raise InputError(f"{fit_name(path.name, 60)}: the file name is {size} bytes, longer "
                         f"than the {NAME_MAX} a file system allows; choose a shorter name")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.exists():
        raise InputError(f"{path}: folder {parent} does not exist; create it or choose another path")
    if not parent.is_dir():
        raise InputError(f"{path}: {parent} is not a folder")
    if path.is_dir():
        raise InputError(f"{path}: is a folder; the output is a file: give a file path "
                         "(e.g. inside that folder)")
    return path


# SIGTERM (a service manager, `timeout`, `kill`) and SIGHUP (a closed terminal) end a process
# without unwinding it, so a write in progress would leave its temporary file. While a write
# is open, both raise SystemExit(128 + signal) instead, as SIGINT raises KeyboardInterrupt:
# the writer's cleanup runs, then the process ends with the usual exit code. Handlers that the
# program set itself are left alone; outside writes the default action applies.
_STOP_SIGNALS = tuple(s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None))
                      if s is not None)
_guard_lock = threading.Lock()
_guard_depth = 0
_saved_handlers: dict[int, Any] = {}


def _stop(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def _cleanup_on_stop_signals() -> Iterator[None]:
    global _guard_depth
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers (and only it receives signals)
        return
    with _guard_lock:
        if _guard_depth == 0:
            for sig in _STOP_SIGNALS:
                if signal.getsignal(sig) is signal.SIG_DFL:
                    _saved_handlers[sig] = signal.signal(sig, _stop)
        _guard_depth += 1
    try:
        yield
    finally:
        with _guard_lock:
            _guard_depth -= 1
            if _guard_depth == 0:
                for sig, old in _saved_handlers.items():
                    if signal.getsignal(sig) is _stop:
                        signal.signal(sig, old)
                _saved_handlers.clear()


#: The extra bytes of a temporary file's name over its target's (``.``, ``.XXXXXXXX.tmp``).
_TMP_EXTRA = 14
_group = threading.local()


def stop_signals_unwind():
    """A context in which SIGTERM and SIGHUP unwind (SystemExit) as Ctrl-C does, so that a
    command's own cleanup (a half-built folder) runs; see :func:`atomic_write`."""
    return _cleanup_on_stop_signals()


@contextlib.contextmanager
def all_or_nothing() -> Iterator[None]:
    """Files written with :func:`atomic_write` inside are renamed into place together at the
    end, or none of them is (an error, a full disk, Ctrl-C, SIGTERM: every temporary file
    is removed). The renames run with the stop signals held back, so that a signal arriving
    then takes effect once every file is in place. A nested call joins the outer one."""
    if getattr(_group, "pending", None) is not None:
        yield
        return
    pending: list[tuple[str, Path]] = []
    _group.pending = pending
    try:
        with _cleanup_on_stop_signals():
            try:
                yield
            except BaseException:
                for tmp, _ in pending:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(tmp)
                raise
            finally:
                _group.pending = None
            _rename_all(pending)
    finally:
        _group.pending = None


def _rename_all(pending: list[tuple[str, Path]]) -> None:
    held = (signal.SIGINT, *_STOP_SIGNALS)
    main = threading.current_thread() is threading.main_thread()
    if main:
        signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        for tmp, path in pending:
            os.replace(tmp, path)
    finally:
        if main:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, held)


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w") -> Iterator[IO]:
    """Open a temporary file beside ``path``; rename it over ``path`` only on success.

    On any failure, Ctrl-C, SIGTERM or SIGHUP the temporary file is removed and ``path`` is
    left as it was; a full disk is :class:`~mtcabench.errors.NoSpace` naming ``path``. Inside
    :func:`all_or_nothing` the rename waits for the other files of the set.
    """
    path = check_output_path(path)
    # The temporary name must fit too: a long target gets a shortened one.
    name = fit_name(path.name, NAME_MAX - _TMP_EXTRA)
    group = getattr(_group, "pending", None)
    with _cleanup_on_stop_signals():
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=path.parent or ".")
        except OSError as exc:
            raise _os_error(exc, path) from None
        handed = False
        try:
            with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as fh:
                yield fh if "b" in mode else _Redacting(fh)
                fh.flush()
                os.fsync(fh.fileno())
            # mkstemp creates the file for its owner only; give it the usual permissions.
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
            if group is not None:
                group.append((tmp, path))
                handed = True
            else:
                os.replace(tmp, path)
        except BaseException as exc:
            if not handed:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
            if isinstance(exc, OSError):
                raise _os_error(exc, path) from None
            raise


class _Redacting:
    """A text file whose every write is redacted (:mod:`mtcabench.redact`): no secret the
    process holds reaches a file an atomic writer writes (a summary, a report, a page)."""

    def __init__(self, fh: IO[str]):
        self._fh = fh
        self._scrub = scrubber()

    def write(self, text: str) -> int:
        return self._fh.write(self._scrub(text))

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fh, name)


def _os_error(exc: OSError, path: Path) -> Exception:
    """A full disk or a too-long name while writing ``path`` as its one-line error."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return NoSpace(f"{path}: {os.strerror(exc.errno).lower()} while writing it; nothing "
                       "half-written was kept: free some space (or write elsewhere) and rerun")
    return from_os_error(exc) or exc


def dump_record(record: Record) -> dict:
    """The JSON object written for a record (None fields left out)."""
    return record.model_dump(mode="json", exclude_none=True)


def write_records(path: str | Path, records: Iterable[Record]) -> int:
    """Write records atomically; returns how many were written."""
    n = 0
    with atomic_write(path) as fh:
        writer = jsonlines.Writer(fh, compact=True, flush=False, dumps=_dumps)
        for rec in records:
            writer.write(dump_record(rec))
            n += 1
    return n


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


class RecordAppender:
    """Append records to a file one by one, flushed per record, for resumable stages.

    A crash loses at most the record being written; :func:`read_done_keys` tells a rerun
    which records already exist so that none is written twice. A truncated last line (a
    crash mid-write) is cut off when the appender opens the file.
    """

    def __init__(self, path: str | Path):
        self.path = check_output_path(path)
        try:
            _truncate_partial_last_line(self.path)
            self._fh = self.path.open("a", encoding="utf-8")
            self._scrub = scrubber()
        except OSError as exc:
            raise _os_error(exc, self.path) from None

    def write(self, record: Record) -> None:
        try:
            self._fh.write(self._scrub(json.dumps(dump_record(record), ensure_ascii=False))
                           + "\n")
            self._fh.flush()
        except OSError as exc:
            # The line may be partly written: the next open cuts it off (a rerun resumes).
            raise _os_error(exc, self.path) from None

    def close(self) -> None:
        try:
            self._fh.close()
        except OSError as exc:
            raise _os_error(exc, self.path) from None

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
                obj = loads(raw.decode("utf-8"))
            except (JSONError, UnicodeDecodeError) as exc:
                why = exc.reason if isinstance(exc, JSONError) else "not UTF-8 text"
                raise InputError.at(path, f"{why}; remove the line or the file to redo it",
                                    line=lineno) from None
            key = obj.get("id") or obj.get("span_id") if isinstance(obj, dict) else None
            if key:
                keys.add(str(key))
    return keys


# ---------------------------------------------------------------- one writer per output


@contextlib.contextmanager
def claim_output(path: str | Path) -> Iterator[None]:
    """Hold ``path`` (a file or a folder an output goes to) for the length of a run.

    The claim is an exclusive ``flock`` on a lock file beside it (``.NAME.lock``, holding the
    owner's pid), released and removed at the end; the kernel drops it when the process dies,
    so a killed run never leaves a stale claim. A second process claiming the same output
    is refused at once (:class:`~mtcabench.errors.OutputBusy`, exit 8), naming the first.
    """
    path = Path(path)
    lock = path.parent / fit_name(f".{path.name}.lock")
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise _os_error(exc, lock) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.read(fd, 32).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise OutputBusy(f"{path}: another mtcabench process (pid {owner}) is writing this "
                             "output now; wait for it to finish, or choose another output"
                             ) from None
        # The previous holder may have removed the file between our open and our lock.
        try:
            same = os.stat(lock).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(lock)
        os.close(fd)
