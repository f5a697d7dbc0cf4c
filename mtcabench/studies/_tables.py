"""The studies' tables and the ablation curve, regenerated from the result files alone.

No model and no gold are read: each result file holds every span's scores (the rows of
:func:`mtcabench.results.metrics.span_matrix`), so a table is their averages, as `mtcabench
score` computes them (:func:`mtcabench.results.metrics.aggregate`), and every interval is the
scoring stage's bootstrap (:mod:`mtcabench.scoring.bootstrap`) drawing whole conversations
(spans of one conversation share its prompt, tool results and pass): 1,000 resamples, 95%,
paired (the same draws for a row and the reference row it is compared with). A row over several
seeds averages each span's scores over the seeds first, then resamples conversations.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from mtcabench.results.metrics import aggregate, columns
from mtcabench.scoring.bootstrap import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    interval,
    paired_p_value,
    resampled_averages,
    resampled_means,
    row_rng,
)
from mtcabench.studies._results import StudyResult

#: The figures a table shows: metric columns of span_matrix, and the studies' own extras.
METRIC_COLUMNS = ("edge_f1", "edge_precision", "edge_recall", "source_recall")
EXTRAS = ("original_recall",)


@dataclass
class Spans:
    """One row's per-span figures (averaged over its seeds), in span order."""

    ids: list[str]
    conversations: np.ndarray
    matrix: np.ndarray  # span_matrix rows
    extras: dict[str, np.ndarray] = field(default_factory=dict)
    seeds: int = 1

    def take(self, ids: Sequence[str]) -> Spans:
        at = {s: i for i, s in enumerate(self.ids)}
        idx = np.array([at[s] for s in ids], dtype=np.int64)
        return Spans(list(ids), self.conversations[idx], self.matrix[idx],
                     {k: v[idx] for k, v in self.extras.items()}, self.seeds)


def spans_of(results: Iterable[StudyResult], point: str, method: str,
             extras: Sequence[str] = EXTRAS) -> Spans:
    """Per-span figures of ``method`` at ``point``; results of several seeds of the same
    conversation are averaged span by span (spans every seed holds)."""
    cols = columns()
    per_span: dict[str, list] = {}
    conv_of: dict[str, str] = {}
    seeds: set[int] = set()
    for r in results:
        p = r.points.get(point)
        if p is None or method not in p.methods:
            raise ValueError(f"{r.conversation_id} ({r.scorer} {r.setting} seed {r.seed}): no "
                             f"{method} at point {point!r}; rerun its stage (replayed, no model)")
        seeds.add(r.seed)
        for s in p.methods[method]:
            missing = [c for c in cols if c not in s.score]
            if missing:
                raise ValueError(f"{r.conversation_id}: the scores lack {missing}; rerun its "
                                 "stage to rescore (no model)")
            per_span.setdefault(s.span_id, []).append(
                ([s.score[c] for c in cols], [np.nan if s.extra.get(k) is None else s.extra[k]
                                              for k in extras]))
            conv_of[s.span_id] = r.conversation_id
    ids = [s for s, got in per_span.items() if len(got) == len(seeds)]
    matrix = np.array([np.mean([g[0] for g in per_span[s]], axis=0) for s in ids],
                      dtype=np.float64).reshape(len(ids), len(cols))
    extra = np.full((len(ids), len(extras)), np.nan)
    for i, s in enumerate(ids):
        values = np.array([g[1] for g in per_span[s]], dtype=np.float64).reshape(-1, len(extras))
        for j in range(len(extras)):
            if np.isfinite(values[:, j]).any():
                extra[i, j] = np.nanmean(values[:, j])
    return Spans(ids, np.array([conv_of[s] for s in ids]), matrix,
                 {k: extra[:, i] for i, k in enumerate(extras)}, max(len(seeds), 1))


@dataclass
class Figure:
    """A row's macro average of one figure, its own 95% interval, and (against a reference
    row) the paired difference with its interval and p-value."""

    value: float | None
    low: float | None = None
    high: float | None = None
    diff: float | None = None
    diff_low: float | None = None
    diff_high: float | None = None
    p: float | None = None


def compare(row: Spans, ref: Spans | None, *, resamples: int = DEFAULT_RESAMPLES,
            seed: int = DEFAULT_SEED, metrics: Sequence[str] = METRIC_COLUMNS,
            ) -> tuple[dict[str, Figure], Spans, int]:
    """The row's figures on the spans it shares with ``ref`` (all its spans without one), each
    with its interval and the paired difference from ``ref``; also the spans used and the
    conversations behind them."""
    common = row.ids if ref is None else [s for s in row.ids if s in set(ref.ids)]
    a = row.take(common)
    b = None if ref is None else ref.take(common)
    clusters = a.conversations
    mats = [a.matrix] + ([] if b is None else [b.matrix])
    rng = row_rng(seed, "\n".join(common))
    point_a = aggregate(a.matrix.sum(axis=0)[None, :], np.array([float(len(common))]))
    point_b = None if b is None else aggregate(b.matrix.sum(axis=0)[None, :],
                                               np.array([float(len(common))]))
    samples = resampled_averages(mats, resamples, rng, clusters) if common else None
    out: dict[str, Figure] = {}
    for name in metrics:
        out[name] = _figure(point_a[name]["macro"][0],
                            None if point_b is None else point_b[name]["macro"][0],
                            None if samples is None else samples[0][name]["macro"],
                            None if samples is None or b is None else samples[1][name]["macro"])
    for name in a.extras:
        va = a.extras[name]
        vb = None if b is None else b.extras[name]
        rng = row_rng(seed, name + "\n" + "\n".join(common))
        got = resampled_means([va] + ([] if vb is None else [vb]), resamples, rng, clusters)
        out[name] = _figure(np.nanmean(va) if np.isfinite(va).any() else np.nan,
                            None if vb is None else (np.nanmean(vb) if np.isfinite(vb).any()
                                                     else np.nan),
                            got[0], None if vb is None else got[1])
    return out, a, len(set(clusters))


def _figure(value, ref_value, samples, ref_samples) -> Figure:
    if value is None or np.isnan(value):
        return Figure(None)
    lo_hi = interval(samples) if samples is not None else None
    f = Figure(float(value), *(lo_hi or (None, None)))
    if ref_value is not None and not np.isnan(ref_value) and ref_samples is not None:
        diff = samples - ref_samples
        ci = interval(diff)
        f.diff = float(value - ref_value)
        f.diff_low, f.diff_high = ci if ci else (None, None)
        f.p = paired_p_value(diff)
    return f


def f3(x: float | None) -> str:
    return "" if x is None else f"{x:.3f}"


def with_ci(f: Figure) -> str:
    """``0.512 [0.47, 0.55]``."""
    if f.value is None:
        return "-"
    return f"{f.value:.3f}" + (f" [{f.low:.3f}, {f.high:.3f}]" if f.low is not None else "")


def diff_ci(f: Figure) -> str:
    """``+0.041 [+0.012, +0.070]``, or empty for the reference row."""
    if f.diff is None:
        return ""
    ci = f" [{f.diff_low:+.3f}, {f.diff_high:+.3f}]" if f.diff_low is not None else ""
    return f"{f.diff:+.3f}{ci}"


# --------------------------------------------------------------------------- costs


@dataclass
class Cost:
    """Per conversation, averaged over a row's units: forward passes and model seconds."""

    passes: float
    seconds: float
    how: str  # "measured", "counted" (per-query packages: flat's or per-step queries)


def cost_of(results: Sequence[StudyResult], point: str, method: str) -> Cost | None:
    """What a row costs per conversation. A scorer sharing its passes across queries (ours)
    pays the unit's passes for flat and Tokengeist alike (measured). A package run once per
    query pays, per conversation, one query's passes (the unit's passes over its queries) for
    every query the method asks: flat, each span; Tokengeist as a researcher runs it, each
    span's target and every node its search expanded (counted from the replay)."""
    units = [r for r in results if r.scorer != "model-free"]
    if not units:
        return None
    passes, seconds = [], []
    for r in units:
        if not r.per_query:
            passes.append(r.forward_passes)
            seconds.append(r.seconds)
            continue
        spans = r.points[point].methods[method]
        asked = sum(s.lookups or 0 for s in spans)
        per = (r.forward_passes / r.queries, r.seconds / r.queries) if r.queries else (0, 0)
        passes.append(asked * per[0])
        seconds.append(asked * per[1])
    how = "counted" if any(r.per_query for r in units) else "measured"
    return Cost(float(np.mean(passes)), float(np.mean(seconds)), how)


def md(headers: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1) -> list[str]:
    """A Markdown table: the first ``left`` columns (names) left-aligned, numbers right."""
    align = ["---"] * left + ["---:"] * (len(headers) - left)
    return (["| " + " | ".join(headers) + " |", "|" + "|".join(align) + "|"]
            + ["| " + " | ".join(r) + " |" for r in rows] + [""])
