"""Reading the release's inputs while collecting every bad record, not just the first.

A release is refused as a whole, with every problem listed, so the readers here report a
record that does not parse as a failure (file, line, record id, rule) and go on. A line that
is not JSON at all still stops the read: the file itself is then broken.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from mtcabench.graph import Violation
from mtcabench.io import format_validation_error, iter_json_lines
from mtcabench.model import Candidate, Conversation, Record, ReviewDecision

R = TypeVar("R", bound=Record)


def _read(path: Path, record_type: type[R]) -> tuple[list[tuple[int, R]], list[Violation]]:
    records: list[tuple[int, R]] = []
    failures: list[Violation] = []
    for lineno, obj in iter_json_lines(path):
        try:
            records.append((lineno, record_type.model_validate(obj)))
        except ValidationError as exc:
            rid = obj.get("id") or "?"
            failures.append(Violation(f"{rid} ({path}:{lineno})", "record-schema",
                                      format_validation_error(exc)))
    return records, failures


def read_decisions(path: Path) -> tuple[list[tuple[int, ReviewDecision]], list[Violation]]:
    """Review decisions with their line numbers, and the lines that are not valid decisions."""
    return _read(Path(path), ReviewDecision)


def read_candidates(path: Path) -> tuple[list[Candidate], list[Violation]]:
    """Candidates (only used for the recipe), and the lines that are not valid candidates."""
    records, failures = _read(Path(path), Candidate)
    return [c for _, c in records], failures


def read_conversations(path: Path) -> tuple[dict[str, Conversation], list[Violation]]:
    """Conversations by id; invalid records and duplicate ids are failures."""
    records, failures = _read(Path(path), Conversation)
    out: dict[str, Conversation] = {}
    for lineno, conv in records:
        if conv.id in out:
            failures.append(Violation(f"{conv.id} ({path}:{lineno})", "duplicate-conversation",
                                      "conversation id appears more than once"))
            continue
        out[conv.id] = conv
    return out, failures
