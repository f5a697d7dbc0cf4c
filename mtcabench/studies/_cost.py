"""The cost log of ``benchmarks/trace_cost.py --log``: a whole split measured over several
runs, one row per conversation appended as it is measured, and the figures read back.

A row holds what the script measured for one conversation, side by side in one process: the
plain pass's and trace's seconds, the model calls and tokens, the spans windowed or skipped,
its domain, which process measured it (each starts with an empty prefix cache) and that
process's largest resident memory so far.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from mtcabench.errors import InputError


def cost_log_rows(path: Path) -> list[dict]:
    """The rows ``path`` holds, in order (none when it does not exist yet); a last line cut
    short by a killed run is left out, so its conversation is measured again."""
    if not path.is_file():
        return []
    rows = []
    lines = path.read_text(encoding="utf-8").splitlines()
    for n, line in enumerate(lines, 1):
        try:
            rows.append(json.loads(line))
        except ValueError:
            if n == len(lines):
                break  # cut short by a killed run
            raise InputError(f"{path}, line {n}: not a JSON row of the cost log; move the file "
                             "away to start a new log") from None
    return rows


def append_cost_row(path: Path, row: dict) -> None:
    """One conversation's row, written whole and flushed as it is measured (a stopped run
    keeps every conversation it finished)."""
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(row, sort_keys=True) + "\n")
        f.flush()


def _line(label: str, rows: list[dict]) -> str:
    plain = sum(r["plain_s"] for r in rows)
    trace = sum(r["trace_s"] for r in rows)
    k = len(rows)
    median = statistics.median(r["trace_s"] / r["plain_s"] for r in rows)
    return (f"{label}: {k} conversations, {sum(r['spans'] for r in rows):,} spans; per "
            f"conversation trace {trace / k:.1f} s against one plain pass {plain / k:.1f} s: "
            f"{trace / plain:.2f}x (median {median:.2f}x); "
            f"{sum(r['calls'] for r in rows) / k:.2f} model calls; tokens computed "
            f"{sum(r['computed'] for r in rows):,} against the plain passes' "
            f"{sum(r['tokens'] for r in rows):,} ({sum(r['reused'] for r in rows):,} read from "
            f"the prefix cache); windowed spans {sum(r['windowed'] for r in rows)}, skipped "
            f"{sum(r['skipped'] for r in rows)}")


def cost_summary(rows: list[dict], selected: int | None = None) -> str:
    """The figures of a cost log's rows: per conversation, trace against the plain pass, model
    calls, tokens, the largest resident memory; all, then by domain, then the conversations
    with a span in a context window apart from the others. ``selected``: how many
    conversations the whole run holds (how far it is)."""
    if not rows:
        return "no conversation measured yet"
    of = f" of the {selected} selected" if selected is not None else ""
    processes = len({r["process"] for r in rows})
    out = [f"{len(rows)} conversations measured{of}, by {processes} process(es) (each starts "
           "with an empty prefix cache); trace's time "
           f"{sum(r['trace_s'] for r in rows) / 3600:.2f} h, the plain passes' "
           f"{sum(r['plain_s'] for r in rows) / 3600:.2f} h; largest resident memory "
           f"{max(r['max_rss_mib'] for r in rows):,} MiB", _line("all", rows)]
    for domain in sorted({r["domain"] for r in rows}):
        out.append(_line(f"  {domain}", [r for r in rows if r["domain"] == domain]))
    # A span past the model's context is attributed in a context window: passes of its own.
    windowed = [r for r in rows if r["windowed"]]
    if windowed and len(windowed) < len(rows):
        out.append(_line("  with a span in a context window", windowed))
        out.append(_line("  without", [r for r in rows if not r["windowed"]]))
    return "\n".join(out)
