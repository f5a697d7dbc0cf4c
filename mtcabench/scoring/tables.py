"""Score reports and comparisons as tables: rich for the terminal, Markdown for files.

Every table says which average its numbers are and how the intervals were made, so a
number copied out of it cannot be misread.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from mtcabench.results.metrics import AVERAGES, METRICS
from mtcabench.results.report import (
    BREAKDOWNS,
    Comparison,
    ComparisonRow,
    Difference,
    Estimate,
    ReportRow,
    ScoreReport,
    WarningCount,
)
from mtcabench.terminal import markdown, markdown_code, shown

def headline() -> tuple[str, ...]:
    """The metrics a comparison shows on the terminal by default (those of the metrics table
    marked ``headline``; the files hold every metric)."""
    return tuple(name for name, m in METRICS.items() if m.headline)


#: Marks a floor's row under the submission's row of the same group.
FLOOR_MARK = "↳"


def fmt(value: float | None, digits: int = 3, signed: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def fmt_p(p: float, resamples: int) -> str:
    """A bootstrap p-value; below one resample's share it is only known to be that small."""
    return f"p<{1 / resamples:.2g}" if p < 1 / resamples else f"p={p:.3f}"


def fmt_interval(e: Estimate | Difference, digits: int = 3, signed: bool = False) -> str:
    if e.low is None or e.high is None:
        return ""
    return f"[{fmt(e.low, digits, signed)}, {fmt(e.high, digits, signed)}]"


def _average_caption(average: str, bootstrap) -> str:
    ci = (f"{bootstrap.confidence:.0%} bootstrap interval ({bootstrap.resamples} resamples, "
          f"seed {bootstrap.seed})" if bootstrap.resamples else "no intervals (0 resamples)")
    return f"{average} average: {AVERAGES[average]}; {ci}"


def floors_note(report: ScoreReport) -> str:
    """What the floor rows are, or '' when the report has none."""
    if not report.floors:
        return ""
    methods = [f.method for f in report.floors]
    names = " and ".join(filter(None, (", ".join(methods[:-1]), methods[-1])))
    return (f"{FLOOR_MARK} rows: the model-free floors {names}, computed on the same spans "
            "(no model; docs/evaluate.md); a score means something only above them")


def _floor_rows(report: ScoreReport, row: ReportRow | ComparisonRow
                ) -> list[tuple[str, ReportRow]]:
    """Each floor's row of the same group as ``row``, with its label."""
    return [(f"{FLOOR_MARK} floor {f.method}", f.row(row.breakdown, row.group))
            for f in report.floors]


def warnings_line(warnings: list[WarningCount]) -> str:
    """One line counting the tolerated issues, or '' when there were none."""
    if not warnings:
        return ""
    # Which benchmark the header names is said at once: it may mean the wrong one was given.
    return "warnings: " + "; ".join(
        f"{w.code} x{w.count}" + (f" ({w.examples[0]})" if w.code == "other-benchmark"
                                  and w.examples else "") for w in warnings) + \
        " (see the report's warnings for what each means)"


# --------------------------------------------------------------------------- terminal


def _defined(report: ScoreReport, average: str) -> list[str]:
    """The metrics with a value in some row of the report: a terminal is narrow, and a metric
    undefined everywhere (evidence hit without gold evidence ranges, hallucinated-source
    recall without hallucination spans) would only take a column of n/a."""
    rows = [*report.rows, *(r for f in report.floors for r in f.rows)]
    return [name for name in METRICS
            if any(getattr(r.metrics[name], average).value is not None for r in rows)]


def report_table(report: ScoreReport, average: str = "macro") -> Table:
    """One submission: a row per group, a column per metric, value and interval (the metrics
    undefined on every row left out; the files hold them all)."""
    s = report.spans
    note = floors_note(report)
    names = _defined(report, average)
    left_out = [METRICS[n].label for n in METRICS if n not in names]
    if left_out:
        note = (f"{note}\n" if note else "") + f"n/a on every row, left out: {', '.join(left_out)}"
    table = Table(
        title=f"{shown(report.submission.label)} on {shown(report.benchmark)}: "
              f"{s.benchmark} spans, "
              f"{s.missing + s.skipped} scored empty ({s.missing} missing, {s.skipped} skipped)",
        caption=_average_caption(average, report.bootstrap) + (f"\n{shown(note)}" if note else ""),
        title_justify="left", caption_justify="left",
    )
    table.add_column("group")
    table.add_column("spans", justify="right")
    for name in names:
        table.add_column(f"{METRICS[name].label}\n({average})", justify="right")
    previous = None
    for row in report.rows:
        if previous is not None and row.breakdown != previous:
            table.add_section()
        previous = row.breakdown
        table.add_row(shown(row.title), str(row.spans), *_cells(row, average, names))
        for label, floor_row in _floor_rows(report, row):
            table.add_row(shown(label), "", *_cells(floor_row, average, names), style="dim")
    return table


def _cells(row: ReportRow, average: str, names=tuple(METRICS)) -> list[Text]:
    cells = []
    for name in names:
        e = getattr(row.metrics[name], average)
        cells.append(Text.assemble(fmt(e.value), "\n", (fmt_interval(e, 2), "dim")))
    return cells


def comparison_table(cmp: Comparison, average: str = "macro",
                     metrics: tuple[str, ...] | None = None) -> Table:
    """Two submissions: per metric (default: :func:`headline`) A, B and A - B with its
    paired interval."""
    metrics = headline() if metrics is None else metrics
    a, b = shown(cmp.a.submission.label), shown(cmp.b.submission.label)
    table = Table(
        title=f"A = {a} vs B = {b} on {shown(cmp.benchmark)}: {cmp.a.spans.benchmark} spans "
              f"(scored empty: A {cmp.a.spans.missing + cmp.a.spans.skipped}, "
              f"B {cmp.b.spans.missing + cmp.b.spans.skipped})",
        caption=_average_caption(average, cmp.bootstrap) + "; A - B intervals and p from "
                "a paired bootstrap (the same spans drawn for A and B)"
                + (f"\n{shown(note)}" if (note := floors_note(cmp.a)) else ""),
        title_justify="left", caption_justify="left",
    )
    table.add_column("group")
    table.add_column("spans", justify="right")
    for name in metrics:
        table.add_column(f"{METRICS[name].label} ({average})", justify="right")
    previous = None
    for row in cmp.rows:
        if previous is not None and row.breakdown != previous:
            table.add_section()
        previous = row.breakdown
        cells = []
        for name in metrics:
            m = row.metrics[name][average]
            d = m.difference
            style = _diff_style(d)
            cells.append(Text.assemble(
                f"A {fmt(m.a.value)}\nB {fmt(m.b.value)}\n",
                (f"A-B {fmt(d.value, signed=True)}", style),
                ("\n" + fmt_interval(d, 2, signed=True) if d.low is not None else "", "dim"),
            ))
        table.add_row(shown(row.title), str(row.spans), *cells)
        for label, floor_row in _floor_rows(cmp.a, row):
            table.add_row(shown(label), "", *_cells(floor_row, average, metrics), style="dim")
    return table


def _diff_style(d: Difference) -> str:
    # Colour only differences whose interval excludes 0; the rest could be noise.
    if d.value is None or d.low is None or d.high is None or d.low <= 0 <= d.high:
        return ""
    return "green" if d.value > 0 else "red"


# --------------------------------------------------------------------------- Markdown


def _md_row(cells: list[str]) -> str:
    """A table row: the first cell (a group's title, which holds names from the data: a
    domain, an agent model, a method) escaped as data (:func:`~mtcabench.terminal.markdown`),
    the others ours (numbers and intervals), a ``|`` in any escaped."""
    first, *rest = cells
    return "| " + " | ".join([markdown(first), *(c.replace("|", "\\|") for c in rest)]) + " |"


def _md_estimate(e: Estimate) -> str:
    ci = fmt_interval(e)
    return f"{fmt(e.value)} {ci}".strip()


def report_markdown(report: ScoreReport) -> str:
    """The whole report: header facts, definitions, then one table per average."""
    s, sub = report.spans, report.submission
    lines = [
        f"# Score: {markdown(sub.label)}",
        "",
        f"- submission: {markdown_code(sub.path)}" + (
            f" (method {markdown(sub.method)}, scorer {markdown(sub.scorer)}, "
            f"model {markdown(sub.model)})" if sub.method else ""),
        f"- benchmark: {markdown_code(report.benchmark)}, {s.benchmark} spans",
        f"- scored empty: {s.missing} missing from the submission, {s.skipped} skipped",
        f"- intervals: {_average_caption('macro', report.bootstrap).split('; ', 1)[1]}",
    ]
    if report.warnings:
        lines.append("- warnings (tolerated, counted):")
        for w in report.warnings:
            ex = f" e.g. {', '.join(markdown(x) for x in w.examples[:3])}" if w.examples else ""
            lines.append(f"  - `{w.code}` x{w.count}: {w.meaning}.{ex}")
    if report.floors:
        lines.append(f"- floors (rows marked {FLOOR_MARK}): model-free baselines computed on the "
                     "same spans, with the same metrics and intervals; a score means something "
                     "only above them:")
        lines += [f"  - `{f.method}`: {f.description}" for f in report.floors]
    lines += ["", "## Metrics", ""]
    lines += [f"- **{name}**: {formula}" for name, formula in report.definitions.items()]
    lines += [f"- **{avg}** average: {text}" for avg, text in report.averages.items()]
    for average in AVERAGES:
        lines += ["", f"## {average.capitalize()} average", "",
                  _md_row(["group", "spans", "scored empty"]
                          + [f"{METRICS[n].label} ({average})" for n in METRICS]),
                  _md_row(["---"] + ["---:"] * (2 + len(METRICS)))]
        for row in report.rows:
            lines.append(_md_row([row.title, str(row.spans), str(row.missing)] + [
                _md_estimate(getattr(row.metrics[n], average)) for n in METRICS]))
            for label, floor_row in _floor_rows(report, row):
                lines.append(_md_row([f"{label} (model-free)", "", str(floor_row.missing)] + [
                    _md_estimate(getattr(floor_row.metrics[n], average)) for n in METRICS]))
    return "\n".join(lines) + "\n"


def comparison_markdown(cmp: Comparison) -> str:
    """Both submissions per metric: ``A / B / A - B [interval] (p)``, one table per average."""
    a, b = cmp.a.submission, cmp.b.submission
    lines = [
        f"# Comparison: A = {markdown(a.label)} vs B = {markdown(b.label)}",
        "",
        f"- A: {markdown_code(a.path)}; B: {markdown_code(b.path)}",
        f"- benchmark: {markdown_code(cmp.benchmark)}, {cmp.a.spans.benchmark} spans",
        (f"- scored empty: A {cmp.a.spans.missing + cmp.a.spans.skipped}, "
         f"B {cmp.b.spans.missing + cmp.b.spans.skipped}"),
        (f"- cells: A / B / A - B [paired {cmp.bootstrap.confidence:.0%} bootstrap interval] "
         f"(two-sided bootstrap p); {cmp.bootstrap.resamples} resamples, "
         f"seed {cmp.bootstrap.seed}"),
    ]
    if cmp.a.floors:
        lines.append(f"- floors (rows marked {FLOOR_MARK}, one value and interval per cell): "
                     "model-free baselines computed on the same spans; A and B mean something "
                     "only above them: " + ", ".join(f"`{f.method}`" for f in cmp.a.floors))
    for label, rep in (("A", cmp.a), ("B", cmp.b)):
        if rep.warnings:
            lines.append(f"- {label} warnings: " + ", ".join(
                f"`{w.code}` x{w.count}" for w in rep.warnings))
    for average in AVERAGES:
        lines += ["", f"## {average.capitalize()} average: {AVERAGES[average]}", "",
                  _md_row(["group", "spans"] + [m.label for m in METRICS.values()]),
                  _md_row(["---"] + ["---:"] * (1 + len(METRICS)))]
        for row in cmp.rows:
            cells = []
            for n in METRICS:
                m = row.metrics[n][average]
                d = m.difference
                p = f" ({fmt_p(d.p_value, cmp.bootstrap.resamples)})" \
                    if d.p_value is not None else ""
                cells.append(f"{fmt(m.a.value)} / {fmt(m.b.value)} / "
                             f"{fmt(d.value, signed=True)} {fmt_interval(d, signed=True)}{p}"
                             .replace("  ", " "))
            lines.append(_md_row([row.title, str(row.spans)] + cells))
            for label, floor_row in _floor_rows(cmp.a, row):
                lines.append(_md_row([f"{label} (model-free)", ""] + [
                    _md_estimate(getattr(floor_row.metrics[n], average)) for n in METRICS]))
    return "\n".join(lines) + "\n"


__all__ = [
    "BREAKDOWNS", "FLOOR_MARK", "comparison_markdown", "comparison_table", "headline",
    "floors_note", "report_markdown", "report_table", "warnings_line",
]
