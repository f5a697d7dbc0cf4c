"""The sentence relayed (issue 47, item 2): an assistant turn the search enters asked about its
sentences that restate the text that drew on it, against asked as a whole, on the claims and on
the values of the same samples.

The sentences are queries of their own, so the units are computed again with them among the
pass's queries (setting ``<setting>-relay``: the claims study's claims and the domains study's
sample of the split, taken in turn, shortest first, so a stopped run holds both). Each unit is
replayed at two points from the same shares: ``default`` (the turn as a whole, today's search)
and ``relay`` (``relay_sentences``); the table pairs them on the same spans
(:func:`relay_table`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from mtcabench.benchmark import Benchmark
from mtcabench.evaluate import SearchSettings, TraceSettings
from mtcabench.studies._models import PER_GROUP, in_turn, samples
from mtcabench.studies._results import StudyResult
from mtcabench.studies._tables import compare, cost_of, diff_ci, md, spans_of, with_ci
from mtcabench.studies._units import SearchPoint, Unit

RELAY = SearchSettings(relay_sentences=True)
POINTS = (SearchPoint("default", methods=("tokengeist",)),
          SearchPoint("relay", RELAY, ("tokengeist",)))


def relay_units(claims: Benchmark, values: Benchmark, split: str) -> list[Unit]:
    """The claims sample's units and the values sample's, with the sentences of every
    assistant turn among the queries, taken in turn (each shortest first)."""
    return [replace(u, setting=f"{u.setting}-relay", settings=TraceSettings(search=RELAY),
                    points=POINTS) for u in in_turn(claims, values, split)]


def relay_table(results: Sequence[StudyResult], claims: Benchmark, values: Benchmark,
                split: str) -> str:
    """Per sample: Tokengeist with the entered turns asked as a whole and by the sentence
    relayed, edge F1 and source recall with the paired difference, and the model time of the
    units (the sentences are more queries of the same passes)."""
    rows = []
    for name, units in samples(claims, values, split).items():
        want = {(u.conversation.id, f"{u.setting}-relay") for u in units}
        got = [r for r in results if r.split == split and r.seed == 0
               and (r.conversation_id, r.setting) in want]
        if not got:
            continue
        whole = spans_of(got, "default", "tokengeist")
        cost = cost_of(got, "default", "tokengeist")
        for label in ("default", "relay"):
            f, used, n = compare(spans_of(got, label, "tokengeist"),
                                 None if label == "default" else whole)
            done = f"{n} of {len(units)}" if n < len(units) else str(n)
            rows.append([name, "as a whole" if label == "default" else "the sentence relayed",
                         f"{done} / {len(used.ids)}", with_ci(f["edge_f1"]),
                         diff_ci(f["edge_f1"]), with_ci(f["source_recall"]),
                         diff_ci(f["source_recall"]),
                         f"{cost.seconds:.1f}" if cost else ""])
    if not rows:
        return ""
    lines = [f"The sentence relayed, {split} split: Tokengeist over average attention (SmolLM2-"
             "135M, default settings) with an entered assistant turn asked about as a whole "
             "(today) or about its sentences that restate the text that drew on it "
             "(`relay_sentences`), replayed from the same passes; the claims study's claims and "
             f"the domains study's value spans (the {PER_GROUP} shortest conversations per "
             "domain and agent model); differences paired on the same spans with 95% "
             "conversation-clustered intervals (1,000 resamples); model seconds per conversation "
             "with the sentences among the queries.", ""]
    lines += md(["spans", "entered turn asked", "conv. / spans", "edge F1", "difference",
                 "source R", "difference", "s / conv."], rows, left=2)
    return "\n".join(lines)
