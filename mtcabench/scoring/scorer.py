"""Scoring a submission against a benchmark: per-span scores, rows, intervals, comparisons."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mtcabench.baselines import FLOORS
from mtcabench.benchmark import Benchmark, load_benchmark, origin_paths
from mtcabench.errors import InputError
from mtcabench.io import resamples_problem, seed_problem
from mtcabench.model import (
    NO_AGENT,
    BenchmarkSpan,
    ClaimKind,
    Conversation,
    DependencyType,
    SpanKind,
    SpanOrigin,
    SubmissionEntry,
    SubmissionHeader,
)
from mtcabench.scoring.bootstrap import (
    CONFIDENCE,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    interval,
    paired_p_value,
    resampled_averages,
    row_rng,
)
from mtcabench.results.floors import floor_scores
from mtcabench.results.metrics import (
    AVERAGES,
    METRICS,
    SpanScore,
    columns,
    definitions,
    point,
    score_span,
    span_matrix,
)
from mtcabench.results.report import (
    BootstrapSettings,
    ComparedMetric,
    Comparison,
    ComparisonRow,
    Difference,
    Estimate,
    FloorReport,
    MetricEstimates,
    ReportRow,
    ScoreReport,
    SpanCounts,
    SubmissionInfo,
    WarningCount,
)
from mtcabench.results.submission import (
    Submission,
    Warnings,
    check_against_benchmark,
    read_submission,
)


@dataclass
class ScoredSubmission:
    """A checked submission with one score per benchmark span, in benchmark order."""

    submission: Submission
    scores: list[SpanScore]
    matrix: np.ndarray
    empty: np.ndarray  # bool per span: missing or skipped, scored as an empty prediction
    missing: list[str]


@dataclass(frozen=True)
class Group:
    """A row of the report: which spans (indices into the benchmark's span list)."""

    breakdown: str
    group: str
    indices: np.ndarray

    def seed_key(self, spans: list[BenchmarkSpan]) -> str:
        """What seeds the row's draws: its spans, so equal groups get equal intervals."""
        return "\n".join(spans[i].id for i in self.indices)


def as_benchmark(benchmark: Benchmark | str | Path) -> Benchmark:
    return benchmark if isinstance(benchmark, Benchmark) else load_benchmark(benchmark)


def benchmark_inputs(benchmark: Benchmark | str | Path) -> list[Path]:
    """What a benchmark (loaded, or a path or Hub id) is read from: inputs no output may be."""
    return benchmark.input_paths() if isinstance(benchmark, Benchmark) else \
        origin_paths(benchmark)


def score_spans(submission: Submission | str | Path, benchmark: Benchmark) -> ScoredSubmission:
    """Check a submission against the benchmark and score every benchmark span.

    Given a path, the file is streamed against the benchmark: each line is scored once it is
    read and checked, and only its counts are kept (memory bounded by the benchmark). Given a
    :class:`Submission` read with every entry kept, its entries are scored. A missing or
    skipped span scores as an empty prediction.
    """
    if not benchmark.spans:
        raise InputError(f"{benchmark.origin}: the benchmark has no spans to score")
    predicted: dict[str, SpanScore] = {}

    def score(span: BenchmarkSpan, conversation: Conversation, entry: SubmissionEntry) -> None:
        if not entry.skipped:
            predicted[span.id] = score_span(span, conversation, entry.edges)

    if not isinstance(submission, Submission):
        submission = read_submission(submission, benchmark, keep=(), each=score)
        missing = check_against_benchmark(submission, benchmark)
    else:
        if not submission.complete:
            raise ValueError("score a submission read with every entry kept (no keep)")
        missing = check_against_benchmark(submission, benchmark)
        index = benchmark.span_index()
        for sid, entry in submission.entries.items():
            span = index[sid]
            score(span, benchmark.conversation_of(span), entry)
    scores = [predicted.get(s.id) or score_span(s, benchmark.conversation_of(s))
              for s in benchmark.spans]
    empty = np.array([submission.status(s.id) != "predicted" for s in benchmark.spans])
    return ScoredSubmission(submission, scores, span_matrix(scores), empty, missing)


def score_floor(name: str, benchmark: Benchmark) -> ScoredSubmission:
    """The model-free floor ``name`` (:data:`mtcabench.baselines.FLOORS`) on every span.

    Its scores are :func:`mtcabench.results.floors.floor_scores`, exactly what ``trace
    --method NAME`` would predict and ``score`` would score (a floor reads no tokens, so no
    span is skipped), held as an in-memory submission.
    """
    if not benchmark.spans:
        raise InputError(f"{benchmark.origin}: the benchmark has no spans to score")
    header = SubmissionHeader(method=name, parameters=dict(FLOORS[name].parameters))
    sub = Submission(Path(f"floor-{name}"), header, {s.id: 0 for s in benchmark.spans}, set(),
                     Warnings(), checked=benchmark)
    scores = floor_scores(benchmark, name)
    return ScoredSubmission(sub, scores, span_matrix(scores),
                            np.zeros(len(scores), dtype=bool), [])


def floor_reports(
    benchmark: Benchmark,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> list[FloorReport]:
    """Every floor's rows on the benchmark, with the intervals a submission's rows get.

    A row's draws depend only on the seed and the row's spans, so a floor's interval is
    drawn from the same resampled spans as the submission's beside it.
    """
    out = []
    for name, floor in FLOORS.items():
        report = _reports([score_floor(name, benchmark)], benchmark, resamples, seed)[0][0]
        out.append(FloorReport(method=name, label=f"floor: {name} (model-free)",
                               description=floor.description,
                               parameters=dict(floor.parameters), rows=report.rows))
    return out


def groups(spans: list[BenchmarkSpan], agents: list[str | None] | None = None) -> list[Group]:
    """The report's rows: overall, then by dependency type, source dataset and gold depth;
    by domain and by agent model (``agents``: each span's conversation's agent model) when
    the benchmark holds more than one of them; by origin (real, counterfactual) when the
    benchmark holds counterfactual spans; by span kind (value, claim) and by claim kind (the
    claims alone) when it holds claims."""
    out = [Group("overall", "all", np.arange(len(spans)))]

    def by(breakdown: str, value_of, order) -> None:
        values = [value_of(s) for s in spans]
        for v in sorted(set(values), key=order):
            idx = np.array([i for i, x in enumerate(values) if x == v])
            out.append(Group(breakdown, str(v), idx))

    types = list(DependencyType)
    by("dependency_type", lambda s: s.dependency_type.value,
       lambda v: types.index(DependencyType(v)))
    by("source", lambda s: s.source, str)
    by("depth", lambda s: s.depth, int)
    # Only where there is more than one: a one-domain, one-agent benchmark's reports are what
    # they were, and a single row would repeat the overall one.
    if len({s.domain for s in spans}) > 1:
        by("domain", lambda s: s.domain, str)
    if agents is not None and len(set(agents)) > 1:
        agent_of = {s.id: a or NO_AGENT for s, a in zip(spans, agents)}
        by("agent_model", lambda s: agent_of[s.id], str)
    if any(s.origin is SpanOrigin.COUNTERFACTUAL for s in spans):
        # Real and counterfactual spans apart, every metric (hallucinated-source recall
        # included), and the hallucinations of each origin apart from its other spans. Only
        # where the benchmark holds counterfactual spans: the reports of a benchmark of real
        # spans are what they were.
        origins = [o.value for o in SpanOrigin]
        by("origin", lambda s: s.origin.value, origins.index)
        hal = DependencyType.HALLUCINATION
        by("origin_hallucination",
           lambda s: f"{s.origin.value} {'hallucination' if s.dependency_type is hal else 'other'}",
           str)
    if any(s.span_kind is SpanKind.CLAIM for s in spans):
        # Values and claims apart, and the claims by kind: where the benchmark holds claims
        # only, so that a benchmark of values reports what it did.
        kinds = [k.value for k in SpanKind]
        by("span_kind", lambda s: s.span_kind.value, kinds.index)
        claim_kinds = [k.value for k in ClaimKind]
        for kind in sorted({s.claim_kind.value for s in spans if s.claim_kind is not None},
                           key=claim_kinds.index):
            idx = np.array([i for i, s in enumerate(spans)
                            if s.claim_kind is not None and s.claim_kind.value == kind])
            out.append(Group("claim_kind", kind, idx))
    return out


def _estimates(point: dict, samples: dict | None, metric: str, avg: str) -> Estimate:
    value = float(point[metric][avg][0])
    if np.isnan(value):
        return Estimate(value=None)
    ci = interval(samples[metric][avg], CONFIDENCE) if samples is not None else None
    return Estimate(value=value, low=ci[0] if ci else None, high=ci[1] if ci else None)


def _info(sub: Submission) -> SubmissionInfo:
    h = sub.header
    return SubmissionInfo(
        path=str(sub.path), name=sub.name, label=sub.label,
        method=h.method if h else None, scorer=h.scorer if h else None,
        model=h.model if h else None, parameters=h.parameters if h else {},
        created_at=h.created_at if h else None,
    )


def build_report(
    scored: ScoredSubmission,
    benchmark: Benchmark,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> ScoreReport:
    """The report of one scored submission: every row, both averages, intervals."""
    return _reports([scored], benchmark, resamples, seed)[0][0]


def build_comparison(
    a: ScoredSubmission,
    b: ScoredSubmission,
    benchmark: Benchmark,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> Comparison:
    """Side by side with ``a - b``; the same resampled spans for both (paired bootstrap)."""
    (report_a, report_b), rows = _reports([a, b], benchmark, resamples, seed)
    return Comparison(a=report_a, b=report_b, benchmark=benchmark.origin,
                      bootstrap=report_a.bootstrap, rows=rows)


def _reports(
    scored: list[ScoredSubmission], benchmark: Benchmark, resamples: int, seed: int
) -> tuple[list[ScoreReport], list[ComparisonRow]]:
    """Reports of one or two submissions; for two, also the paired comparison rows.

    Each row's draws are made once and applied to every submission, so a report's
    intervals are the same whether it was built alone or in a comparison.
    """
    if (why := resamples_problem(resamples)) is not None:
        raise InputError(f"--{why}")
    if (why := seed_problem(seed)) is not None:
        raise InputError(f"--{why}")
    rows: list[list[ReportRow]] = [[] for _ in scored]
    compared: list[ComparisonRow] = []
    hal = scored[0].matrix[:, columns().index("hallucination")]
    agents = [benchmark.conversation_of(s).agent_model for s in benchmark.spans]
    for g in groups(benchmark.spans, agents):
        mats = [s.matrix[g.indices] for s in scored]
        points = [point(m) for m in mats]
        if resamples:
            rng = row_rng(seed, g.seed_key(benchmark.spans))
            samples: list = resampled_averages(mats, resamples, rng)
        else:
            samples = [None] * len(scored)
        estimates = [
            {name: {avg: _estimates(p, smp, name, avg) for avg in AVERAGES} for name in METRICS}
            for p, smp in zip(points, samples)
        ]
        n_hal = int(hal[g.indices].sum())
        for out, s, est in zip(rows, scored, estimates):
            out.append(ReportRow(
                breakdown=g.breakdown, group=g.group, spans=len(g.indices),
                missing=int(s.empty[g.indices].sum()), hallucination_spans=n_hal,
                metrics={name: MetricEstimates(**est[name]) for name in METRICS}))
        if len(scored) == 2:
            ea, eb = estimates
            sa, sb = samples
            compared.append(ComparisonRow(
                breakdown=g.breakdown, group=g.group, spans=len(g.indices),
                missing_a=rows[0][-1].missing, missing_b=rows[1][-1].missing,
                hallucination_spans=n_hal,
                metrics={name: {avg: ComparedMetric(
                    a=ea[name][avg], b=eb[name][avg], difference=_difference(
                        ea[name][avg], eb[name][avg],
                        None if sa is None else sa[name][avg] - sb[name][avg]))
                    for avg in AVERAGES} for name in METRICS},
            ))
    reports = []
    for s, r in zip(scored, rows):
        sub = s.submission
        skipped = len(sub.skipped)
        reports.append(ScoreReport(
            submission=_info(sub),
            benchmark=benchmark.origin,
            spans=SpanCounts(benchmark=len(benchmark.spans),
                             predicted=len(sub.lines) - skipped,
                             missing=len(s.missing), skipped=skipped),
            bootstrap=BootstrapSettings(resamples=resamples, seed=seed, confidence=CONFIDENCE),
            definitions=definitions(),
            averages=dict(AVERAGES),
            warnings=[WarningCount(**w) for w in sub.warnings.as_list()],
            rows=r,
        ))
    return reports, compared


def _difference(a: Estimate, b: Estimate, samples: np.ndarray | None) -> Difference:
    if a.value is None or b.value is None:
        return Difference(value=None)
    ci = interval(samples, CONFIDENCE) if samples is not None else None
    return Difference(value=a.value - b.value, low=ci[0] if ci else None,
                      high=ci[1] if ci else None,
                      p_value=paired_p_value(samples) if samples is not None else None)


# --------------------------------------------------------------------------- one-call API


def score_submission(
    submission: str | Path,
    benchmark: Benchmark | str | Path,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    floors: bool = True,
) -> ScoreReport:
    """Read, check and score one submission file against a benchmark (path, id or loaded);
    with ``floors``, the report holds the model-free floors on the same spans too."""
    bench = as_benchmark(benchmark)
    report = build_report(score_spans(submission, bench), bench, resamples=resamples, seed=seed)
    if floors:
        report = report.model_copy(update={
            "floors": floor_reports(bench, resamples=resamples, seed=seed)})
    return report


def with_floors(comparison: Comparison, floors: list[FloorReport]) -> Comparison:
    """The comparison with the floors in A's and B's reports (the same spans, so the same
    floors), where its tables read them."""
    return comparison.model_copy(update={
        "a": comparison.a.model_copy(update={"floors": floors}),
        "b": comparison.b.model_copy(update={"floors": floors})})


def compare_submissions(
    a: str | Path,
    b: str | Path,
    benchmark: Benchmark | str | Path,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    floors: bool = True,
) -> Comparison:
    """Score two submission files on one benchmark and compare them (``a - b``, paired);
    with ``floors``, A's and B's reports hold the model-free floors on the same spans."""
    bench = as_benchmark(benchmark)
    comparison = build_comparison(score_spans(a, bench), score_spans(b, bench), bench,
                                  resamples=resamples, seed=seed)
    if floors:
        comparison = with_floors(comparison, floor_reports(bench, resamples=resamples, seed=seed))
    return comparison
