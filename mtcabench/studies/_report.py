"""The study's Markdown: the dev tables, the test split's table with intervals, and writing a
table into a docs page between its markers."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from mtcabench.studies._grid import GRID, PLATEAU, Point, objective

DOCS_BEGIN, DOCS_END = "<!-- parameter-study:begin -->", "<!-- parameter-study:end -->"


def f3(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    return out + ["| " + " | ".join(r) + " |" for r in rows] + [""]


def one_at_a_time(tg, fl, chosen: Point) -> list[str]:
    rows = []
    for key, values in GRID.items():
        for v in values:
            p = replace(chosen, **{key: v})
            t = tg[p]
            f = fl.get(replace(p, d_max=GRID["d_max"][0])) if key != "d_max" else None
            mark = " (chosen)" if v == getattr(chosen, key) else ""
            rows.append([f"`{key}` = {v}{mark}", f3(t.edge_f1), f3(t.source_recall),
                         f3(objective(t)), f3(f.edge_f1) if f else "",
                         f3(f.source_recall) if f else ""])
    return md_table(["setting (others as chosen)", "Tokengeist edge F1", "Tokengeist source R",
                     "Tokengeist mean", "flat edge F1", "flat source R"], rows)


def estimate(e) -> str:
    if e.value is None:
        return "n/a"
    ci = f" [{e.low:.3f}, {e.high:.3f}]" if e.low is not None else ""
    return f"{e.value:.3f}{ci}"


def test_table(reports: dict) -> list[str]:
    """Test split: every method and floor, overall and by dependency type, with intervals."""
    first = next(iter(reports.values()))
    groups = [r for r in first.rows if r.breakdown in ("overall", "dependency_type")]
    rows = []
    named = [(label, rep.rows) for label, rep in reports.items()]
    named += [(f"floor: {fl.method} (model-free)", fl.rows) for fl in first.floors]
    for label, rep_rows in named:
        by = {(r.breakdown, r.group): r for r in rep_rows}
        for g in groups:
            r = by[g.breakdown, g.group]
            rows.append([label if g.breakdown == "overall" else "", g.title, str(r.spans),
                         estimate(r.metrics["edge_f1"].macro),
                         estimate(r.metrics["source_recall"].macro),
                         str(r.missing) if g.breakdown == "overall" else ""])
    return md_table(["method", "group", "spans", "edge F1 (macro) [95% CI]",
                     "source recall (macro) [95% CI]", "scored empty"], rows)


def render(ctx: dict) -> str:
    dev, test = ctx["dev"], ctx["test"]
    chosen, current, flat_best = ctx["chosen"], ctx["current"], ctx["flat_best"]
    by_f1 = ctx["by_f1"]
    tg, fl = ctx["tg"], ctx["fl"]
    lines = [
        f"Gold: {ctx['gold']}. Model {ctx['model']}, base scorer {ctx['scorer']}.",
        "",
        f"**Split** (by TauBench task, so that no task's trials straddle it; trials 0 and 1 "
        f"of each task): **dev** = tasks with id mod 5 = 0 (0, 5, ..., 45): "
        f"{dev['conversations']} conversations, {dev['spans']} spans ({dev['types']}); "
        f"**test** = tasks with id mod 5 = 1 (1, 6, ..., 46): {test['conversations']} "
        f"conversations, {test['spans']} spans ({test['types']}). Every other conversation is "
        "unused. Settings were chosen on dev only.",
        "",
        f"**Grid** (every combination for Tokengeist, {len(tg)} points; flat has no `d_max`, "
        f"{len(fl)} points): " + "; ".join(f"`{k}` {', '.join(map(str, v))}"
                                           for k, v in GRID.items()) + ".",
        "",
        f"**Dev, one setting at a time** (the others at the chosen point; macro averages over "
        f"the {dev['spans']} dev spans, {dev['empty']} of them beyond the model's context and "
        "scored empty):",
        "",
    ]
    lines += one_at_a_time(tg, fl, chosen)
    ranked = sorted(tg, key=lambda p: (-objective(tg[p]), -tg[p].edge_f1))[:8]
    lines += ["**Dev, best grid points for Tokengeist** by the mean of edge F1 and source "
              "recall (and the best by edge F1 alone):", ""]
    rows = [[p.label(), f3(tg[p].edge_f1), f3(tg[p].source_recall), f3(objective(tg[p]))]
            for p in ranked]
    for p, what in ((by_f1, "best edge F1 alone"), (current, "previous defaults")):
        if p not in ranked:
            rows.append([f"{what}: {p.label()}", f3(tg[p].edge_f1), f3(tg[p].source_recall),
                         f3(objective(tg[p]))])
    lines += md_table(["top_k, threshold, alpha, d_max, turn aggregate", "edge F1",
                       "source R", "mean"], rows)
    fk = replace(flat_best, d_max=GRID["d_max"][0])
    top = max(objective(x) for x in tg.values())
    same = "the previous defaults, unchanged" if chosen == current else "changed from the " \
        f"previous defaults ({current.label()})"
    lines += [
        "Floors on dev: " + ", ".join(f"{n} edge F1 {f3(s.edge_f1)}, source R "
                                      f"{f3(s.source_recall)}"
                                      for n, s in ctx["dev_floors"].items()) + ".",
        "",
        f"**Chosen**: {chosen.label()} ({same}); dev edge F1 {f3(tg[chosen].edge_f1)}, source "
        f"R {f3(tg[chosen].source_recall)}. The rule: edge F1 and source recall weigh the same "
        f"(their mean); the surface is flat near its top (best mean {f3(top)}), so of the "
        f"points within {PLATEAU} of it the one with the fewest changes from the previous "
        f"defaults is taken ({sum(objective(x) >= top - PLATEAU for x in tg.values())} points "
        f"are). Edge F1 alone would pick {by_f1.label()} (dev edge F1 "
        f"{f3(tg[by_f1].edge_f1)}, source R {f3(tg[by_f1].source_recall)}): keeping only the "
        "best parent of each node buys a little edge F1 with much source recall. Flat's own "
        f"choice by the same rule: {fk.label(('top_k', 'threshold', 'alpha', 'turn_aggregate'))} "
        f"(dev edge F1 {f3(fl[fk].edge_f1)}, source R {f3(fl[fk].source_recall)}).",
        "",
        "**Test split** (computed once, for settings picked on dev: Tokengeist at the chosen "
        "settings and at the best by edge F1 alone, flat at the same settings and at its own "
        "choice, and the model-free floors; `mtcabench score` on the test spans: macro "
        "averages, 95% bootstrap intervals, 1000 resamples; spans beyond the model's context "
        "would score empty):",
        "",
    ]
    lines += test_table(ctx["reports"])
    c = ctx["cost"]
    known = [x for x in c["seconds"].values() if x is not None]
    model = (f"{sum(known) / 60:.1f} min" if len(known) == len(c["seconds"]) else
             f"{sum(known) / 60:.1f} min for {len(known)} of them (not recorded for the rest)")
    lines += [
        f"Cost, on this machine's 2 shared cores: one forward pass per conversation, "
        f"{c['conversations']} conversations, {model} of model time (measured when each was "
        f"computed; this run computed {c['computed']} and read {c['cached']} from the cache); "
        f"the {len(ctx['tg']) + len(ctx['fl'])} grid points replayed in "
        f"{ctx['grid_s'] / 60:.1f} min; this run took {ctx['total_s'] / 60:.1f} min in all.",
        "",
    ]
    return "\n".join(lines)


def write_docs(path: Path, table: str, begin: str = DOCS_BEGIN, end: str = DOCS_END) -> None:
    """Replace the text between the ``begin`` and ``end`` markers of ``path`` (by default the
    parameter study's; benchmarks/peers.py writes its table with its own) by ``table``."""
    text = path.read_text(encoding="utf-8")
    if begin not in text or end not in text:
        raise SystemExit(f"{path}: no {begin} ... {end} markers to write between")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    path.write_text(f"{head}{begin}\n{table.rstrip(chr(10))}\n{end}{tail}", encoding="utf-8")
