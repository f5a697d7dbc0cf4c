"""The submission format: reading, checking and writing a submission file, and its run key.

Every reader and writer of a submission goes through this module: ``trace`` writes one
(:func:`write_submission`), ``trace-merge`` reads shards and writes their union, ``score``
reads one against a benchmark. The records are :class:`~mtcabench.model.SubmissionHeader`
and :class:`~mtcabench.model.SubmissionEntry`; the published schema of a line is
``submission.schema.json`` (:mod:`mtcabench.results.schema`).

A submission is JSON Lines: an optional header (``kind: "submission"``) on the first line,
then one :class:`~mtcabench.model.SubmissionEntry` per span (``kind`` may be left out). Every
problem that could change a score is an error naming the file, line and span; the few that
cannot (see :data:`TOLERATED`) are counted and reported as warnings.

Lines are validated strictly, as the published schema (``submission.schema.json``) says: a
field of the wrong JSON type is refused, never coerced (``"child": "10"``, ``"parent": true``,
``"score": "0.9"``). A number with no fraction is an integer (``4.0`` is ``4``), as in JSON
Schema.

This module only reads and checks: a :class:`Submission` is what the file says, and scoring
happens after, in the scorer (:func:`mtcabench.results.metrics.score_span`). Read against a
benchmark, the file is streamed: each line is checked against its span as it is read and
handed to ``each`` (the scorer reduces it to its counts there), only the entries asked for
with ``keep`` are held, and a line is never longer than a valid one can be, so memory is
bounded by the benchmark, not by the submission.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtcabench.benchmark import Benchmark, same_origin
from mtcabench.errors import InputError
from mtcabench.io import atomic_write, dump_record, iter_json_lines
from mtcabench.model import (
    BenchmarkSpan,
    Conversation,
    SubmissionEntry,
    SubmissionHeader,
    parse_span_id,
)
from mtcabench.results._lines import explain_json_document, validate_line, wrong_kind

#: Issues that are tolerated, each counted and listed in the report: code -> what happens.
TOLERATED: dict[str, str] = {
    "no-header": "the file has no header line; the submission is named after the file",
    "duplicate-edge": "a span lists the same (child, parent) edge more than once; it counts once",
    "missing-span": "a benchmark span has no line in the submission; it is scored as empty",
    "skipped-span": "a line says the span was skipped (skipped reason); it is scored as empty",
    "other-benchmark": "the header names another benchmark than the one scored against; its "
                       "span ids are all in this one, so it was scored: check that it is the "
                       "benchmark meant",
}

#: The most evidence sentences an edge may list (the evaluator writes 3 by default).
MAX_SENTENCES = 16


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
    """A parsed submission: its header, where each span's line is, counted warnings, and the
    entries kept (every line's, or those asked for with ``keep``). It holds no score.
    """

    path: Path
    header: SubmissionHeader | None
    lines: dict[str, int]  # span id -> line number, for every prediction line
    skipped: set[str]  # span ids of the lines marked skipped
    warnings: Warnings
    entries: dict[str, SubmissionEntry] = field(default_factory=dict)
    checked: Benchmark | None = field(default=None, repr=False)  # the benchmark checked against

    @property
    def complete(self) -> bool:
        """Whether every prediction line's entry is held (read without ``keep``)."""
        return len(self.entries) == len(self.lines)

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

    def status(self, span_id: str) -> str:
        """predicted, skipped or missing (no line)."""
        if span_id not in self.lines:
            return "missing"
        return "skipped" if span_id in self.skipped else "predicted"

    def pairs(self, span_id: str) -> list[tuple[int, int]]:
        """Predicted ``(child, parent)`` pairs of a kept span; [] when missing or skipped."""
        entry = self.entries.get(span_id)
        if entry is None or entry.skipped:
            return []
        return [(e.child, e.parent) for e in entry.edges]


def max_line_bytes(benchmark: Benchmark) -> int:
    """The longest line a valid submission for ``benchmark`` can need, with room to spare.

    A prediction lists at most every (child, parent) pair of the largest conversation (each
    edge well under 256 bytes, a long float score included, and under 96 more per sentence of
    its evidence); 4 MiB more leave room for a header's parameters and notes, long span ids
    and skip reasons.
    """
    most = max((len(c.turns) * (len(c.turns) - 1) // 2 for c in benchmark.conversations.values()),
               default=0)
    return 4 * 2**20 + (256 + 96 * MAX_SENTENCES) * most


#: Called with each prediction line read against a benchmark, once it is checked.
EachEntry = Callable[[BenchmarkSpan, Conversation, SubmissionEntry], None]


def read_submission(
    path: str | Path,
    benchmark: Benchmark | None = None,
    *,
    keep: Iterable[str] | None = None,
    each: EachEntry | None = None,
) -> Submission:
    """Parse a submission file; raises InputError on the first problem (file, line, reason).

    Every entry is kept, or with ``keep`` only those of its span ids (``keep=()``: none).
    With a ``benchmark``, each line is also checked against its span as it is read (see
    :func:`check_entry`) and then handed to ``each`` with its span and conversation: that is
    how the scorer streams a file (it keeps counts, not entries).
    """
    path = Path(path)
    if each is not None and benchmark is None:
        raise ValueError("each needs a benchmark to check the lines against")
    keep = None if keep is None else set(keep)
    sub = Submission(path, None, {}, set(), Warnings())
    index = benchmark.span_index() if benchmark is not None else None
    first = True
    try:
        for lineno, record in _records(path, benchmark, index):
            if isinstance(record, SubmissionHeader):
                if not first:
                    raise InputError.at(path, "a submission header is only allowed on the first "
                                        "line; is this two submissions concatenated?", line=lineno)
                sub.header = record
                first = False
                continue
            first = False
            entry = record
            _check_entry_alone(path, lineno, entry, sub.warnings)
            sid = entry.span_id
            if sid in sub.lines:
                raise InputError.at(path, f"duplicate span id (first given on line "
                                    f"{sub.lines[sid]}); keep one line per span",
                                    line=lineno, record=sid)
            sub.lines[sid] = lineno
            if entry.skipped:
                sub.skipped.add(sid)
            if index is not None:
                span = _span_of(path, lineno, sid, index, benchmark)
                conv = benchmark.conversation_of(span)
                check_entry(path, lineno, entry, span, conv)
                if each is not None:
                    each(span, conv, entry)
            if keep is None or sid in keep:
                sub.entries[sid] = entry
    except InputError as exc:
        raise explain_json_document(path, exc) from None
    if first:
        raise InputError(f"{path}: empty file, no predictions; a submission has one JSON line "
                         "per span (see docs/scoring.md)")
    if sub.header is None:
        sub.warnings.add("no-header", path.name)
    elif benchmark is not None and sub.header.benchmark and \
            not same_origin(sub.header.benchmark, benchmark.origin):
        sub.warnings.add("other-benchmark", f"header: {_short(sub.header.benchmark)}; scored "
                         f"against: {_short(benchmark.origin)}")
    if benchmark is not None:
        _count_missing(sub, benchmark)
        sub.checked = benchmark
    return sub


def _records(path: Path, benchmark: Benchmark | None,
             index: dict[str, BenchmarkSpan] | None) -> Iterator[tuple[int, Any]]:
    """Each line as a validated header or entry, with its line number."""
    cap = max_line_bytes(benchmark) if benchmark is not None else None
    for lineno, obj in iter_json_lines(path, max_line_bytes=cap):
        kind = obj.get("kind", SubmissionEntry.KIND)
        if kind == SubmissionHeader.KIND:
            yield lineno, validate_line(path, lineno, obj, SubmissionHeader)
        elif kind == SubmissionEntry.KIND:
            if index is not None:
                _check_edge_count(path, lineno, obj, index, benchmark)
            yield lineno, validate_line(path, lineno, obj, SubmissionEntry)
        else:
            raise wrong_kind(path, lineno, kind)


def _check_entry_alone(path: Path, lineno: int, entry: SubmissionEntry, warnings: Warnings) -> None:
    """Checks that need no benchmark: finite scores, skipped without edges, duplicates."""
    seen: set[tuple[int, int]] = set()
    for e in entry.edges:
        if e.score is not None and not math.isfinite(e.score):
            raise InputError.at(path, f"edge {e.child}->{e.parent} has score {e.score}; scores "
                                "must be finite numbers (or left out)", line=lineno,
                                record=entry.span_id)
        for x in e.sentences or []:
            if not math.isfinite(x.score):
                raise InputError.at(path, f"edge {e.child}->{e.parent}: a sentence has score "
                                    f"{x.score}; scores must be finite numbers", line=lineno,
                                    record=entry.span_id)
        if len(e.sentences or []) > MAX_SENTENCES:
            raise InputError.at(path, f"edge {e.child}->{e.parent} lists {len(e.sentences)} "
                                f"sentences; give at most the best {MAX_SENTENCES}",
                                line=lineno, record=entry.span_id)
        if (e.child, e.parent) in seen:
            warnings.add("duplicate-edge", f"line {lineno}: {e.child}->{e.parent}")
        seen.add((e.child, e.parent))
    if entry.skipped and entry.edges:
        raise InputError.at(path, f"the span is marked skipped ({_short(entry.skipped)!r}) but "
                            f"has {len(entry.edges)} edge(s); give either edges or a skipped "
                            "reason", line=lineno, record=entry.span_id)
    if entry.skipped:
        warnings.add("skipped-span", f"{entry.span_id}: {_short(entry.skipped)}")


def _span_of(path: Path, lineno: int, span_id: str, index: dict[str, BenchmarkSpan],
             benchmark: Benchmark) -> BenchmarkSpan:
    span = index.get(span_id)
    if span is None:
        raise InputError.at(path, f"span id is not in the benchmark {benchmark.origin} "
                            f"({len(index)} spans{_why_unknown(span_id, benchmark)}); was this "
                            "submission made for another benchmark or version?",
                            line=lineno, record=span_id)
    return span


def _why_unknown(span_id: str, benchmark: Benchmark) -> str:
    """What a span id that is not in the benchmark names (parsed from the right)."""
    try:
        conv_id, turn, start, end = parse_span_id(span_id)
    except ValueError:
        return "; this is not a span id, <conversation id>#<turn>:<start>-<end>"
    if conv_id not in benchmark.conversations:
        return f"; conversation {conv_id!r} is not in it"
    return (f"; it has conversation {conv_id!r} but no span at turn {turn}, characters "
            f"{start}-{end}")


def _check_edge_count(path: Path, lineno: int, obj: dict, index: dict[str, BenchmarkSpan],
                      benchmark: Benchmark) -> None:
    """Refuse, before validating them one by one, more edges than the conversation has pairs."""
    sid, edges = obj.get("span_id"), obj.get("edges")
    if isinstance(sid, str) and isinstance(edges, list) and sid in index:
        conv = benchmark.conversation_of(index[sid])
        _check_count(path, lineno, sid, len(edges), len(conv.turns))


def _check_count(path: Path, lineno: int, span_id: str, n_edges: int, n_turns: int) -> None:
    # Duplicates are tolerated (counted), but no more of them than there are distinct
    # pairs: that bounds what one line may hold by the benchmark, not by the submission.
    pairs = n_turns * (n_turns - 1) // 2
    if n_edges > pairs:
        raise InputError.at(path, f"the span lists {n_edges} edges, more than the {pairs} "
                            f"possible (child, parent) pairs of its conversation's {n_turns} "
                            "turns; list each edge once", line=lineno, record=span_id)


def check_entry(path: Path, lineno: int, entry: SubmissionEntry, span: BenchmarkSpan,
                conversation: Conversation) -> None:
    """The checks of one prediction against its span: every edge links two turns of the
    conversation, points backwards (parent < child) and starts no later than the target."""
    n_turns = len(conversation.turns)
    target = span.graph.target
    sid = entry.span_id
    _check_count(path, lineno, sid, len(entry.edges), n_turns)
    for e in entry.edges:
        edge = f"edge {e.child}->{e.parent}"
        for x in (e.child, e.parent):
            if not 0 <= x < n_turns:
                raise InputError.at(path, f"{edge}: turn {x} does not exist (the conversation "
                                    f"has turns 0 to {n_turns - 1})", line=lineno, record=sid)
        if e.parent >= e.child:
            raise InputError.at(path, f"{edge} points forwards; an edge goes from a turn to "
                                "an earlier one (parent < child)", line=lineno, record=sid)
        if e.child > target:
            raise InputError.at(path, f"{edge} starts at turn {e.child}, after the target "
                                f"turn {target}; provenance lies before the target",
                                line=lineno, record=sid)
        size = len(conversation.turns[e.parent].text)
        for x in e.sentences or []:
            if not x.start < x.end <= size:
                raise InputError.at(path, f"{edge}: sentence {x.start}-{x.end} is not a "
                                    f"range of turn {e.parent}'s text ({size} characters)",
                                    line=lineno, record=sid)


def _count_missing(sub: Submission, benchmark: Benchmark) -> list[str]:
    missing = benchmark.missing_from(sub.lines)
    sub.warnings.replace("missing-span", missing)
    return missing


def _short(text: str | None, limit: int = 120) -> str:
    text = text or ""
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def check_against_benchmark(submission: Submission, benchmark: Benchmark) -> list[str]:
    """Check every entry against the benchmark; returns the span ids missing (counted).

    For a submission read without a benchmark (every entry kept): each entry is checked with
    :func:`check_entry`. One read with this benchmark was checked as it was read.
    Errors: a span id the benchmark does not have; more edges than the conversation has turn
    pairs; an edge to a turn outside the conversation, one that does not point backwards
    (parent < child), one that starts after the target turn.
    """
    if submission.checked is benchmark:
        return benchmark.missing_from(submission.lines)
    if submission.checked is not None:
        raise ValueError("this submission was read against another benchmark; read it again")
    if not submission.complete:
        raise ValueError("this submission was read with only some entries kept; read it again "
                         "without keep")
    index = benchmark.span_index()
    path = submission.path
    for sid, entry in submission.entries.items():
        lineno = submission.lines[sid]
        span = _span_of(path, lineno, sid, index, benchmark)
        check_entry(path, lineno, entry, span, benchmark.conversation_of(span))
    submission.checked = benchmark
    return _count_missing(submission, benchmark)


# --------------------------------------------------------------------------- writing


def write_submission(path: str | Path, header: SubmissionHeader,
                     entries: Iterable[SubmissionEntry | dict]) -> int:
    """Write a submission file atomically: the header line, then one line per entry (a
    record, or its dumped form); returns the number of entries."""
    n = 0
    with atomic_write(Path(path)) as fh:
        fh.write(json.dumps(dump_record(header), ensure_ascii=False) + "\n")
        for e in entries:
            obj = dump_record(e) if isinstance(e, SubmissionEntry) else e
            fh.write(json.dumps(obj, ensure_ascii=False) + "\n")
            n += 1
    return n


# --------------------------------------------------------------------------- the run key

#: The header fields that say which run made a submission: the shards of one run agree on
#: them (``trace-merge``), and an unfinished run resumes only with the same (``trace``).
RUN_KEY = ("method", "scorer", "model", "parameters", "benchmark")


def run_key(header: SubmissionHeader | Mapping[str, Any]) -> dict[str, Any]:
    """The :data:`RUN_KEY` fields of a header (a record, or a header line as read), as JSON
    values, so that a record and a line read back compare equal."""
    obj = dump_record(header) if isinstance(header, SubmissionHeader) else header
    return {k: obj.get(k) for k in RUN_KEY}


def shard_of(header: SubmissionHeader | Mapping[str, Any]) -> dict[str, int] | None:
    """The shard mark of a header (``{"index": K, "count": N}``), None for a whole run."""
    notes = header.notes if isinstance(header, SubmissionHeader) else header.get("notes")
    return (notes or {}).get("shard")
