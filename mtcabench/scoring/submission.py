"""Reading and checking a submission file against a benchmark, with tolerated issues counted.

A submission is JSON Lines: an optional header (``kind: "submission"``) on the first line,
then one :class:`~mtcabench.model.SubmissionEntry` per span (``kind`` may be left out). Every
problem that could change a score is an error naming the file, line and span; the few that
cannot (see :data:`TOLERATED`) are counted and reported as warnings.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from mtcabench.benchmark import Benchmark
from mtcabench.errors import InputError
from mtcabench.io import format_validation_error, iter_json_lines
from mtcabench.model import SubmissionEntry, SubmissionHeader

#: Issues that are tolerated, each counted and listed in the report: code -> what happens.
TOLERATED: dict[str, str] = {
    "no-header": "the file has no header line; the submission is named after the file",
    "duplicate-edge": "a span lists the same (child, parent) edge more than once; it counts once",
    "missing-span": "a benchmark span has no line in the submission; it is scored as empty",
    "skipped-span": "a line says the span was skipped (skipped reason); it is scored as empty",
}

#: What a record of another kind means, for the wrong-file message.
_OTHER_KINDS = {
    "conversation": "a conversations file",
    "span": "a benchmark spans file",
    "proposal": "a proposals file",
    "candidate": "a candidates file",
    "review": "a review decisions file",
    "score-report": "a score report",
    "score-comparison": "a score comparison",
}


@dataclass
class Warnings:
    """Tolerated issues: how many of each, with a few examples."""

    counts: Counter = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def add(self, code: str, example: str, count: int = 1) -> None:
        self.counts[code] += count
        shown = self.examples.setdefault(code, [])
        if len(shown) < 5:
            shown.append(example)

    def replace(self, code: str, examples: list[str]) -> None:
        """Set one code's count and examples afresh (checks may run more than once)."""
        self.counts[code] = len(examples)
        self.examples[code] = examples[:5]

    def as_list(self) -> list[dict]:
        return [
            {"code": code, "count": self.counts[code], "meaning": TOLERATED[code],
             "examples": self.examples.get(code, [])}
            for code in TOLERATED
            if self.counts[code]
        ]


def submission_name(path: str | Path) -> str:
    """The name of a submission's output files: its file name without ``.jsonl``."""
    stem = Path(path).name
    for suffix in (".jsonl", ".json", ".submission"):
        stem = stem.removesuffix(suffix)
    return stem or "submission"


@dataclass
class Submission:
    """A parsed submission: its header, one entry per span id, and counted warnings."""

    path: Path
    header: SubmissionHeader | None
    entries: dict[str, SubmissionEntry]
    lines: dict[str, int]
    warnings: Warnings

    @property
    def name(self) -> str:
        """File-system-safe name (the file's stem), used for output files."""
        return submission_name(self.path)

    @property
    def label(self) -> str:
        """Display label: method and base scorer from the header, else the file name."""
        if self.header is None:
            return self.name
        return f"{self.header.method}/{self.header.scorer}" if self.header.scorer \
            else self.header.method

    def pairs(self, span_id: str) -> list[tuple[int, int]]:
        """Predicted ``(child, parent)`` pairs of a span; [] when missing or skipped."""
        entry = self.entries.get(span_id)
        if entry is None or entry.skipped:
            return []
        return [(e.child, e.parent) for e in entry.edges]


def read_submission(path: str | Path) -> Submission:
    """Parse a submission file; raises InputError on the first problem (file, line, reason)."""
    path = Path(path)
    header: SubmissionHeader | None = None
    entries: dict[str, SubmissionEntry] = {}
    lines: dict[str, int] = {}
    warnings = Warnings()
    first = True
    try:
        for lineno, obj in iter_json_lines(path):
            kind = obj.get("kind", SubmissionEntry.KIND)
            if kind == SubmissionHeader.KIND:
                if not first:
                    raise InputError.at(path, "a submission header is only allowed on the first "
                                        "line; is this two submissions concatenated?", line=lineno)
                header = _validate(path, lineno, obj, SubmissionHeader)
            elif kind == SubmissionEntry.KIND:
                entry = _validate(path, lineno, obj, SubmissionEntry)
                _check_entry_alone(path, lineno, entry, warnings)
                if entry.span_id in entries:
                    raise InputError.at(path, f"duplicate span id (first given on line "
                                        f"{lines[entry.span_id]}); keep one line per span",
                                        line=lineno, record=entry.span_id)
                entries[entry.span_id] = entry
                lines[entry.span_id] = lineno
            else:
                raise _wrong_kind(path, lineno, kind)
            first = False
    except InputError as exc:
        raise _explain_json_document(path, exc) from None
    if first:
        raise InputError(f"{path}: empty file, no predictions; a submission has one JSON line "
                         "per span (see docs/scoring.md)")
    if header is None:
        warnings.add("no-header", path.name)
    return Submission(path, header, entries, lines, warnings)


def _validate(path: Path, lineno: int, obj: dict, record_type):
    try:
        return record_type.model_validate(obj)
    except ValidationError as exc:
        rid = obj.get("span_id")
        raise InputError.at(path, format_validation_error(exc), line=lineno,
                            record=str(rid) if rid else None) from None


def _check_entry_alone(path: Path, lineno: int, entry: SubmissionEntry, warnings: Warnings) -> None:
    """Checks that need no benchmark: finite scores, skipped without edges, duplicates."""
    seen: set[tuple[int, int]] = set()
    for e in entry.edges:
        if e.score is not None and not math.isfinite(e.score):
            raise InputError.at(path, f"edge {e.child}->{e.parent} has score {e.score}; scores "
                                "must be finite numbers (or left out)", line=lineno,
                                record=entry.span_id)
        if (e.child, e.parent) in seen:
            warnings.add("duplicate-edge", f"line {lineno}: {e.child}->{e.parent}")
        seen.add((e.child, e.parent))
    if entry.skipped and entry.edges:
        raise InputError.at(path, f"the span is marked skipped ({entry.skipped!r}) but has "
                            f"{len(entry.edges)} edge(s); give either edges or a skipped reason",
                            line=lineno, record=entry.span_id)


def _wrong_kind(path: Path, lineno: int, kind: object) -> InputError:
    what = _OTHER_KINDS.get(kind) if isinstance(kind, str) else None
    if what:
        return InputError.at(path, f"this is {what} (kind {kind!r}), not a submission; a "
                             "submission's lines are kind 'prediction' after an optional "
                             "'submission' header", line=lineno)
    return InputError.at(path, f"unknown record kind {kind!r}; a submission's lines are kind "
                         "'prediction' after an optional 'submission' header", line=lineno)


def _explain_json_document(path: Path, exc: InputError) -> InputError:
    """A pretty-printed JSON file fails on line 1 or 2: say what it is instead."""
    if getattr(exc, "line", None) not in (1, 2) or "malformed JSON" not in exc.message:
        return exc
    try:
        if path.stat().st_size > 100_000_000:
            return exc
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return exc
    kind = doc.get("kind") if isinstance(doc, dict) else None
    what = _OTHER_KINDS.get(kind, f"a JSON {type(doc).__name__}") if kind else \
        f"one JSON {type(doc).__name__} document"
    return InputError(f"{path}: this is {what}, not a submission (JSON Lines, one prediction "
                      "per line; see docs/scoring.md)")


def check_against_benchmark(submission: Submission, benchmark: Benchmark) -> list[str]:
    """Check every entry against the benchmark; returns the span ids missing (counted).

    Errors: a span id the benchmark does not have; an edge to a turn outside the
    conversation, one that does not point backwards (parent < child), one that starts after
    the target turn.
    """
    gold = benchmark.span_index()
    path = submission.path
    for span_id, entry in submission.entries.items():
        lineno = submission.lines[span_id]
        span = gold.get(span_id)
        if span is None:
            raise InputError.at(path, f"span id is not in the benchmark {benchmark.origin} "
                                f"({len(gold)} spans); was this submission made for another "
                                "benchmark or version?", line=lineno, record=span_id)
        n_turns = len(benchmark.conversations[span.conversation_id].turns)
        target = span.graph.target
        for e in entry.edges:
            edge = f"edge {e.child}->{e.parent}"
            for x in (e.child, e.parent):
                if not 0 <= x < n_turns:
                    raise InputError.at(path, f"{edge}: turn {x} does not exist (the conversation "
                                        f"has turns 0 to {n_turns - 1})", line=lineno,
                                        record=span_id)
            if e.parent >= e.child:
                raise InputError.at(path, f"{edge} points forwards; an edge goes from a turn to "
                                    "an earlier one (parent < child)", line=lineno, record=span_id)
            if e.child > target:
                raise InputError.at(path, f"{edge} starts at turn {e.child}, after the target "
                                    f"turn {target}; provenance lies before the target",
                                    line=lineno, record=span_id)
    missing = [s.id for s in benchmark.spans if s.id not in submission.entries]
    submission.warnings.replace("missing-span", missing)
    submission.warnings.replace("skipped-span", [
        f"{span_id}: {entry.skipped}" for span_id, entry in submission.entries.items()
        if entry.skipped])
    return missing
