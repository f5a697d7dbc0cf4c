"""The parameter study as one function: gold, split, shares once, the grid on dev, the chosen
settings' submissions and score reports on test, and the Markdown table (see mtcabench.studies).
"""

from __future__ import annotations

import csv
import io
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from mtcabench import results
from mtcabench.benchmark import Benchmark, load_benchmark
from mtcabench.io import write_records
from mtcabench.model import BenchmarkSpan, SubmissionHeader
from mtcabench.studies._grid import (
    GRID,
    Point,
    best_edge_f1,
    choose,
    default_point,
    floor_scores,
    replay,
    run_grid,
    to_entry,
)
from mtcabench.studies._report import render, write_docs
from mtcabench.studies._shares import ShareTables, all_shares
from mtcabench.benchmark import split_of
from mtcabench.studies._split import build_gold, by_conversation, describe

DEFAULT_MODEL, DEFAULT_SCORER = "smollm2-135m-instruct", "avg-attention"


def write_split_benchmark(folder: Path, bench: Benchmark, spans: list[BenchmarkSpan]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    ids = sorted({s.conversation_id for s in spans})
    write_records(folder / "conversations.jsonl", [bench.conversations[c] for c in ids])
    write_records(folder / "spans.jsonl", spans)
    return folder


def write_submission(path: Path, method: str, point: Point, model: str, scorer: str,
                     bench: Benchmark, spans: list[BenchmarkSpan],
                     shares: dict[str, dict[str, ShareTables]]) -> Path:
    params = {"top_k": point.top_k, "threshold": point.threshold, "alpha": point.alpha,
              "turn_aggregate": point.turn_aggregate}
    if method == "tokengeist":
        params["d_max"] = point.d_max
    header = SubmissionHeader(method=method, scorer=scorer, model=model, parameters=params,
                              notes={"made_by": "benchmarks/parameter_study.py (replayed "
                                     "shares)"})
    entries = []
    for s in spans:
        tables = shares[s.conversation_id][point.turn_aggregate]
        graph = replay(method, bench.conversations[s.conversation_id], s, tables, point.search)
        entries.append(to_entry(s, graph, tables.skipped.get(s.id)))
    results.write_submission(path, header, entries)
    return path


def score_test(folder: Path, files: dict[str, Path]):
    """Score the test submissions with ``mtcabench score`` (floors included)."""
    from rich.console import Console

    from mtcabench.scoring import run_scoring

    run = run_scoring(list(files.values()), folder / "bench", out=folder / "score", plot=False,
                      console=Console(file=io.StringIO()))
    return dict(zip(files, run.reports))


def parameter_study(out: Path, *, benchmark: str | None = None, conversations: Path | None = None,
                    reviewed: Path | None = None, raw: Path | None = None,
                    model: str = DEFAULT_MODEL, scorer: str = DEFAULT_SCORER,
                    docs: Path | None = None,
                    log: Callable[[str], None] | None = None) -> str:
    """Run the whole study into ``out``; its Markdown table (also ``out``/table.md, and written
    into ``docs`` between the parameter-study markers when given). The gold: ``benchmark``
    (any benchmark), else a release of ``reviewed`` decisions on ``conversations``, else the
    pipeline on ``raw`` (gpt-4o-airline.json). Progress goes to ``log`` (by default stderr,
    with the seconds since the start)."""
    start = time.perf_counter()
    if log is None:
        def log(msg: str) -> None:
            print(f"[{time.perf_counter() - start:7.1f} s] {msg}", file=sys.stderr, flush=True)

    if benchmark:
        gold_label = f"`{benchmark}`"
        bench = load_benchmark(benchmark)
    else:
        folder = build_gold(out / "gold", raw, conversations, reviewed)
        gold_label = (f"review decisions `{reviewed}`" if conversations else
                      f"lineage candidates on `{raw.name}`, accepted automatically")
        bench = load_benchmark(folder)
    log(f"gold: {len(bench.spans)} spans in {len(bench.conversations)} conversations")
    dev = [s for s in bench.spans if split_of(s.conversation_id) == "dev"]
    test = [s for s in bench.spans if split_of(s.conversation_id) == "test"]
    work = by_conversation(dev + test)
    shares, cost = all_shares(bench, work, out / "shares.jsonl", model, scorer,
                              log)
    t0 = time.perf_counter()
    tg, fl = run_grid(bench, dev, shares, log)
    grid_s = time.perf_counter() - t0
    current = default_point()
    chosen = choose(tg, current)
    by_f1 = best_edge_f1(tg, current)
    flat_best = choose(fl, replace(current, d_max=GRID["d_max"][0]))
    with (out / "grid.csv").open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow([*GRID, "method", "edge_f1", "source_recall", "spans"])
        for method, scores in (("tokengeist", tg), ("flat", fl)):
            for p, s in scores.items():
                w.writerow([*(getattr(p, k) for k in GRID), method, f"{s.edge_f1:.6f}",
                            f"{s.source_recall:.6f}", s.spans])

    folder = out / "test"
    write_split_benchmark(folder / "bench", bench, test)
    files = {
        "Tokengeist (chosen)": write_submission(folder / "tokengeist.jsonl", "tokengeist", chosen,
                                                model, scorer, bench, test, shares),
        "flat (same settings)": write_submission(folder / "flat.jsonl", "flat", chosen,
                                                 model, scorer, bench, test, shares),
    }
    if by_f1 != chosen:
        files["Tokengeist (best dev edge F1 alone)"] = write_submission(
            folder / "tokengeist-edge-f1.jsonl", "tokengeist", by_f1, model, scorer,
            bench, test, shares)
    if replace(flat_best, d_max=chosen.d_max) != chosen:
        files["flat (its own dev best)"] = write_submission(
            folder / "flat-own-best.jsonl", "flat", flat_best, model, scorer, bench,
            test, shares)
    reports = score_test(folder, files)
    dev_empty = sum(len(t["max"].skipped) for cid, t in shares.items()
                    if split_of(cid) == "dev")
    ctx = {"gold": gold_label, "model": model, "scorer": scorer,
           "dev": describe(dev, dev_empty), "test": describe(test), "tg": tg, "fl": fl,
           "chosen": chosen, "by_f1": by_f1, "current": current, "flat_best": flat_best,
           "dev_floors": floor_scores(bench, dev), "reports": reports, "cost": cost,
           "grid_s": grid_s, "total_s": time.perf_counter() - start}
    table = render(ctx)
    (out / "table.md").write_text(table, encoding="utf-8")
    if docs is not None:
        write_docs(docs, table)
    return table
