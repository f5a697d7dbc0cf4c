"""How far the claims are from issue 47's bar, per claim kind, and what bounds each kind.

The bar: edge F1 0.70 and source recall 0.85 (Tokengeist over the default scorer and model).
What bounds a kind (or a domain) is read from the stored shares at the first hop (the claim's own turn to
its parents, where every graph starts): a gold parent the base scorer does not rank among the
search's top-k turns with at least its threshold share cannot be selected by the search at any
relative pruning, nor, for the system turn of an open claim, kept by the policy rule (a share
of at least ``open_system``), so the share of such parents is a bound the search cannot lift;
the rest are reachable, and the search either keeps them or prunes them (``alpha``). Counted by
the parent's role, since the roles fail for different reasons (docs/evaluate.md, "Claims").
"""

from __future__ import annotations

from collections.abc import Sequence

from mtcabench.benchmark import Benchmark
from mtcabench.evaluate import SearchSettings, is_open
from mtcabench.model import ClaimKind, Role
from mtcabench.studies._claims import SCORER, SETTING, claim_units
from mtcabench.studies._results import StudyResult
from mtcabench.studies._shares import ShareTables
from mtcabench.studies._tables import compare, md, spans_of, with_ci

#: Issue 47's bar for claims, in every domain.
EDGE_F1_BAR, SOURCE_RECALL_BAR = 0.70, 0.85
ROLES = ("system", "user", "tool", "assistant")


def claim_bounds(results: Sequence[StudyResult], bench: Benchmark, split: str,
                 search: SearchSettings = SearchSettings()) -> str:
    """Per claim kind, per domain, then all claims: edge F1 and source recall with their intervals and
    their distance to the bar; the first hop's gold parents, how many the base scorer puts
    within the search's reach, how many the graph holds, and the unreachable ones by role."""
    sample = {u.conversation.id for u in claim_units(bench, split)}
    units = [r for r in results if r.split == split and r.scorer == SCORER
             and r.setting == SETTING and r.seed == 0 and r.conversation_id in sample
             and r.shares is not None]
    if not units:
        return ""
    spans = bench.span_index()
    tg = spans_of(units, "default", "tokengeist")
    reach: dict[str, list[int]] = {}  # kind -> [gold, reachable, found, *unreachable by role]
    for r in units:
        conv = bench.conversations[r.conversation_id]
        tables = ShareTables.from_json(r.shares)
        found_edges = {s.span_id: {(c, p) for c, p, _ in s.edges}
                       for s in r.points["default"].methods["tokengeist"]}
        for sid, shares in tables.targets.items():
            span = spans.get(sid)
            if span is None or sid not in found_edges:
                continue
            turn = span.span.turn
            ranked = sorted(shares, key=lambda t: -shares[t])[: search.top_k]
            policy = (search.open_system is not None and is_open(conv, turn, span.span.text))
            for key in (f"kind: {span.claim_kind.value}", f"domain: {span.domain}", "all"):
                row = reach.setdefault(key, [0] * (3 + len(ROLES)))
                for child, parent in span.graph.pairs():
                    if child != turn:
                        continue
                    row[0] += 1
                    share = shares.get(parent, 0.0)
                    if (parent in ranked and share >= search.threshold) or (
                            policy and conv.turns[parent].role is Role.SYSTEM
                            and share >= search.open_system):
                        row[1] += 1
                    else:
                        row[3 + ROLES.index(conv.turns[parent].role.value)] += 1
                    row[2] += (child, parent) in found_edges[sid]
    kinds = [f"kind: {k.value}" for k in ClaimKind if f"kind: {k.value}" in reach]
    domains = sorted(k for k in reach if k.startswith("domain: "))
    ids_of = {key: [i for i in tg.ids if key in (f"kind: {spans[i].claim_kind.value}",
                                                 f"domain: {spans[i].domain}", "all")]
              for key in reach}
    rows = []
    for label in (*kinds, *domains, "all"):
        ids, counts = ids_of[label], reach[label]
        f, _, n = compare(tg.take(ids), None)
        if n < 2:  # one conversation: its value, no interval
            for fig in f.values():
                fig.low = fig.high = None
        e, s = f["edge_f1"].value, f["source_recall"].value
        gold, ok, found = counts[:3]
        rows.append([label, f"{n} / {len(ids)}", with_ci(f["edge_f1"]),
                     f"{e - EDGE_F1_BAR:+.3f}", with_ci(f["source_recall"]),
                     f"{s - SOURCE_RECALL_BAR:+.3f}", str(gold),
                     f"{ok} ({ok / gold:.0%})" if gold else "0", str(found),
                     *(str(c) for c in counts[3:])])
    lines = [f"Claims, {split} split, against the bar (edge F1 {EDGE_F1_BAR:.2f}, source recall "
             f"{SOURCE_RECALL_BAR:.2f}): Tokengeist over average attention, default settings, "
             "95% conversation-clustered intervals; at the first hop, the claim's gold parents, "
             f"those within the search's reach (among the top {search.top_k} turns and at least "
             f"{search.threshold:g} of the claim's attention"
             + (f", or the policy with at least {search.open_system:g}"
                if search.open_system is not None else "")
             + "), those the graph holds, and the unreachable ones by the parent's role (no "
             "search setting selects them).", ""]
    lines += md(["claims", "conv. / claims", "edge F1", "to 0.70", "source R", "to 0.85",
                 "first-hop gold parents", "within reach", "found",
                 *(f"out of reach: {r}" for r in ROLES)], rows)
    return "\n".join(lines)
