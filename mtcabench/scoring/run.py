"""One scoring run, as the CLI and the demo do it: score, compare, write files, print tables."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from mtcabench.benchmark import Benchmark
from mtcabench.errors import InputError
from mtcabench.model import SpanOrigin
from mtcabench.io import (
    NAME_MAX,
    all_or_nothing,
    atomic_write,
    check_outputs_are_not_inputs,
    derived_name,
    fit_name,
    resamples_problem,
    seed_problem,
)
from mtcabench.progress import err_console
from mtcabench.scoring.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED
from mtcabench.results.metrics import AVERAGES, COUNTS
from mtcabench.results.report import Comparison, ScoreReport
from mtcabench.scoring.scorer import (
    ScoredSubmission,
    as_benchmark,
    benchmark_inputs,
    build_comparison,
    build_report,
    floor_reports,
    score_spans,
    with_floors,
)
from mtcabench.results.submission import submission_name
from mtcabench.scoring.tables import (
    comparison_markdown,
    comparison_table,
    report_markdown,
    report_table,
    warnings_line,
)
from mtcabench.terminal import shown


@dataclass
class ScoreRun:
    """What a run produced: a report per submission, the comparison if asked, the files."""

    reports: list[ScoreReport]
    comparison: Comparison | None
    out: Path
    files: list[Path] = field(default_factory=list)


def run_scoring(
    submissions: Sequence[str | Path],
    benchmark: Benchmark | str | Path,
    *,
    compare: tuple[str | Path, str | Path] | None = None,
    out: str | Path | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    average: str = "macro",
    plot: bool = True,
    floors: bool = True,
    console: Console | None = None,
) -> ScoreRun:
    """Score submissions (and compare two), write JSON, Markdown, per-span scores and the chart.

    ``submissions`` are scored on their own; ``compare=(a, b)`` also scores a and b and
    puts them side by side (``a - b``, paired bootstrap). Tables are printed on ``console``
    (stdout by default): the comparison when asked, else one table per submission, with the
    ``average`` named ("macro", "micro" or "both"). Files go to ``out`` (default: a ``score``
    folder beside the first submission).

    With ``floors`` (the default), every submission's report, its table and its files also hold
    the model-free floors recency, first-user and string-match (:mod:`mtcabench.baselines`) on the
    same spans, computed once for the run; so do the comparison's A and B, and its tables show
    each floor's row (value and interval) under each group, beside A and B.
    """
    if average not in (*AVERAGES, "both"):
        raise InputError(f"--average must be macro, micro or both, got {average!r}")
    if (why := seed_problem(seed)) is not None:
        raise InputError(f"--{why}")
    if (why := resamples_problem(resamples)) is not None:
        raise InputError(f"--{why}")
    paths = _unique([Path(p) for p in submissions] + [Path(p) for p in (compare or ())])
    if not paths:
        raise InputError("give a submission file to score, or --compare A B")
    console = console or Console()
    out = Path(out) if out is not None else paths[0].parent / "score"
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: exists and is not a folder; choose another --out")
    names = _file_names([submission_name(p) for p in paths])
    compare_stem = None
    if compare is not None:
        na, nb = (names[paths.index(_find(paths, p))] for p in compare)
        compare_stem = out / derived_name(f"compare-{na}-vs-{nb}", room=len(".json"))
    planned = [out / f"{n}{suffix}" for n in names
               for suffix in (".score.json", ".score.md", ".spans.jsonl")]
    if compare_stem is not None:
        planned += [_suffixed(compare_stem, ".json"), _suffixed(compare_stem, ".md")]
    if plot:
        planned += [out / f"by-dependency-type{suffix}" for suffix in (".png", ".svg")]
    check_outputs_are_not_inputs([*paths, *benchmark_inputs(benchmark)], planned)
    bench = as_benchmark(benchmark)

    scored: dict[Path, ScoredSubmission] = {}
    for p in paths:
        scored[p.resolve()] = score_spans(p, bench)
    comparison = None
    if compare is not None:
        a, b = (scored[Path(p).resolve()] for p in compare)
        comparison = build_comparison(a, b, bench, resamples=resamples, seed=seed)
    reports: list[ScoreReport] = []
    for p in paths:
        s = scored[p.resolve()]
        if comparison is not None and s is a:
            reports.append(comparison.a)
        elif comparison is not None and s is b:
            reports.append(comparison.b)
        else:
            reports.append(build_report(s, bench, resamples=resamples, seed=seed))

    if floors:
        floor_list = floor_reports(bench, resamples=resamples, seed=seed)
        reports = [r.model_copy(update={"floors": floor_list}) for r in reports]
        if comparison is not None:
            comparison = with_floors(comparison, floor_list)

    # Only now that everything was read and scored: a refused run leaves no folder behind.
    made = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    run = ScoreRun(reports, comparison, out)
    try:
        # The files of a run appear together or not at all (a full disk, Ctrl-C, SIGTERM).
        with all_or_nothing():
            _write_files(run, reports, names, paths, scored, bench, comparison, compare_stem,
                         plot)
    except BaseException:
        if made:
            with contextlib.suppress(OSError):
                out.rmdir()
        raise

    averages = list(AVERAGES) if average == "both" else [average]
    if comparison is not None:
        for avg in averages:
            console.print(comparison_table(comparison, avg))
        for label, rep in (("A", comparison.a), ("B", comparison.b)):
            if rep.warnings:
                console.print(f"[yellow]{label} {shown(warnings_line(rep.warnings))}")
    else:
        for report in reports:
            for avg in averages:
                console.print(report_table(report, avg))
            if report.warnings:
                console.print(f"[yellow]{shown(warnings_line(report.warnings))}")
    err_console.print(f"score: wrote {len(run.files)} files to {shown(out)}")
    return run


def compare_and_print(
    a: str | Path,
    b: str | Path,
    benchmark: Benchmark | str | Path,
    out: str | Path,
    *,
    console: Console | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> Comparison:
    """Score two submissions, write every file to ``out`` and print the comparison table."""
    run = run_scoring([], benchmark, compare=(a, b), out=out, resamples=resamples, seed=seed,
                      console=console)
    return run.comparison  # type: ignore[return-value]  # always set when compare is given


def _unique(paths: list[Path]) -> list[Path]:
    seen, out = set(), []
    for p in paths:
        if p.resolve() not in seen:
            seen.add(p.resolve())
            out.append(p)
    return out


def _find(paths: list[Path], p: str | Path) -> Path:
    wanted = Path(p).resolve()
    return next(x for x in paths if x.resolve() == wanted)


def _file_names(names: list[str]) -> list[str]:
    """Output names from file stems, numbered when two submissions share a stem, each short
    enough for its longest suffix (``.spans.jsonl``) by the one name policy."""
    out, used = [], set()
    for name in names:
        name = fit_name(name, NAME_MAX - len(".spans.jsonl") - len("-99"))
        candidate, k = name, 2
        while candidate in used:
            candidate, k = f"{name}-{k}", k + 1
        used.add(candidate)
        out.append(candidate)
    return out


def _write_files(run: ScoreRun, reports: list[ScoreReport], names: list[str], paths: list[Path],
                 scored: dict[Path, ScoredSubmission], bench: Benchmark, comparison,
                 compare_stem: Path | None, plot: bool) -> None:
    out = run.out
    for report, name, p in zip(reports, names, paths):
        run.files.append(_write(out / f"{name}.score.json", report.model_dump_json(indent=2)))
        run.files.append(_write(out / f"{name}.score.md", report_markdown(report)))
        run.files.append(_write_span_scores(out / f"{name}.spans.jsonl", scored[p.resolve()],
                                            bench))
    if comparison is not None and compare_stem is not None:
        run.files.append(_write(_suffixed(compare_stem, ".json"),
                                comparison.model_dump_json(indent=2)))
        run.files.append(_write(_suffixed(compare_stem, ".md"), comparison_markdown(comparison)))
    if plot:
        # Imported here: matplotlib takes about a second to import, which `show` (and a
        # run with --no-plot) need not pay.
        from mtcabench.scoring.plots import plot_by_dependency_type

        run.files += plot_by_dependency_type(reports, out / "by-dependency-type")


def _suffixed(stem: Path, suffix: str) -> Path:
    """``stem`` + ``suffix``. Not ``with_suffix``: a stem holds dots of its own
    (``compare-run.tokengeist-vs-run.flat``), and replacing its last "suffix" dropped B's
    method, so that comparisons against two B's wrote one file."""
    return stem.with_name(stem.name + suffix)


def _write(path: Path, text: str) -> Path:
    with atomic_write(path) as fh:
        fh.write(text if text.endswith("\n") else text + "\n")
    return path


def _write_span_scores(path: Path, scored: ScoredSubmission, bench: Benchmark) -> Path:
    """One line per benchmark span: its groups, whether it was predicted, every metric and
    the counts behind them (those of the counts table that are ``written``), and its origin,
    where the benchmark holds counterfactual spans."""
    origins = any(s.origin is SpanOrigin.COUNTERFACTUAL for s in bench.spans)
    with atomic_write(path) as fh:
        for span, score in zip(bench.spans, scored.scores):
            status = scored.submission.status(span.id)
            fh.write(json.dumps({
                "span_id": span.id, "conversation_id": span.conversation_id,
                "source": span.source, "domain": span.domain,
                "dependency_type": span.dependency_type.value, "depth": span.depth,
                **({"origin": span.origin.value} if origins else {}),
                "status": status, **score.values(),
                **{name: score.counts[name] for name, c in COUNTS.items() if c.written},
            }, ensure_ascii=False) + "\n")
    return path
