"""An agent log file as its readers see it: its JSON value (JSON Lines as a list of objects),
or a zip archive (Inspect's ``.eval``), with one clear error for a file that is neither."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtcabench.errors import InputError, utf8_text
from mtcabench.io import JSONError, input_file, loads, not_utf8, parse_json, split_lines

#: The first bytes of a zip archive (an Inspect ``.eval`` log).
ZIP_MAGIC = b"PK\x03\x04"


@dataclass
class Source:
    """One log: where it came from (``path`` None for values given in Python) and its value."""

    value: Any
    path: Path | None = None
    json_lines: bool = False
    archive: bool = False
    #: The start of its conversation ids when the file's stem is not enough (two logs of
    #: one name in different folders, read together): see ``read_conversations``.
    id_stem: str | None = None

    @property
    def label(self) -> str:
        """How errors name it: the path, or ``messages`` for a Python value."""
        return utf8_text(str(self.path)) if self.path is not None else "messages"

    @property
    def stem(self) -> str:
        """The start of every conversation id read from it (a file name that is not UTF-8
        gets U+FFFD for its bad bytes: an id is written as UTF-8)."""
        if self.id_stem is not None:
            return self.id_stem
        return utf8_text(self.path.stem) if self.path is not None else "transcript"

    def origin(self, format: str, **ids: Any) -> dict[str, Any]:
        """``metadata.origin`` of a conversation read from it: file, format, the log's ids."""
        return {"file": utf8_text(self.path.name) if self.path is not None else None,
                "format": format,
                **{k: v for k, v in ids.items() if v is not None}}


def load(path: str | Path) -> Source:
    """Read ``path`` as JSON, JSON Lines (each line an object) or a zip archive."""
    path = input_file(path, "an agent log file")
    data = path.read_bytes()
    if data.startswith(ZIP_MAGIC):
        return Source(None, path, archive=True)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError.at(path, not_utf8(data, exc)) from None
    if not text.strip():
        raise InputError(f"{path}: empty file; expected an agent log (JSON or JSON Lines)")
    try:
        return Source(loads(text), path)
    except JSONError as exc:
        if "trailing characters" not in exc.reason:
            raise InputError.at(path, exc.reason, line=exc.line) from None
    # More than one value: JSON Lines, each line checked here.
    lines = []
    for n, line in enumerate(split_lines(text), 1):
        if not line.strip():
            continue
        try:
            obj = loads(line)
        except JSONError as exc:
            raise InputError.at(path, exc.reason, line=n) from None
        if not isinstance(obj, dict):
            raise InputError.at(path, f"a JSON {type(obj).__name__}, expected an object (a "
                                "message, an item, a record or an OTLP export per line)", line=n)
        lines.append(obj)
    return Source(lines, path, json_lines=True)


def load_json(path: Path) -> Any:
    """Parse a whole JSON file, with one clear error for a missing, non-UTF-8 or bad file
    (what ``ingest taubench`` reads a trajectory file with)."""
    data = input_file(path, "a JSON file").read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError.at(path, not_utf8(data, exc)) from None
    return parse_json(text, path)
