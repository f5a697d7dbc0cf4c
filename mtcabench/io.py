"""Reading and writing record files (JSON Lines) safely.

Readers stream, validate every line against its record type and report a bad line as
``file:line (record id): reason``. Every JSON text read from a file goes through
:func:`parse_json`, so that any parse failure, a value nested too deeply included, is that
one-line message and never a traceback. Record writers write through the one writer
discipline of :mod:`mtcabench.files` (atomic, full disk as one line, redacted), whose names
are re-exported here: ``atomic_write``, ``all_or_nothing``, ``claim_output``,
``check_output_path``, ``derived_name``...
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import jsonlines
from pydantic import ValidationError
from pydantic_core import from_json

from mtcabench.errors import InputError
from mtcabench.files import (
    NAME_MAX,
    all_or_nothing,
    atomic_write,
    check_output_path,
    claim_output,
    derived_name,
    fit_name,
    input_file,
    node_kind,
    os_error,
    stop_signals_unwind,
)
from mtcabench.model import KIND_FILES, Conversation, Record
from mtcabench.redact import scrubber

__all__ = [  # the writer discipline, re-exported for the stages that read and write records
    "NAME_MAX", "all_or_nothing", "atomic_write", "check_output_path", "claim_output",
    "derived_name", "fit_name", "input_file", "node_kind", "stop_signals_unwind",
]

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


#: A ``\uXXXX`` escape of half a UTF-16 surrogate pair, with the backslashes before it.
_SURROGATE_ESCAPE = re.compile(r"(\\*)\\u([dD][89a-fA-F][0-9a-fA-F]{2})")
_BOM = "\ufeff"


def _lone_surrogate(text: str) -> tuple[str, int, int] | None:
    """The first ``\\uD800``-``\\uDFFF`` escape that is not half of a pair: (escape, line,
    column), or None. JSON allows a character outside the Basic Multilingual Plane written as
    a pair of such escapes; one alone is no character (a text cut inside an emoji)."""
    pending: re.Match | None = None  # a high half waiting for its low half
    for m in _SURROGATE_ESCAPE.finditer(text):
        if len(m.group(1)) % 2:  # "\\uD800": an escaped backslash, then text
            continue
        high = m.group(2)[1].lower() in "89ab"
        if pending is not None and not high and m.start(2) - 2 == pending.end():
            pending = None  # the pair is complete
            continue
        if pending is not None or not high:
            bad = pending or m
            break
        pending = m
    else:
        bad = pending
        if bad is None:
            return None
    at = bad.start(2) - 2
    line = text.count("\n", 0, at) + 1
    return "\\u" + bad.group(2), line, at - (text.rfind("\n", 0, at) + 1) + 1


def split_lines(text: str) -> list[str]:
    """The lines of a JSON Lines text, as the format defines them: split at ``\n`` only (a
    ``\r`` before it dropped). Never ``str.splitlines()``, which also splits at U+2028,
    U+2029, U+0085, form feeds and more: characters a JSON string may hold raw, so a valid
    line holding one would be cut in two and refused. Binary files read line by line
    (``for raw in fh`` on a file opened ``"rb"``) split at ``\n`` only too."""
    return [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]


#: The largest seed: what every random generator of the tool accepts (numpy's, torch's).
MAX_SEED = 2**32 - 1


def seed_problem(seed: Any) -> str | None:
    """Why ``seed`` is no seed (a negative number reached numpy as a traceback), else None.
    The one check of every ``--seed``: trace, explain, demo, score, at2-learn."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        return f"seed must be 0 or more (a whole number, at most {MAX_SEED}), got {seed!r}"
    return None


#: The most bootstrap resamples a run draws: 100 times the default (1,000), whose 95%
#: intervals already move by well under a point between seeds. Every resample of every report
#: row keeps one average per metric in memory, so an unbounded count (``--resamples
#: 1000000000``) ran the machine out of memory after minutes of drawing.
MAX_RESAMPLES = 100_000


def resamples_problem(resamples: Any) -> str | None:
    """Why ``resamples`` is no resample count, else None. The one check of every
    ``--resamples``, made before any input is read."""
    if isinstance(resamples, bool) or not isinstance(resamples, int) or \
            not 0 <= resamples <= MAX_RESAMPLES:
        return (f"resamples must be 0 or more (0: no intervals) and at most {MAX_RESAMPLES:,} "
                f"(intervals stop changing long before), got {resamples!r}")
    return None


def ascii_int(text: Any, max_digits: int = 18) -> int | None:
    """A non-negative integer written in ASCII digits in a file or an option (a turn, an
    index, a project id, nanoseconds), else None. ``str.isdigit`` alone is not enough:
    ``"²".isdigit()`` holds but ``int("²")`` fails, and ``int()`` refuses over 4,300 digits."""
    if not isinstance(text, str) or not 0 < len(text) <= max_digits:
        return None
    return int(text) if text.isascii() and text.isdigit() else None


#: A number whose exponent is at least 3 digits long, or 309 digits in a row: the only ways a
#: JSON number can overflow a float (``1e999``), looked for before the parsed value is walked.
_HUGE_EXPONENT = {bytes: re.compile(rb"[0-9][eE]\+?0*[1-9][0-9]{2}|[0-9]{309}"),
                  str: re.compile(r"[0-9][eE]\+?0*[1-9][0-9]{2}|[0-9]{309}")}
#: Values JSON has no spelling for, as some writers spell them anyway.
_NON_JSON_NUMBER = re.compile(r"-?(?:NaN|Infinity|inf|nan)\b")


def non_finite(value: Any, path: str = "") -> str | None:
    """Where ``value`` (parsed JSON, or a Python value about to become JSON) holds a float
    that JSON cannot carry (NaN, an infinity): its field path (``$.a.b[2]``), else None."""
    stack = [(value, path or "$")]
    while stack:
        v, at = stack.pop()
        if isinstance(v, float):
            if not math.isfinite(v):
                return at
        elif isinstance(v, dict):
            stack.extend((x, f"{at}.{k}") for k, x in v.items())
        elif isinstance(v, (list, tuple)):
            stack.extend((x, f"{at}[{i}]") for i, x in enumerate(v))
    return None


def loads(text: str | bytes) -> Any:
    """Parse one JSON text; any failure is a :class:`JSONError`, deep nesting included.

    ``NaN``, ``Infinity`` and a number too large for a float (``1e999``) are refused, with
    where they are: JSON cannot carry them, and reading them would write them back as
    ``null`` (a value changed silently).

    For values inside a record (a tool call's arguments given as a JSON string): the caller
    adds where the text came from. Files are read with :func:`parse_json`.
    """
    try:
        value = from_json(text, allow_inf_nan=False)
    except ValueError as exc:
        m = _POSITION.match(str(exc))
        msg, line, col = (m["msg"], int(m["line"]), int(m["col"])) if m else (str(exc), None, None)
        decoded = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        if "recursion limit" in msg:
            reason = (f"nested more than {MAX_JSON_DEPTH} levels deep"
                      + (f" (column {col})" if col is not None else "")
                      + "; flatten the value or leave it out")
        elif "\x00" in decoded[:2]:
            reason = ("starts with a NUL byte: UTF-16 or UTF-32 text without a byte order "
                      "mark? save it as UTF-8")
        elif decoded.startswith(_BOM):
            reason = ("starts with a UTF-8 byte order mark (BOM) inside the file; save it as "
                      "UTF-8 without BOM")
            line, col = 1, 1
        elif col is not None and line is not None and _NON_JSON_NUMBER.match(
                decoded.split("\n")[line - 1][col - 1:] if line <= decoded.count("\n") + 1
                else ""):
            reason = (f"a number JSON cannot carry (NaN or Infinity) at line {line} column "
                      f"{col}; write it as a string or null in the file, or fix its writer")
        elif msg == "number out of range" and line is not None and col is not None and (
                big := _long_number(decoded, line, col)) is not None:
            start, digits = big
            reason = (f"a number of {digits:,} digits at line {line} column {start}: longer "
                      f"than the {MAX_NUMBER_DIGITS:,} digits a number may have here; write it "
                      "as a string in the file (an id is text)")
            col = start
        elif (("surrogate" in msg or "hex escape" in msg)
              and (lone := _lone_surrogate(decoded)) is not None):
            escape, line, col = lone
            reason = (f"lone surrogate {escape} at line {line} column {col}: half of a "
                      "UTF-16 pair is no character (was the text cut inside an emoji?)")
        else:
            reason = f"malformed JSON ({msg}" + (f", column {col})" if col is not None else ")")
        raise JSONError(reason, line, col) from None
    huge = _HUGE_EXPONENT[bytes if isinstance(text, (bytes, bytearray)) else str]
    if huge.search(text) and (at := non_finite(value)) is not None:
        raise JSONError(f"a number too large for a float (such as 1e999) at {at}; JSON "
                        "readers cannot carry it: write it as a string in the file")
    return value


#: The most digits of a number in JSON text (Python's limit on converting text to an int).
MAX_NUMBER_DIGITS = 4300


def _long_number(text: str, line: int, col: int) -> tuple[int, int] | None:
    """``(column where it starts, digits)`` of the number the parser stopped inside at
    ``line``/``col`` (1-based), when that number has more digits than it reads."""
    lines = text.split("\n")
    if not 0 < line <= len(lines):
        return None
    row = lines[line - 1]
    i = min(col - 1, len(row))
    start = i
    while start > 0 and (row[start - 1].isdigit() or row[start - 1] in "-+.eE"):
        start -= 1
    end = i
    while end < len(row) and (row[end].isdigit() or row[end] in ".eE+-"):
        end += 1
    digits = sum(ch.isdigit() for ch in row[start:end])
    return (start + 1, digits) if digits > MAX_NUMBER_DIGITS else None


#: Byte order marks of the encodings a file saved "as Unicode" may be in, longest first.
_UNICODE_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
                 (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"))


def not_utf8(raw: bytes, exc: UnicodeDecodeError) -> str:
    """Why ``raw`` is not UTF-8 text, naming a UTF-16 or UTF-32 file by its byte order mark
    (what an editor's "Unicode" saves) rather than only the first bad byte."""
    for bom, name in _UNICODE_BOMS:
        if raw.startswith(bom):
            return f"{name} text, not UTF-8 (it starts with a {name} byte order mark); save it as UTF-8"
    return f"not UTF-8 text ({exc.reason} at byte {exc.start})"


def parse_json(text: str | bytes, path: str | Path, *, line: int | None = None) -> Any:
    """Parse a JSON text read from ``path``: a whole file, or its line ``line``.

    A failure is an InputError naming the file and the line (the given one, else the line of
    the document where parsing failed).
    """
    if line in (None, 1):  # a file's first text may start with a BOM (Windows editors)
        if isinstance(text, bytes) and text.startswith(b"\xef\xbb\xbf"):
            text = text[3:]
        elif isinstance(text, str) and text.startswith(_BOM):
            text = text[1:]
    try:
        return loads(text)
    except JSONError as exc:
        where = line if line is not None else exc.line
        raise InputError.at(path, exc.reason, line=where) from None


#: The largest file looked at whole to say what JSON document it is.
_DOCUMENT_BYTES = 10_000_000


def what_json_document(path: str | Path) -> str | None:
    """What a file that is one JSON document (pretty-printed over several lines, so read as
    JSON Lines it is "malformed" on line 1) is, in words: by its ``kind``
    (:data:`~mtcabench.model.KIND_FILES`: an explanation, a score report, a release manifest),
    else its JSON type. None when it is not one JSON document, or too large to look at.

    The one naming of such a file for the readers of JSON Lines (``score``, ``validate``), so
    that a message says what was given, not that the JSON is broken."""
    path = Path(path)
    try:
        if path.stat().st_size > _DOCUMENT_BYTES:
            return None
        doc = loads(path.read_bytes())
    except (OSError, JSONError):
        return None
    kind = doc.get("kind") if isinstance(doc, dict) else None
    if isinstance(kind, str) and kind in KIND_FILES:
        return f"{KIND_FILES[kind]}, one JSON document of kind {kind!r}"
    return f"one JSON {type(doc).__name__} document"


def is_json_document_error(exc: InputError) -> bool:
    """Whether a reader of JSON Lines failed the way one pretty-printed JSON document fails:
    malformed JSON on its first or second line."""
    return getattr(exc, "line", None) in (1, 2) and "malformed JSON" in exc.message


def iter_json_lines(path: str | Path, *, max_line_bytes: int | None = None,
                    torn_tail: bool = False) -> Iterator[tuple[int, dict]]:
    """Yield ``(line number, object)`` for each non-blank line; bad lines raise InputError.

    ``max_line_bytes`` refuses a longer line before reading the rest of it, for readers that
    know how long a valid line can be (the scorer): memory then stays bounded by that.
    ``torn_tail``: a last line without its newline is a record a crash cut off (a file
    appended record by record) and is left out, not parsed.
    """
    path = input_file(path, "a JSON Lines file")
    with path.open("rb") as fh:
        lineno = 0
        while True:
            raw = fh.readline() if max_line_bytes is None else fh.readline(max_line_bytes + 1)
            if not raw or (torn_tail and not raw.endswith(b"\n")
                           and (max_line_bytes is None or len(raw) <= max_line_bytes)):
                return
            lineno += 1
            if max_line_bytes is not None and len(raw) > max_line_bytes:
                raise InputError.at(path, f"line longer than {max_line_bytes} bytes, more than "
                                    "any valid line of this file can be", line=lineno)
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError.at(path, not_utf8(raw, exc), line=lineno) from None
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
            cut_torn_tail(self.path)
            self._fh = self.path.open("a", encoding="utf-8")
            self._scrub = scrubber()
        except OSError as exc:
            raise os_error(exc, self.path) from None

    def write(self, record: Record) -> None:
        try:
            self._fh.write(self._scrub(json.dumps(dump_record(record), ensure_ascii=False))
                           + "\n")
            self._fh.flush()
        except OSError as exc:
            # The line may be partly written: the next open cuts it off (a rerun resumes).
            raise os_error(exc, self.path) from None

    def close(self) -> None:
        try:
            self._fh.close()
        except OSError as exc:
            raise os_error(exc, self.path) from None

    def __enter__(self) -> RecordAppender:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def cut_torn_tail(path: Path) -> None:
    """Cut a last line without its newline (a record a crash cut off) before appending.

    Appending after it would glue the next record onto the torn one and turn a line that
    readers skip into one they refuse.
    """
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
