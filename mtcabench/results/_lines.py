"""One line of a submission as the published schema reads it, and the wrong-file messages.

Strict types (a field of the wrong JSON type is refused, never coerced), a number with no
fraction read as an integer and the header's ``created_at`` as an RFC 3339 time (as JSON
Schema reads them); a line of another record kind, or a file that is one JSON document,
named for what it is.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from mtcabench.errors import InputError
from mtcabench.io import format_validation_error, is_json_document_error, what_json_document
from mtcabench.model import KIND_FILES, SubmissionHeader

#: What a record of another kind means, for the wrong-file message.
_OTHER_KINDS = {k: v for k, v in KIND_FILES.items() if k not in ("submission", "prediction")}


_DATETIME = TypeAdapter(datetime)


def validate_line(path: Path, lineno: int, obj: dict, record_type):
    """One line as ``record_type``, strictly: a field of the wrong JSON type is refused.

    pydantic's strict mode does the refusing. Two things JSON gives that strict mode would
    refuse are read as the schema reads them: a number with no fraction is an integer, and
    the header's ``created_at`` is an ISO 8601 string.
    """
    try:
        try:
            return record_type.model_validate(_header_time(obj), strict=True)
        except ValidationError:
            as_json = _integral_numbers(obj)
            if as_json is obj:
                raise
            return record_type.model_validate(_header_time(as_json), strict=True)
    except ValidationError as exc:
        rid = obj.get("span_id")
        raise InputError.at(path, format_validation_error(exc), line=lineno,
                            record=str(rid) if isinstance(rid, str) and rid else None) from None


#: The schema's ``date-time`` format (RFC 3339): a date, ``T``, a time, and an offset.
_RFC3339 = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?"
                      r"([Zz]|[+-][0-9]{2}:[0-9]{2})")


def _header_time(obj: dict) -> dict:
    """``created_at`` parsed, when it is an RFC 3339 string; anything else is left for strict
    validation to refuse (strict mode takes no string for a datetime), naming the field."""
    value = obj.get("created_at")
    if obj.get("kind") != SubmissionHeader.KIND or not isinstance(value, str) or \
            not _RFC3339.fullmatch(value):
        return obj
    try:
        return {**obj, "created_at": _DATETIME.validate_strings(value, strict=True)}
    except ValidationError:
        return obj


def _integral(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _integral_numbers(obj: dict) -> dict:
    """``obj`` with integral floats made integers where the schema wants integers (a copy,
    or ``obj`` itself when there is none)."""
    out = obj
    if isinstance(obj.get("schema_version"), float):
        out = {**obj, "schema_version": _integral(obj["schema_version"])}
    edges = obj.get("edges")
    if isinstance(edges, list) and any(
        isinstance(e, dict) and (isinstance(e.get("child"), float)
                                 or isinstance(e.get("parent"), float)) for e in edges
    ):
        out = {**out, "edges": [
            {**e, "child": _integral(e.get("child")), "parent": _integral(e.get("parent"))}
            if isinstance(e, dict) and ("child" in e and "parent" in e) else e
            for e in edges]}
    return out


def wrong_kind(path: Path, lineno: int, kind: object) -> InputError:
    what = _OTHER_KINDS.get(kind) if isinstance(kind, str) else None
    if what:
        return InputError.at(path, f"this is {what} (kind {kind!r}), not a submission; a "
                             "submission's lines are kind 'prediction' after an optional "
                             "'submission' header", line=lineno)
    return InputError.at(path, f"unknown record kind {kind!r}; a submission's lines are kind "
                         "'prediction' after an optional 'submission' header", line=lineno)


def explain_json_document(path: Path, exc: InputError) -> InputError:
    """A pretty-printed JSON file fails on line 1 or 2: say what it is, and what is read."""
    what = what_json_document(path) if is_json_document_error(exc) else None
    if what is None:
        return exc
    return InputError(f"{path}: this is {what}, not a submission; score reads a submission: "
                      "JSON Lines, an optional header line then one prediction per line "
                      "(see docs/scoring.md)")
