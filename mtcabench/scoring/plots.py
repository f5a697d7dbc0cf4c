"""Bar charts of score reports: one group of bars per dependency type, a bar per submission."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, never a window; safe on machines without a display

import matplotlib.pyplot as plt
import numpy as np

from mtcabench.errors import InputError
from mtcabench.io import atomic_write
from mtcabench.results.metrics import METRICS
from mtcabench.results.report import ScoreReport



def plot_by_dependency_type(
    reports: list[ScoreReport],
    out_stem: str | Path,
    *,
    metrics: tuple[str, ...] | None = None,
    average: str = "macro",
) -> list[Path]:
    """Draw ``metrics`` by dependency type (and overall) for several submissions; by default
    the metrics people cite, those of the metrics table marked ``plot``.

    Writes ``<out_stem>.png`` and ``<out_stem>.svg``; error bars are the reports'
    bootstrap intervals. Returns the paths written.
    """
    if not reports:
        raise InputError("nothing to plot: give at least one submission")
    if metrics is None:
        metrics = tuple(name for name, m in METRICS.items() if m.plot)
    groups = ["all"] + [r.group for r in reports[0].rows if r.breakdown == "dependency_type"]
    labels = ["overall" if g == "all" else g for g in groups]
    fig, axes = plt.subplots(1, len(metrics), figsize=(5.2 * len(metrics), 4.2), squeeze=False)
    width = 0.8 / len(reports)
    x = np.arange(len(groups))
    for ax, metric in zip(axes[0], metrics):
        for k, report in enumerate(reports):
            values, low, high = [], [], []
            for g in groups:
                breakdown = "overall" if g == "all" else "dependency_type"
                try:
                    e = getattr(report.row(breakdown, g).metrics[metric], average)
                except KeyError:  # a report on another benchmark may lack a group
                    e = None
                v = e.value if e is not None and e.value is not None else np.nan
                values.append(v)
                low.append(v - e.low if e is not None and e.low is not None else 0)
                high.append(e.high - v if e is not None and e.high is not None else 0)
            bars = ax.bar(x + (k - (len(reports) - 1) / 2) * width, values, width,
                          yerr=[low, high], capsize=3, label=report.submission.label)
            # Values printed under the bar tops, so that a 0 is seen, not guessed.
            ax.bar_label(bars, labels=["n/a" if np.isnan(v) else f"{v:.2f}" for v in values],
                         label_type="edge", padding=2, fontsize=7)
        ax.set_xticks(x, labels, rotation=15)
        ax.set_ylim(0, 1.12)
        ax.set_title(f"{METRICS[metric].label} ({average} average)")
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("score (whiskers: 95% bootstrap interval)")
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=min(len(reports), 4), fontsize="small",
               frameon=False)
    where = reports[0].benchmark
    where = Path(where).name if len(where) > 60 else where  # a long path: its folder name
    fig.suptitle(f"By dependency type on {where}", fontsize="medium")
    fig.tight_layout(rect=(0, 0.07 + 0.03 * ((len(reports) - 1) // 4), 1, 1))
    out_stem = Path(out_stem)
    written = []
    for suffix in (".png", ".svg"):
        path = out_stem.with_name(out_stem.name + suffix)
        # SVG text stays text (searchable, selectable) instead of glyph outlines.
        with atomic_write(path, "wb") as fh, plt.rc_context({"svg.fonttype": "none"}):
            fig.savefig(fh, format=suffix[1:], dpi=150)
        written.append(path)
    plt.close(fig)
    return written
