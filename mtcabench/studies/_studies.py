"""The ablation and peers studies end to end: their stages (model time, resumable) and their
tables and figure (from the result files, in seconds). The plan itself is
:mod:`mtcabench.studies._plan`; docs/evaluate.md states it with its model time."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from mtcabench.benchmark import Benchmark
from mtcabench.files import all_or_nothing, atomic_write
from mtcabench.studies import _plan as plan
from mtcabench.studies._report import write_docs
from mtcabench.studies._results import ResultStore, StudyResult
from mtcabench.studies._tables import (
    Cost,
    Figure,
    Spans,
    compare,
    cost_of,
    diff_ci,
    f3,
    md,
    spans_of,
    with_ci,
)
from mtcabench.studies._tune import read_tuning, tune_scorer, write_tuning
from mtcabench.baselines import FLOORS
from mtcabench.studies._units import FLOOR, FLOOR_POINT, Models, RunSummary, run_units

#: Where the result files live, relative to the checkout (committed as they come).
RESULTS = Path("benchmarks") / "results"
UNITS, TUNING, WEIGHTS, TABLES = "units", "tuning.json", "at2-weights.json", "tables"
#: The sink study's result files (benchmarks/sink_study.py), beside the units.
SINK = "sink"
FIGURE = Path("docs") / "figures" / "ablation-curve.svg"
#: The blocks of docs/evaluate.md the tables replace once their runs are complete.
MARKERS = {"ablation-curve": ("<!-- ablation-curve:begin -->", "<!-- ablation-curve:end -->"),
           "ablation-test": ("<!-- ablation-test:begin -->", "<!-- ablation-test:end -->"),
           "peers": ("<!-- peers:begin -->", "<!-- peers:end -->"),
           "sink-study": ("<!-- sink-study:begin -->", "<!-- sink-study:end -->")}


def store(root: Path) -> ResultStore:
    return ResultStore(root / UNITS)


def select(results: Sequence[StudyResult], split: str, scorer: str, setting: str,
           seeds: Sequence[int] | None = None) -> list[StudyResult]:
    return [r for r in results if r.split == split and r.scorer == scorer
            and r.setting == setting and (seeds is None or r.seed in seeds)]


def reference_units(results: Sequence[StudyResult], split: str,
                    units: Sequence[StudyResult]) -> list[StudyResult]:
    """Average attention's units (seed 0, default settings) on the conversations of ``units``
    only, or all of them when there are none yet: other studies (the domains study) keep
    their average-attention units in the same folder."""
    sample = {u.conversation_id for u in units}
    return [r for r in select(results, split, "avg-attention", "default", (0,))
            if not sample or r.conversation_id in sample]


# --------------------------------------------------------------------------- the stages


def stage_curve(bench: Benchmark, root: Path, **run) -> RunSummary:
    return run_units(plan.curve_units(bench), store(root), **run)


def chosen_k(results: Sequence[StudyResult]) -> int | None:
    """K chosen on the dev curve (None until every K has every dev conversation of the plan's
    sample, as far as the result files show: all K on the same conversations)."""
    curve = curve_rows(results)
    convs = {k: n for k, (_, _, n, _) in curve.items()}
    if set(convs) != {0, *plan.CURVE_K} or len(set(convs.values())) != 1:
        return None
    return plan.choose_k({k: f["edge_f1"].value for k, (f, _, _, _) in curve.items() if k})


def stage_weights(bench: Benchmark, root: Path, *, models: Models, lock=None,
                  log: Callable[[str], None] = print) -> Path:
    """AT2's weights on training-split conversations (skipped when the file is there and was
    learned on the plan's conversations)."""
    from mtcabench.evaluate import learn_at2_weights
    from mtcabench.studies._units import held

    out = root / WEIGHTS
    chosen = [c for c, _ in plan.sample(bench, "train", 10**6)
              if sum(len(t.text) for t in c.turns) <= plan.AT2_MAX_CHARS][: plan.AT2_CONVERSATIONS]
    if out.is_file():
        ids = set(plan.check_training_split(out))
        if ids == {c.id for c in chosen}:
            log(f"AT2 weights: done ({out}, {len(ids)} training conversations)")
            return out
        log(f"AT2 weights: {out} was learned on other conversations; learning again")
    spans = {c.id: [s for s in bench.spans if s.conversation_id == c.id] for c in chosen}
    log(f"AT2 weights: learning on {len(chosen)} training-split conversations "
        f"({(plan.AT2_CONVERSATIONS) * 33} forward passes)")
    with held(lock):
        learn_at2_weights(models.get(plan.MODEL), chosen, spans, out, progress=False)
    plan.check_training_split(out)
    return out


def dev_units(bench: Benchmark, k: int, weights: Path):
    rows = [r for r in plan.peer_rows(k, weights) if r.scorer not in plan.TUNED_AS]
    rows = [plan.Row(r.scorer, r.setting, r.settings, r.queries, (0,)) for r in rows]
    return plan.units("peers", "dev", rows, plan.sample(bench, "dev", plan.DEV_CONVERSATIONS))


def stage_dev(bench: Benchmark, root: Path, k: int, weights: Path, **run) -> RunSummary:
    return run_units(dev_units(bench, k, weights), store(root), **run)


def stage_tune(bench: Benchmark, root: Path, k: int, weights: Path,
               log: Callable[[str], None] = print) -> dict:
    """Tuning of every peers-table scorer on its dev units (no model)."""
    results = [r for _, r in store(root).results()]
    tuning = {}
    for row in plan.peer_rows(k, weights):
        if row.scorer in plan.TUNED_AS:
            continue
        want = plan.SAMPLE_OF.get(row.scorer, {}).get("dev", plan.DEV_CONVERSATIONS)
        # The plan's dev sample only: other studies (the domains study's average attention)
        # keep dev units of the same scorer in the same folder, on other conversations.
        sample = {c.id for c, _ in plan.sample(bench, "dev", want)}
        dev = [r for r in select(results, "dev", row.scorer, row.setting, (0,))
               if r.conversation_id in sample]
        if len(dev) < want:
            raise ValueError(f"tuning {row.scorer}: {len(dev)} of its {want} dev units are "
                             "done; run the dev stage first")
        tuning[row.scorer] = tune_scorer(bench, dev)
        t = tuning[row.scorer]["tokengeist"]
        log(f"tuned {row.scorer} on {len(dev)} dev conversations: tokengeist {t['search']} "
            f"(dev edge F1 {t['dev']['edge_f1']:.3f})")
    for scorer, like in plan.TUNED_AS.items():
        tuning[scorer] = {**tuning[like], "as": like}
    write_tuning(root / TUNING, tuning)
    return tuning


def test_units(bench: Benchmark, k: int, weights: Path, tuning: dict):
    chosen = plan.sample(bench, "test", plan.TEST_CONVERSATIONS)
    rows = plan.peer_rows(k, weights)
    # The question first: the ablation scorer against average attention; then the rest.
    order = ["avg-attention", "ablation", "at2", "attntrace", "peer-at2", "peer-flashtrace",
             "peer-contextcite"]
    rows.sort(key=lambda r: order.index(r.scorer))
    points = plan.tuned_points({r.scorer: {m: v for m, v in tuning[r.scorer].items()
                                           if m in ("tokengeist", "flat")} for r in rows})
    return floor_units(bench) + plan.units("peers", "test", rows, chosen, points)


def floor_units(bench: Benchmark):
    """The model-free floors (every one of :data:`mtcabench.baselines.FLOORS`) on the
    comparison's test conversations, whose first ones are the peers' sample (both are the
    shortest of the test split): no model, no shares; the graphs from the conversation
    alone."""
    chosen = plan.sample(bench, "test", max(plan.COMPARISON_CONVERSATIONS,
                                            plan.TEST_CONVERSATIONS))
    return plan.units("peers", "test", [plan.Row(FLOOR, "floors", plan.AVG.settings)], chosen,
                      [FLOOR_POINT])


def stage_floors(bench: Benchmark, root: Path, **run) -> RunSummary:
    """The floors' units only (the test stage runs them too): seconds, no model, so that a
    floor added to the registry reaches the tables without a model stage."""
    return run_units(floor_units(bench), store(root), **run)


def comparison_units(bench: Benchmark, k: int):
    """The ablation scorer's test comparison: its chosen K over the seeds, average attention
    and the floors, at the default search settings (the peers' test stage adds their tuned
    points to the same units by replay)."""
    chosen = plan.sample(bench, "test", plan.COMPARISON_CONVERSATIONS)
    return plan.units("ablation-test", "test", [plan.AVG, plan.ablation_row(k, plan.SEEDS)],
                      chosen)


def stage_comparison(bench: Benchmark, root: Path, k: int, **run) -> RunSummary:
    return run_units(comparison_units(bench, k), store(root), **run)


def stage_test(bench: Benchmark, root: Path, k: int, weights: Path, **run) -> RunSummary:
    tuning = read_tuning(root / TUNING)
    return run_units(test_units(bench, k, weights, tuning), store(root), **run)


STAGES = ("curve", "comparison", "weights", "dev", "tune", "test", "floors")


def load_gold(folder: Path, raw: Path | None) -> Benchmark:
    """The studies' gold (the parameter study's: lineage on the real runs, accepted
    automatically), built into ``folder`` once and read from there after."""
    from mtcabench.benchmark import load_benchmark
    from mtcabench.studies._split import build_gold

    built = folder / "release" / "study"
    if not built.is_dir():
        build_gold(folder, raw, None, None)
    return load_benchmark(built)


def run_plan(stages: Sequence[str], root: Path, bench: Benchmark, *, models: Models | None = None,
             lock: Path | None = None, log: Callable[[str], None] = print,
             replay_only: bool = False) -> None:
    """The plan's ``stages`` in order (see :mod:`mtcabench.studies._plan`), each resumable.

    ``replay_only``: no model; the stored units' points are replayed where their settings or
    gold changed (a new default), the weights and the tuning are kept as they are."""
    models = models or Models()
    run = {"models": models, "lock": lock, "log": log, "replay_only": replay_only}
    k = weights = None

    def need_k() -> int:
        got = chosen_k([r for _, r in store(root).results()])
        if got is None:
            raise ValueError("the dev curve is not complete: run the curve stage first")
        return got

    for stage in stages:
        log(f"== stage {stage}")
        if stage == "curve":
            stage_curve(bench, root, **run)
        elif stage == "comparison":
            k = need_k()
            log(f"K = {k}, chosen on the dev curve")
            stage_comparison(bench, root, k, **run)
        elif stage == "floors":
            stage_floors(bench, root, **run)
        elif stage == "weights" and replay_only:
            log("AT2 weights: kept (replay only)")
        elif stage == "weights":
            weights = stage_weights(bench, root, models=models, lock=lock, log=log)
        else:
            k = k or need_k()
            weights = weights or root / WEIGHTS
            plan.check_training_split(weights)
            if stage == "dev":
                stage_dev(bench, root, k, weights, **run)
            elif stage == "tune" and replay_only:
                log("tuning: kept (replay only)")
            elif stage == "tune":
                stage_tune(bench, root, k, weights, log=log)
            elif stage == "test":
                stage_test(bench, root, k, weights, **run)
            else:
                raise ValueError(f"no stage {stage!r}: one of {', '.join(STAGES)}")


# --------------------------------------------------------------------------- the tables


def curve_rows(results: Sequence[StudyResult], method: str = "tokengeist") -> dict[
        int, tuple[dict[str, Figure], Cost | None, int, int]]:
    """Dev curve: per K (0: average attention), its figures against average attention, cost,
    conversations and spans."""
    curve = {k: select(results, "dev", "ablation", f"K={k}", (0,)) for k in plan.CURVE_K}
    ref_units = reference_units(results, "dev", [u for units in curve.values() for u in units])
    if not ref_units:
        return {}
    ref = spans_of(ref_units, "default", method)
    out = {0: _row(ref, None, ref_units, method)}
    for k, units in curve.items():
        if units:
            out[k] = _row(spans_of(units, "default", method), ref, units, method)
    return out


def _row(row: Spans, ref: Spans | None, units, method: str, point: str = "default"):
    figures, used, convs = compare(row, ref)
    return figures, cost_of(units, point, method), convs, len(used.ids)


def curve_table(results: Sequence[StudyResult]) -> tuple[str, dict]:
    rows = curve_rows(results)
    if not rows:
        return "", {}
    k = chosen_k(results)
    _, _, convs, spans = rows[0]
    lines = [
        f"Dev sample: the {convs} shortest dev conversations (all their {spans} spans), "
        "Tokengeist at the default search settings, seed 0; differences from Tokengeist over "
        "average attention with their 95% conversation-clustered paired bootstrap interval "
        "(1,000 resamples). Passes and seconds are model time per conversation on this "
        "machine." + (f" **Chosen: K = {k}** (the highest dev edge F1 at K <= {plan.MAX_K})."
                       if k else " Not every K is complete yet: no K is chosen."), ""]
    table = []
    for key, (f, cost, n, m) in rows.items():
        label = "avg-attention" if key == 0 else f"ablation, K = {key}"
        table.append([label, with_ci(f["edge_f1"]), diff_ci(f["edge_f1"]),
                      f3(f["edge_precision"].value), f3(f["edge_recall"].value),
                      f3(f["source_recall"].value), f"{cost.passes:.0f}" if cost else "",
                      f"{cost.seconds:.0f}" if cost else "", f"{n} / {m}"])
    lines += md(["Tokengeist over", "edge F1 [95% CI]", "difference [95% CI]", "precision",
                 "recall", "source R", "passes / conv.", "s / conv.", "conv. / spans"], table)
    beyond = next_doubling(rows)
    return "\n".join(lines + ([beyond] if beyond else [])), rows


def next_doubling(rows: dict) -> str:
    """Where more passes would take the curve: its gain per doubling of K, and, while those
    gains shrink, the most the next doubling could reach if it gained no more than the last.
    A bound read off the curve, not a measurement: said as such."""
    ks = sorted(k for k in rows if k)
    if 0 not in rows or len(ks) < 3 or any(b != 2 * a for a, b in zip(ks, ks[1:])):
        return ""
    f1 = {k: rows[k][0]["edge_f1"].value for k in [0, *ks]}
    gains = [f1[b] - f1[a] for a, b in zip(ks, ks[1:])]
    text = ("Per doubling of K, dev edge F1 changed by "
            + ", ".join(f"{g:+.3f}" for g in gains) + f" (K = {ks[0]} to {ks[-1]}).")
    if all(g > 0 for g in gains) and all(b < a for a, b in zip(gains, gains[1:])):
        top = f1[ks[-1]] + gains[-1]
        text += (f" The gains shrink: if K = {2 * ks[-1]} ({2 * ks[-1] + 1} passes) gained no "
                 f"more than the last doubling, its dev edge F1 would be at most {top:.3f}, "
                 f"{top - f1[0]:+.3f} from average attention's {f1[0]:.3f} (an extrapolation "
                 "from the curve, not a run).")
    return text


def curve_figure(rows: dict, path: Path) -> Path:
    """Edge F1 against passes per conversation (log scale), each K with its interval, average
    attention as a band: an SVG written atomically."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "mtcabench-ablation-curve"  # the same file for the same data
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    ks = [k for k in rows if k]
    if 0 in rows:
        f = rows[0][0]["edge_f1"]
        ax.axhspan(f.low, f.high, color="#9ecae1", alpha=0.5, lw=0,
                   label="avg-attention (1 pass), 95% CI")
        ax.axhline(f.value, color="#3182bd", lw=1.5)
    if ks:
        passes = [k + 1 for k in ks]
        vals = [rows[k][0]["edge_f1"].value for k in ks]
        err = [[v - rows[k][0]["edge_f1"].low for k, v in zip(ks, vals)],
               [rows[k][0]["edge_f1"].high - v for k, v in zip(ks, vals)]]
        ax.errorbar(passes, vals, yerr=err, fmt="o-", color="#e6550d", capsize=3,
                    label="ablation, K + 1 passes, 95% CI")
        ax.set_xscale("log", base=2)
        ax.set_xticks(passes, [f"{p}\n(K={k})" for p, k in zip(passes, ks)])
    ax.axvline(plan.MAX_K + 1, color="grey", ls=":", lw=1)
    ax.set_xlabel("forward passes per conversation")
    ax.set_ylabel("edge F1 (macro), Tokengeist")
    n = rows[0][2] if 0 in rows else 0
    ax.set_title(f"Dev: Tokengeist over the ablation scorer ({n} conversations)", fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    plt.close(fig)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path) as fh:
        fh.write(buf.getvalue())
    return path


def comparison_table(results: Sequence[StudyResult], k: int | None) -> str:
    """Test split: Tokengeist over ablation at the chosen K (its seeds averaged, and each
    seed) against Tokengeist over average attention, default search settings."""
    units = select(results, "test", "ablation", f"K={k}") if k else []
    ref_units = reference_units(results, "test", units)
    if not ref_units or not units:
        return ""
    ref = spans_of(ref_units, "default", "tokengeist")
    rows = [("avg-attention", ref_units, ref)]
    seeds = sorted({u.seed for u in units})
    rows.append((f"ablation, K = {k}, mean of {len(seeds)} seeds", units,
                 spans_of(units, "default", "tokengeist")))
    for s in seeds:
        one = [u for u in units if u.seed == s]
        rows.append((f"ablation, K = {k}, seed {s}", one, spans_of(one, "default", "tokengeist")))
    # The floors on the same conversations, beside the scorers (no model: no passes).
    sample_ids = {u.conversation_id for u in ref_units}
    floors = [r for r in select(results, "test", FLOOR, "floors")
              if r.conversation_id in sample_ids]
    if floors:
        rows += [(f"floor: {name} (model-free)", floors, spans_of(floors, "default", name))
                 for name in FLOORS]
    table, sample = [], ""
    for label, us, sp in rows:
        floor = us is floors
        f, cost, n, m = _row(sp, None if sp is ref else ref, [] if floor else us, "tokengeist")
        sample = sample or f"{n} conversations, all their {m} spans"
        table.append([label, with_ci(f["edge_f1"]), diff_ci(f["edge_f1"]),
                      f"{f['edge_f1'].p:.3f}" if f["edge_f1"].p is not None else "",
                      f3(f["edge_precision"].value), f3(f["edge_recall"].value),
                      with_ci(f["source_recall"]), diff_ci(f["source_recall"]),
                      "0" if floor else f"{cost.passes:.0f}" if cost else "", f"{n} / {m}"])
    lines = [f"Test split ({sample}), Tokengeist at the default search settings; a sampling "
             "row's spans averaged over its seeds first; differences from "
             "Tokengeist over average attention on the same spans, 95% conversation-clustered "
             "paired bootstrap intervals (1,000 resamples) and their two-sided p-values; the "
             "model-free floors (every one of the registry: recency, first-user, string-match, "
             "the lineage rules used as a method) on the same spans.", ""]
    lines += md(["Tokengeist over (or floor)", "edge F1 [95% CI]", "difference [95% CI]", "p",
                 "precision", "recall", "source R [95% CI]", "difference [95% CI]",
                 "passes / conv.", "conv. / spans"], table)
    return "\n".join(lines)


def peers_table(results: Sequence[StudyResult], k: int | None, tuning: dict | None) -> str:
    """Test split, every row at its scorer's tuned settings (the floors as they are), against
    Tokengeist over average attention at its tuned settings."""
    if not k or not tuning:
        return ""
    # The peers' sample: the conversations their test stage tuned average attention on (the
    # comparison's units, and the floors', hold more).
    sample = {r.conversation_id for r in select(results, "test", "avg-attention", "default")
              if "tuned-tokengeist" in r.points}
    results = [r for r in results if r.conversation_id in sample]
    floors = select(results, "test", FLOOR, "floors")
    ref_units = select(results, "test", "avg-attention", "default", (0,))
    if not ref_units:
        return ""
    ref = spans_of(ref_units, "tuned-tokengeist", "tokengeist")
    table = []
    for row in plan.peer_rows(k, None):
        units = select(results, "test", row.scorer, row.setting)
        if not units:
            continue
        for method in ("tokengeist", "flat"):
            if row.queries == "flat" and method == "tokengeist":
                continue
            point = f"tuned-{method}"
            sp = spans_of(units, point, method)
            is_ref = row.scorer == "avg-attention" and method == "tokengeist"
            f, cost, n, m = _row(sp, None if is_ref else ref, units, method, point)
            seeds = len({u.seed for u in units})
            how = plan.via(row.scorer, method)
            table.append(_peer_cells(method, row.scorer, row.setting, how, seeds, f, cost, n, m))
    for method in FLOORS:
        if floors:
            sp = spans_of(floors, "default", method)
            f, _, n, m = _row(sp, ref, floors, method)
            table.append(_peer_cells(method, "-", "", "model-free", 1, f, Cost(0, 0, "none"), n,
                                     m))
    tuned = ", ".join(f"{s}: {_search(t['tokengeist']['search'])}" for s, t in tuning.items()
                      if "as" not in t)
    lines = [
        "Test sample; every row at the search settings tuned for its scorer and method on the "
        "dev sample (Tokengeist's: " + tuned + "; peer-contextcite takes the ablation "
        "scorer's, the same estimator); differences from Tokengeist over average attention on "
        "the same spans with 95% conversation-clustered paired bootstrap intervals (1,000 "
        "resamples). Seeds: a sampling scorer's spans are averaged over its seeds first. "
        "Passes and seconds per conversation: measured for scorers that share passes across "
        "queries; for a package run once per query, counted: its passes per query times the "
        "queries the method asks (flat: one per span; Tokengeist: one per span and recursion "
        "step, as its package would be run).", ""]
    lines += md(["method", "base scorer", "setting", "via", "seeds", "edge F1 [95% CI]",
                 "difference [95% CI]", "source R", "difference [95% CI]",
                 "original-source R", "difference [95% CI]", "passes / conv.", "s / conv.",
                 "conv. / spans"], table, left=4)
    return "\n".join(lines)


def _search(s: dict) -> str:
    return f"top_k {s['top_k']}, threshold {s['threshold']}, alpha {s['alpha']}, d_max {s['d_max']}"


def _peer_cells(method, scorer, setting, how, seeds, f, cost, n, m) -> list[str]:
    passes = "0" if cost and cost.how == "none" else (
        f"{cost.passes:.0f}" + ("*" if cost.how == "counted" else "") if cost else "")
    secs = "-" if cost and cost.how == "none" else (f"{cost.seconds:.0f}" if cost else "")
    return [method, scorer, setting, how, str(seeds), with_ci(f["edge_f1"]), diff_ci(f["edge_f1"]),
            f3(f["source_recall"].value), diff_ci(f["source_recall"]),
            f3(f["original_recall"].value), diff_ci(f["original_recall"]), passes, secs,
            f"{n} / {m}"]


def missing(results: Sequence[StudyResult], k: int | None, tuning: dict | None) -> dict[
        str, list[str]]:
    """Per table, the planned units (by split, scorer, setting and seed) whose result files
    are not all there, as far as the plan's sample sizes say (conversations per unit group)."""
    def lacking(split, scorer, setting, seeds, want) -> list[str]:
        got = select(results, split, scorer, setting)
        out = []
        for seed in seeds:
            n = len([r for r in got if r.seed == seed])
            if n < want:
                out.append(f"{split} {scorer} {setting} seed {seed}: {n} of {want}")
        return out

    dev, test = plan.DEV_CONVERSATIONS, plan.TEST_CONVERSATIONS
    curve = lacking("dev", "avg-attention", "default", (0,), dev)
    for kk in plan.CURVE_K:
        curve += lacking("dev", "ablation", f"K={kk}", (0,), dev)
    out = {"ablation-curve": curve, "sink-study": []}  # the sink's plan: its --conversations
    if k is None:
        out["ablation-test"] = out["peers"] = ["no K chosen yet"]
        return out
    whole = plan.COMPARISON_CONVERSATIONS
    floors = lacking("test", FLOOR, "floors", (0,), max(whole, test))
    out["ablation-test"] = (lacking("test", "avg-attention", "default", (0,), whole)
                            + lacking("test", "ablation", f"K={k}", plan.SEEDS, whole) + floors)
    peers = [] if tuning else ["no tuning yet"]
    for row in plan.peer_rows(k, None):
        want = plan.SAMPLE_OF.get(row.scorer, {}).get("test", test)
        peers += lacking("test", row.scorer, row.setting, row.seeds, want)
    out["peers"] = peers + floors
    return out


def sink_table(root: Path) -> str:
    """The sink study's variants against the first (the one shipped before), from its result
    files: edge F1, precision, recall, wrong edges to the system turn per span, evidence
    hit@3, each difference with its conversation-clustered paired interval."""
    results = [r for _, r in ResultStore(root / SINK).results()]
    if not results:
        return ""
    order = {r.setting: r.settings.get("order", 0) for r in results}
    names = sorted(order, key=order.get)
    extras = ("system_wrong",)
    metrics = ("edge_f1", "edge_precision", "edge_recall", "evidence_hit")
    rows = {n: spans_of([r for r in results if r.setting == n], "default", "tokengeist", extras)
            for n in names}
    base = rows[names[0]]
    table = []
    for n in names:
        f, used, convs = compare(rows[n], None if n == names[0] else base, metrics=metrics)
        table.append([n, f3(f["edge_f1"].value) + (f" ({diff_ci(f['edge_f1'])})"
                                                   if f["edge_f1"].diff is not None else ""),
                      f3(f["edge_precision"].value), f3(f["edge_recall"].value),
                      f3(f["system_wrong"].value) + (f" ({diff_ci(f['system_wrong'])})" if
                                                     f["system_wrong"].diff is not None else ""),
                      f3(f["evidence_hit"].value) + (f" ({diff_ci(f['evidence_hit'])})" if
                                                     f["evidence_hit"].diff is not None else ""),
                      f"{convs} / {len(used.ids)}"])
    lines = [f"Dev: {table[0][-1].split(' / ')[0]} conversations; differences from the first "
             "variant with 95% conversation-clustered paired bootstrap intervals (1,000 "
             "resamples); from the sink study's result files.", ""]
    lines += md(["variant", "edge F1", "edge precision", "edge recall",
                 "wrong edges to the system turn, per span", "evidence hit@3",
                 "conv. / spans"], table)
    return "\n".join(lines)


def write_tables(root: Path, *, docs: Path | None = None, figure: Path | None = None,
                 partial: bool = False, log: Callable[[str], None] = print) -> dict[str, str]:
    """Every table (``root``/tables/*.md) and the curve figure from the result files; with
    ``docs``, each table whose planned results are all there (any, with ``partial``) also
    replaces its block in that page, whose older figures stay until then. Returns the tables
    by name."""
    results = [r for _, r in store(root).results()]
    k = chosen_k(results)
    tuning_path = root / TUNING
    tuning = json.loads(tuning_path.read_text(encoding="utf-8")) if tuning_path.is_file() else None
    curve, rows = curve_table(results)
    tables = {"ablation-curve": curve, "ablation-test": comparison_table(results, k),
              "peers": peers_table(results, k, tuning), "sink-study": sink_table(root)}
    out = root / TABLES
    out.mkdir(parents=True, exist_ok=True)
    with all_or_nothing():
        for name, text in tables.items():
            if text:
                with atomic_write(out / f"{name}.md") as fh:
                    fh.write(text + "\n")
    if rows:
        curve_figure(rows, figure or out / "ablation-curve.svg")
    lacking = missing(results, k, tuning)
    for name, text in tables.items():
        left = lacking[name]
        state = "no results yet" if not text else (
            f"written, incomplete ({len(left)} unit groups short: {'; '.join(left[:3])}"
            + (" ..." if len(left) > 3 else "") + ")" if left else "written, complete")
        log(f"{name}: {state}")
        if docs is not None and text and (partial or not left):
            if name == "ablation-curve" and figure is not None and rows:
                rel = Path(os.path.relpath(figure, docs.parent)).as_posix()
                text += f"\n\n![The dev curve: edge F1 against passes per conversation]({rel})"
            write_docs(docs, text, *MARKERS[name])
            log(f"{docs}: {name} block replaced")
    return tables
