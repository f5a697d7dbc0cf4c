"""The peers on claims (issue 47, item 4): the peers table's base scorers (AT2 with its
training-split weights, AttnTrace, the ablation scorer at the K chosen on the values' dev
curve, and the at2, context-cite and flashtrace packages) under Tokengeist and flat on the
annotated claims, against Tokengeist over average attention on the same claims, with the
model-free floors beside them.

**Sample** (:func:`claim_peer_units`): the :data:`CONVERSATIONS` shortest conversations of the
split that hold a claim (the claims study's order), every claim of each; a row that costs a
package call per query on fewer, the two rows of one pass per conversation (average attention,
the reference, and AT2) on every conversation of the split (:data:`SAMPLE_OF`). A pass over a tau2 conversation costs a
minute on this machine (its policy is thousands of tokens), so the ablation scorer's 33 passes
per conversation and seed are what the sample is sized for.

**Order**: every row at seed 0 before any second seed, cheapest row first, so a stopped run
leaves whole rows behind it and every row's first conversations come first; the same command
resumes (one result file per unit, under a setting label of its own: ``claims-`` and the
values table's label, since the values study's units of the same conversation hold other
spans).

**Settings**: every row at the default search settings, the claims headline's (the dev grid
moved no setting beyond its interval on claims; tuning each peer on claims' dev would cost
its dev run again). **Table** (:func:`claim_peers_table`): per row, edge F1 and source recall
with 95% conversation-clustered intervals, the paired difference from Tokengeist over average
attention on the same claims, passes and seconds per conversation; a sampling row averages a
span over the seeds that cover the row's conversations.
"""

from __future__ import annotations

from collections.abc import Sequence

from mtcabench.benchmark import Benchmark
from mtcabench.studies import _plan as plan
from mtcabench.studies._claims import FLOOR_METHODS, SCORER, SETTING, claim_units
from mtcabench.studies._results import StudyResult
from mtcabench.studies._tables import Cost, compare, cost_of, diff_ci, md, spans_of, with_ci
from mtcabench.studies._units import SearchPoint, Unit

STUDY = "claims-peers"
#: The conversations of the sample (the split's shortest holding a claim).
CONVERSATIONS = 5
#: Rows that cost a package call per query (and FlashTrace's 30-60 s per span) on fewer; the
#: rows of one pass per conversation on the whole split (None).
SAMPLE_OF: dict[str, int | None] = {"avg-attention": None, "at2": None, "peer-flashtrace": 3,
                                    "peer-contextcite": 2}
#: Cheapest first (a pass or two per conversation, then the sampling scorers, then the
#: packages run once per query).
ORDER = ("avg-attention", "at2", "peer-at2", "attntrace", "ablation", "peer-flashtrace",
         "peer-contextcite")


def setting_of(row: plan.Row) -> str:
    """The units' setting label: the values table's, marked as the claims'."""
    return f"claims-{row.setting}"


def claim_peer_units(bench: Benchmark, split: str, k: int, weights) -> list[Unit]:
    """Every (seed, row, conversation) unit of the sample, seed-major, cheapest row first."""
    chosen = claim_units(bench, split)
    rows = sorted(plan.peer_rows(k, weights), key=lambda r: ORDER.index(r.scorer))
    out = []
    for seed in plan.SEEDS:
        for row in rows:
            if seed not in row.seeds:
                continue
            methods = ("flat",) if row.queries == "flat" else ("tokengeist", "flat")
            for u in chosen[: SAMPLE_OF.get(row.scorer, CONVERSATIONS)]:  # [:None]: all
                out.append(Unit(STUDY, split, u.conversation, u.spans, row.scorer,
                                setting_of(row), row.at_seed(seed), row.queries,
                                (SearchPoint("default", methods=methods),), plan.MODEL))
    return out


def _covering_seeds(units: Sequence[StudyResult]) -> list[StudyResult]:
    """The units of the seeds that cover every conversation seed 0 has (a sampling row whose
    later seeds are still running is shown over the seeds done, not over fewer spans)."""
    by_seed: dict[int, set[str]] = {}
    for u in units:
        by_seed.setdefault(u.seed, set()).add(u.conversation_id)
    first = by_seed.get(min(by_seed, default=0), set())
    keep = {s for s, convs in by_seed.items() if convs >= first}
    return [u for u in units if u.seed in keep]


def claim_peers_table(results: Sequence[StudyResult], bench: Benchmark, split: str, k: int
                      ) -> str:
    """The table of the module docstring, from the result files (no model)."""
    sample = [u.conversation.id for u in claim_units(bench, split)]
    mine = [r for r in results if r.split == split and r.conversation_id in sample]
    ref_units = [r for r in mine if r.scorer == "avg-attention"
                 and r.setting == setting_of(plan.AVG) and r.seed == 0]
    if not ref_units:
        return ""
    ref = spans_of(ref_units, "default", "tokengeist")
    table = []
    for row in sorted(plan.peer_rows(k, None), key=lambda r: ORDER.index(r.scorer)):
        units = _covering_seeds([r for r in mine if r.scorer == row.scorer
                                 and r.setting == setting_of(row)])
        if not units:
            continue
        for method in ("tokengeist", "flat"):
            if row.queries == "flat" and method == "tokengeist":
                continue
            is_ref = row.scorer == "avg-attention" and method == "tokengeist"
            f, used, n = compare(spans_of(units, "default", method), None if is_ref else ref)
            seeds = len({u.seed for u in units})
            how = plan.via(row.scorer, method)
            table.append(_cells(method, row.scorer, row.setting, how, seeds, f,
                                cost_of(units, "default", method), n, len(used.ids)))
    # The floors, from the claims study's units of the same conversations (no model).
    floors = [r for r in results if r.split == split and r.scorer == SCORER
              and r.setting == SETTING and r.seed == 0 and r.conversation_id in sample]
    for method in FLOOR_METHODS if floors else ():
        f, used, n = compare(spans_of(floors, "default", method), ref)
        table.append(_cells(method, "-", "", "model-free", 1, f, Cost(0, 0, "none"), n,
                            len(used.ids)))
    lines = [
        f"Claims, {split} split, the peers: the {CONVERSATIONS} shortest conversations of the "
        "split holding a claim, all their claims (FlashTrace and ContextCite on the first "
        f"ones; average attention and AT2, one pass each, on all {len(ref_units)} conversations "
        "with a claim), every row at the default search settings, SmolLM2-135M; the "
        "ablation scorer at K = "
        f"{k} (chosen on the values' dev curve), AT2 with its training-split weights. "
        "Differences from Tokengeist over average attention on the same claims with 95% "
        "conversation-clustered paired bootstrap intervals (1,000 resamples); a sampling row "
        "averages each claim over its seeds first. Passes and seconds per conversation: "
        "measured for scorers that share passes across queries, counted for a package run once "
        "per query (its passes per query times the queries the method asks).", ""]
    lines += md(["method", "base scorer", "setting", "via", "seeds", "edge F1 [95% CI]",
                 "difference [95% CI]", "source R [95% CI]", "difference [95% CI]",
                 "passes / conv.", "s / conv.", "conv. / claims"], table, left=4)
    return "\n".join(lines)


def _cells(method, scorer, setting, how, seeds, f, cost, n, m) -> list[str]:
    if n < 2:  # resampling one conversation gives no interval, only its value
        for fig in f.values():
            fig.low = fig.high = fig.diff_low = fig.diff_high = fig.p = None
    none = cost is not None and cost.how == "none"
    passes = "0" if none else (f"{cost.passes:.0f}" + ("*" if cost.how == "counted" else "")
                               if cost else "")
    secs = "-" if none else (f"{cost.seconds:.0f}" if cost else "")
    return [method, scorer, setting, how, str(seeds), with_ci(f["edge_f1"]),
            diff_ci(f["edge_f1"]), with_ci(f["source_recall"]), diff_ci(f["source_recall"]),
            passes, secs, f"{n} / {m}"]
