"""Validation of record files: conversations on their own, graph records against them.

Used by ``mtcabench validate`` and by every stage that must refuse invalid graphs. All
violations are collected (not just the first) so that one run lists everything to fix.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mtcabench.errors import InputError
from mtcabench.graph import Violation, check_graph
from mtcabench.io import (
    is_json_document_error,
    iter_json_lines,
    load_conversations,
    read_records,
    what_json_document,
)
from mtcabench.model import KIND_FILES, RECORD_TYPES, Conversation


@dataclass
class ValidationReport:
    kind: str
    records: int = 0
    checked: int = 0
    skipped_rejected: int = 0
    violations: list[Violation] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations


#: What validate reads, for the messages that name a file it does not.
_READS = ("validate reads record files: JSON Lines, one record per line, of the kinds "
          + ", ".join(sorted(RECORD_TYPES)))


def file_kind(path: str | Path) -> str:
    """The ``kind`` of the first record of a file (files hold one kind). A file of another
    kind (an explain.json, a score report, one JSON document) is named for what it is."""
    try:
        for lineno, obj in iter_json_lines(path):
            kind = obj.get("kind")
            if isinstance(kind, str) and kind in RECORD_TYPES:
                return kind
            if isinstance(kind, str) and kind in KIND_FILES:
                raise InputError.at(path, f"this is {KIND_FILES[kind]} (kind {kind!r}), not a "
                                    f"record file; {_READS}", line=lineno)
            raise InputError.at(path, f"unknown record kind {kind!r}; expected one of "
                                f"{sorted(RECORD_TYPES)}", line=lineno)
    except InputError as exc:
        what = what_json_document(path) if is_json_document_error(exc) else None
        if what is None:
            raise
        raise InputError(f"{path}: this is {what}, not a record file; {_READS}") from None
    raise InputError(f"{path}: empty file")


def validate_file(path: str | Path, conversations: str | Path | None = None) -> ValidationReport:
    """Validate every record of ``path``; graph records need the conversations file."""
    kind = file_kind(path)
    report = ValidationReport(kind=kind)
    if kind == "conversation":
        # Parsing checks turn order and tool-call links; loading checks duplicate ids.
        report.records = report.checked = len(load_conversations(path))
        return report
    record_type = RECORD_TYPES[kind]
    if "graph" not in record_type.model_fields:
        report.records = report.checked = sum(1 for _ in read_records(path, record_type))
        return report
    if conversations is None:
        raise InputError(f"{path}: {kind} records hold graphs; pass --conversations FILE to "
                         "check them against their conversations")
    convs = load_conversations(conversations)
    seen: set[str] = set()
    for rec in read_records(path, record_type):
        report.records += 1
        if rec.id in seen:
            report.violations.append(Violation(rec.id, "duplicate-id", "id appears twice"))
        seen.add(rec.id)
        if getattr(rec, "status", "ok") != "ok":
            report.skipped_rejected += 1
            continue
        conv: Conversation | None = convs.get(rec.conversation_id)
        if conv is None:
            report.violations.append(Violation(rec.id, "conversation-exists",
                                               f"conversation {rec.conversation_id} not found"))
            continue
        if rec.graph is None:
            report.violations.append(Violation(rec.id, "has-graph", "record has no graph"))
            continue
        report.checked += 1
        report.violations.extend(check_graph(rec.graph, conv, rec.span, record=rec.id))
    return report
