"""The card's Floors section: what a score on this release must beat, and reference scores.

The model-free baselines of :mod:`mtcabench.baselines` (every one of ``FLOORS``: ``recency``,
``first-user``, ``string-match``) are scored at build time on the released spans by
:mod:`mtcabench.results.floors` (the scores ``mtcabench score`` puts beside a submission's
rows) and averaged with the metrics table of
:mod:`mtcabench.results.metrics` (macro averages, the mean over spans), overall and by
dependency type; the card shows the metrics that name a card title there. This is
deterministic; string-match runs the lineage rules once per conversation, the bulk of the
seconds it takes on the full benchmark (docs/release.md).

Score reports written by ``mtcabench score`` (``release build --scores REPORT.json``, e.g.
Tokengeist and flat on this release) add the reference evaluator's rows beside them. They are
read with :func:`mtcabench.results.report.read_score_report` (the release stage does not
import the scorer); a report whose spans are not this release's is refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mtcabench.baselines import FLOORS
from mtcabench.benchmark import Benchmark
from mtcabench.graph import Violation
from mtcabench.io import format_validation_error
from mtcabench.model import BenchmarkSpan, Conversation, DependencyType, SpanOrigin
from mtcabench.results import METRICS, all_floor_scores, macro_averages, read_score_report


def card_metrics() -> dict[str, str]:
    """The metrics the card shows, with their column titles (their table entries' ``card``)."""
    return {name: m.card for name, m in METRICS.items() if m.card}


@dataclass(frozen=True)
class ScoreRow:
    """One line of the Floors tables: a method and its macro values by group."""

    label: str
    kind: str  # "model-free floor" or "evaluator"
    #: (metric, group) -> value; group is "all" or a dependency type; None: no such spans.
    values: dict[tuple[str, str], float | None]
    empty: int = 0  # spans scored empty (missing or skipped in the submission)
    parameters: dict[str, Any] = field(default_factory=dict)


def _groups(spans: list[BenchmarkSpan]) -> dict[str, list[int]]:
    out = {"all": list(range(len(spans)))}
    for t in DependencyType:
        out[t.value] = [i for i, s in enumerate(spans) if s.dependency_type is t]
    if any(s.origin is SpanOrigin.COUNTERFACTUAL for s in spans):
        # the hallucinations of each origin apart (only where there are counterfactuals)
        hal = DependencyType.HALLUCINATION
        out[_REAL_HAL] = [i for i, s in enumerate(spans)
                          if s.dependency_type is hal and s.origin is SpanOrigin.REAL]
        out[_COUNTERFACTUAL] = [i for i, s in enumerate(spans)
                                if s.origin is SpanOrigin.COUNTERFACTUAL]
    return out


_REAL_HAL = "real hallucination"
_COUNTERFACTUAL = "counterfactual"


def _report_row_key(group: str) -> tuple[str, str]:
    """The score report's row (breakdown, group) of a Floors column."""
    if group == "all":
        return ("overall", "all")
    if group == _REAL_HAL:
        return ("origin_hallucination", "real hallucination")
    if group == _COUNTERFACTUAL:
        return ("origin", "counterfactual")
    return ("dependency_type", group)


def floor_rows(spans: list[BenchmarkSpan], conversations: dict[str, Conversation]) -> list[ScoreRow]:
    """Each floor's macro averages of the card's metrics on ``spans``, overall and by type."""
    groups = _groups(spans)
    scores = all_floor_scores(Benchmark(conversations, spans, "release"))
    rows = []
    for name, floor in FLOORS.items():
        by_group = {g: macro_averages([scores[name][i] for i in idx]) if idx else {}
                    for g, idx in groups.items()}
        values = {(m, g): by_group[g].get(m) for m in card_metrics() for g in groups}
        rows.append(ScoreRow(f"`{name}`", "model-free floor", values,
                             parameters=dict(floor.parameters)))
    return rows


# --------------------------------------------------------------------------- score reports


def read_score_reports(paths: list[Path], spans: list[BenchmarkSpan]
                       ) -> tuple[list[ScoreRow], list[Violation]]:
    """The evaluator rows of the reports, and every report that is not one of this release.

    A report must score exactly the released spans: as many overall and of each dependency
    type. A file that is not JSON at all is an InputError (it is broken, not mismatched).
    """
    rows: list[ScoreRow] = []
    failures: list[Violation] = []
    counts = {g: len(idx) for g, idx in _groups(spans).items()}
    for path in paths:
        path = Path(path)
        try:
            report = read_score_report(path)
        except ValidationError as exc:
            failures.append(Violation(str(path), "score-report", "not a score report of "
                                      "`mtcabench score` (its .score.json): "
                                      + format_validation_error(exc)))
            continue
        by = {(r.breakdown, r.group): r for r in report.rows}
        theirs = {"all": by["overall", "all"].spans if ("overall", "all") in by else None}
        theirs.update({t.value: by[("dependency_type", t.value)].spans
                       if ("dependency_type", t.value) in by else 0 for t in DependencyType})
        if theirs != {g: counts[g] for g in theirs}:
            failures.append(Violation(
                str(path), "score-report",
                f"the report scores {theirs['all']} spans "
                f"({', '.join(f'{t.value} {theirs[t.value]}' for t in DependencyType)}), this "
                f"release has {counts['all']} ({', '.join(f'{t.value} {counts[t.value]}' for t in DependencyType)}); "
                "score the submission against this release (`mtcabench score S --benchmark "
                "RELEASE_FOLDER`) and build again with --force"))
            continue
        values: dict[tuple[str, str], float | None] = {}
        for m in card_metrics():
            for g in counts:
                row = by.get(_report_row_key(g))
                metric = row.metrics.get(m) if row is not None else None
                values[m, g] = metric.macro.value if metric is not None else None
        sub = report.submission
        label = " / ".join(f"`{x}`" for x in (sub.method or sub.label, sub.scorer) if x)
        if sub.model:
            label += f" on `{sub.model}`"
        rows.append(ScoreRow(label, "evaluator", values,
                             empty=report.spans.missing + report.spans.skipped,
                             parameters=sub.parameters))
    return rows, failures


# --------------------------------------------------------------------------- the section


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def floors_section(spans: list[BenchmarkSpan], floors: list[ScoreRow],
                   evaluated: list[ScoreRow]) -> list[str]:
    """The card's "Floors" section, as lines of Markdown."""
    counts = {g: len(idx) for g, idx in _groups(spans).items()}
    groups = list(counts)
    lines = [
        "## Floors",
        "",
        "The scores an attribution method has to beat on this release. The model-free floors "
        "read no model, only the conversation: its roles, its tool-call links and the values "
        "its turns copy (`mtcabench.baselines`; `mtcabench trace "
        + " ".join(f"--method {name}" for name in FLOORS)
        + "` writes them as submissions, and `mtcabench score` shows them beside every "
        "submission's rows, with intervals): "
        + "; ".join(f"`{f.name}`: {f.description.removeprefix('model-free: ')}"
                    for f in FLOORS.values())
        + ". A number means something only above its floor.",
        "",
        "Macro averages (the mean over spans, as `mtcabench score` reports them), overall and "
        "by gold dependency type; `-` where the release has no span of the type. The floors "
        "are computed when the release is built.",
        "",
    ]
    if _COUNTERFACTUAL in counts:
        lines += ["The last two columns are the hallucination spans of each origin apart: the "
                  "real ones (found by the lineage rules) and the counterfactual ones (made by "
                  "an edit); `mtcabench score` gives them with bootstrap intervals (its "
                  "`origin` rows).", ""]
    header_groups = [f"{'overall' if g == 'all' else g} ({counts[g]})" for g in groups]
    for metric, title in card_metrics().items():
        lines += [f"{title[0].upper()}{title[1:]}:", "",
                  "| method | kind | scored empty | " + " | ".join(header_groups) + " |",
                  "|---|---|---:|" + "---:|" * len(groups)]
        for row in [*floors, *evaluated]:
            lines.append(f"| {row.label} | {row.kind} | {row.empty} | "
                         + " | ".join(_f(row.values[metric, g]) for g in groups) + " |")
        lines.append("")
    if evaluated:
        lines += ["Evaluator rows come from the `mtcabench score` reports given to "
                  "`release build --scores`; spans a submission skipped (too long for the "
                  "model) or left out score as empty. Their settings:", ""]
        lines += [f"- {row.label}: `{json.dumps(row.parameters, sort_keys=True)}`"
                  for row in evaluated]
        lines.append("")
    else:
        lines += ["No evaluator scores were given when this release was built (`release build "
                  "--scores REPORT.json` adds the rows of `mtcabench score` reports, e.g. "
                  "Tokengeist and flat on this release).", ""]
    return lines
