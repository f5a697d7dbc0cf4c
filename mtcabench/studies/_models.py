"""The evaluator's base model (issue 47, item 3): Tokengeist and flat over average attention
with each packaged model, on the claims and on the values of the same dev samples, quality
against cost per conversation.

**Samples**: the claims study's split (:func:`claim_units`: every conversation holding a claim)
and the domains study's sample of the same split (:func:`domain_units`, the two shortest
conversations per domain and agent model): the samples the claims grid compared the search
settings on. **Units**: each model's own store, ``RESULTS/models/<model>/units`` (a unit's file
is named by split, scorer, setting, seed and conversation, not by model: one store per model
keeps one model's run from replacing another's), the default settings. **Table**
(:func:`model_table`): per model and sample, Tokengeist's edge F1 and source recall with 95%
conversation-clustered intervals, the paired difference from the first model on the same spans,
flat's edge F1, and model seconds and forward passes per conversation (the machine's own, the
units run one model at a time).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from itertools import zip_longest
from pathlib import Path

from mtcabench.benchmark import Benchmark
from mtcabench.files import derived_name
from mtcabench.studies._claims import claim_units
from mtcabench.studies._domains import domain_units
from mtcabench.studies._results import StudyResult
from mtcabench.studies._tables import compare, cost_of, diff_ci, md, spans_of, with_ci
from mtcabench.studies._units import Unit

#: The domains study's sample size per (domain, agent model).
PER_GROUP = 2


def model_root(results: Path, model: str) -> Path:
    """Where a model's units live under the studies' results folder."""
    return Path(results) / "models" / derived_name(model, default="model")


def samples(claims: Benchmark, values: Benchmark, split: str) -> dict[str, list[Unit]]:
    """The two samples a change is measured on, claims beside values: the claims study's
    units of ``split`` and the domains study's (:data:`PER_GROUP` per group)."""
    return {"claims": claim_units(claims, split),
            "values": domain_units(values, split, PER_GROUP)}


def in_turn(claims: Benchmark, values: Benchmark, split: str) -> list[Unit]:
    """Both samples' units taken in turn, each shortest first: a run stopped early holds
    both, and the same command goes on from there."""
    c, v = samples(claims, values, split).values()
    return [u for pair in zip_longest(c, v) for u in pair if u is not None]


def model_units(claims: Benchmark, values: Benchmark, split: str, model: str) -> list[Unit]:
    """Both samples' units under ``model``, taken in turn (:func:`in_turn`: the table pairs a
    stopped run with the reference on the spans it holds)."""
    return [replace(u, model=model) for u in in_turn(claims, values, split)]


def _sample(results: Sequence[StudyResult], units: Sequence[Unit]) -> list[StudyResult]:
    want = {(u.conversation.id, u.scorer, u.setting) for u in units}
    return [r for r in results if r.seed == 0 and r.split == units[0].split
            and (r.conversation_id, r.scorer, r.setting) in want] if units else []


def model_table(by_model: dict[str, Sequence[StudyResult]], claims: Benchmark,
                values: Benchmark, split: str) -> str:
    """The table of the module docstring; the first model of ``by_model`` is the reference."""
    refs: dict[str, tuple] = {}
    rows = []
    for model, results in by_model.items():
        for name, units in samples(claims, values, split).items():
            got = _sample(results, units)
            if not got:
                continue
            tg = spans_of(got, "default", "tokengeist")
            ref, ref_units = refs.setdefault(name, (tg, got))
            f, used, n = compare(tg, None if ref is tg else ref)
            flat, _, _ = compare(spans_of(got, "default", "flat"), None)
            cost = cost_of(got, "default", "tokengeist")
            # Model time against the reference's on the same conversations (a stopped run
            # holds the shorter ones).
            mine = {r.conversation_id for r in got}
            base = sum(r.seconds for r in ref_units if r.conversation_id in mine)
            ratio = sum(r.seconds for r in got) / base if base else None
            complete = f"{len(got)} of {len(units)}" if len(got) < len(units) else str(n)
            rows.append([model, name, f"{complete} / {len(used.ids)}", with_ci(f["edge_f1"]),
                         diff_ci(f["edge_f1"]), with_ci(f["source_recall"]),
                         diff_ci(f["source_recall"]), with_ci(flat["edge_f1"]),
                         f"{cost.seconds:.1f}" if cost else "",
                         f"{ratio:.1f}x" if ratio is not None else "",
                         f"{cost.passes:.1f}" if cost else ""])
    if not rows:
        return ""
    first = next(iter(by_model))
    lines = [f"The evaluator's base model, {split} split: Tokengeist over average attention at the "
             "default search settings on the claims study's claims and on the domains study's "
             f"value spans (the {PER_GROUP} shortest conversations per domain and agent model); "
             "95% conversation-clustered bootstrap intervals (1,000 resamples); differences "
             f"from {first} paired on the same spans; model seconds per conversation, the same "
             f"against {first}'s on the same conversations, and forward passes per conversation, "
             "on this machine (2 cores, float32), one model at a time.", ""]
    lines += md(["model", "spans", "conv. / spans", "Tokengeist edge F1", "difference",
                 "source R", "difference", "flat edge F1", "s / conv.", "time", "passes / conv."],
                rows, left=2)
    return "\n".join(lines)
