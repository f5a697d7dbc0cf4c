"""The score report and the comparison, as versioned records written as JSON.

``mtcabench score`` writes them (``NAME.score.json``, ``compare-A-vs-B.score.json``); the
release stage reads reports (``release build --scores``) with :func:`read_score_report`.

A report states everything needed to read its numbers: the metric formulas, which
average each number is, the bootstrap settings, how many spans were missing, and every
tolerated issue counted. Rows are the overall group and one per dependency type, source
dataset and gold depth, and, where the benchmark holds counterfactual spans, one per origin
(real, counterfactual) and per origin and kind (hallucination or other).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from mtcabench.errors import InputError
from mtcabench.io import parse_json
from mtcabench.model import Record, _Model

#: Breakdowns in report order, with their display names.
BREAKDOWNS: dict[str, str] = {
    "overall": "overall",
    "dependency_type": "dependency type",
    "source": "source dataset",
    "depth": "gold depth",
    "domain": "domain",
    "agent_model": "agent model",
    "origin": "origin",
    "origin_hallucination": "origin and kind",
    "span_kind": "span kind",
    "claim_kind": "claim kind",
}


class Estimate(_Model):
    """A value with its bootstrap interval; None where undefined (e.g. no such spans)."""

    value: float | None = Field(description="The average over the row's spans.")
    low: float | None = Field(default=None, description="Lower end of the interval.")
    high: float | None = Field(default=None, description="Upper end of the interval.")


class MetricEstimates(_Model):
    """One metric under both averages."""

    macro: Estimate = Field(description="Mean of per-span values.")
    micro: Estimate = Field(description="Ratio of counts summed over the row's spans.")


class ReportRow(_Model):
    """One group of spans: overall, or one dependency type, source dataset or gold depth."""

    breakdown: str = Field(description="overall, dependency_type, source, depth; domain and "
                           "agent_model where the benchmark holds more than one; origin and "
                           "origin_hallucination where it holds counterfactual spans; span_kind "
                           "and claim_kind (claims only) where it holds claims.")
    group: str = Field(description="The group's value, e.g. 'chained' or '3'; 'all' overall.")
    spans: int = Field(description="Benchmark spans in the group.")
    missing: int = Field(description="Of which absent from the submission or skipped (scored empty).")
    hallucination_spans: int = Field(description="Of which hallucination spans.")
    metrics: dict[str, MetricEstimates] = Field(description="Every metric by name.")

    @property
    def title(self) -> str:
        if self.breakdown == "overall":
            return "overall"
        return f"{BREAKDOWNS.get(self.breakdown, self.breakdown)}: {self.group}"


class SubmissionInfo(_Model):
    """Which submission was scored and how it was produced (from its header)."""

    path: str
    name: str = Field(description="File name without extension; names the output files.")
    label: str = Field(description="Display label: method/scorer, or the file name.")
    method: str | None = None
    scorer: str | None = None
    model: str | None = None
    parameters: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime | None = None


class BootstrapSettings(_Model):
    resamples: int = Field(description="Resamples per row (0: no intervals).")
    seed: int = Field(description="Fixed seed; each row's draws also depend on its name.")
    confidence: float = Field(description="Interval coverage, e.g. 0.95.")
    method: str = Field(
        default="percentile bootstrap: a row's spans drawn with replacement",
        description="How intervals are computed.")


class WarningCount(_Model):
    """A tolerated issue (see docs/scoring.md), counted."""

    code: str
    count: int
    meaning: str
    examples: list[str] = Field(default_factory=list)


class SpanCounts(_Model):
    benchmark: int = Field(description="Spans in the benchmark.")
    predicted: int = Field(description="Spans with a prediction line (not skipped).")
    missing: int = Field(description="Spans absent from the submission (scored empty).")
    skipped: int = Field(description="Spans the submission skipped (scored empty).")


class FloorReport(_Model):
    """A model-free floor (:mod:`mtcabench.baselines`) scored on the submission's spans.

    Same rows, metrics, averages and bootstrap draws as the submission's report, so that a
    number can be read against the floor beside it: a method's score means something only
    above its floors.
    """

    method: str = Field(description="The floor's name, as `trace --method` calls it.")
    label: str = Field(description="Display label, e.g. 'floor: recency (model-free)'.")
    description: str = Field(description="What the floor predicts.")
    parameters: dict[str, Any] = Field(default_factory=dict)
    rows: list[ReportRow] = Field(description="The report's rows, for the floor's graphs.")

    def row(self, breakdown: str, group: str = "all") -> ReportRow:
        for r in self.rows:
            if r.breakdown == breakdown and r.group == group:
                return r
        raise KeyError(f"no row {breakdown}={group}")


class ScoreReport(Record):
    """The score of one submission against one benchmark."""

    KIND: ClassVar[str] = "score-report"

    submission: SubmissionInfo
    benchmark: str = Field(description="Benchmark path or Hub id.")
    spans: SpanCounts
    bootstrap: BootstrapSettings
    definitions: dict[str, str] = Field(description="Formula of each metric.")
    averages: dict[str, str] = Field(description="What macro and micro mean.")
    warnings: list[WarningCount] = Field(default_factory=list)
    rows: list[ReportRow]
    floors: list[FloorReport] = Field(
        default_factory=list,
        description="The model-free floors recency, first-user and string-match on the same spans, with the "
                    "same metrics and intervals; empty when scored with --no-floors (and in "
                    "reports written before floors were added).")

    def row(self, breakdown: str, group: str = "all") -> ReportRow:
        for r in self.rows:
            if r.breakdown == breakdown and r.group == group:
                return r
        raise KeyError(f"no row {breakdown}={group}")

    def floor(self, method: str) -> FloorReport:
        for f in self.floors:
            if f.method == method:
                return f
        raise KeyError(f"no floor {method} (scored with --no-floors?)")


def read_score_report(path: str | Path) -> ScoreReport:
    """Read a score report (``mtcabench score``'s ``.score.json``).

    A file that cannot be read or is not JSON is an InputError naming it; JSON that is not a
    score report raises pydantic's ValidationError, for the caller to say what it expected.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError.at(path, f"cannot read the score report ({exc})") from None
    return ScoreReport.model_validate(parse_json(text, path))


class Difference(_Model):
    """``a - b`` with its paired-bootstrap interval and two-sided p-value."""

    value: float | None
    low: float | None = None
    high: float | None = None
    p_value: float | None = Field(default=None, description="Share of resamples on the other "
                                  "side of 0, doubled (two-sided); None without resamples.")


class ComparedMetric(_Model):
    """One metric under one average for both submissions."""

    a: Estimate
    b: Estimate
    difference: Difference


class ComparisonRow(_Model):
    breakdown: str
    group: str
    spans: int
    missing_a: int
    missing_b: int
    hallucination_spans: int
    metrics: dict[str, dict[str, ComparedMetric]] = Field(
        description="metric -> average (macro, micro) -> a, b and a - b.")

    @property
    def title(self) -> str:
        if self.breakdown == "overall":
            return "overall"
        return f"{BREAKDOWNS.get(self.breakdown, self.breakdown)}: {self.group}"


class Comparison(Record):
    """Two submissions on the same benchmark, side by side, with a paired bootstrap."""

    KIND: ClassVar[str] = "score-comparison"

    a: ScoreReport
    b: ScoreReport
    benchmark: str
    bootstrap: BootstrapSettings
    difference: str = Field(default="a - b", description="Sign of every difference.")
    rows: list[ComparisonRow]

    def row(self, breakdown: str, group: str = "all") -> ComparisonRow:
        for r in self.rows:
            if r.breakdown == breakdown and r.group == group:
                return r
        raise KeyError(f"no row {breakdown}={group}")
