"""The claims study: Tokengeist against flat and the model-free floors on the annotated claims,
per claim kind, per domain and per agent model, with conversation-clustered intervals (issue
44's headline on claims; issue 47 measures its changes with it).

**Gold**: the claims of a release built by ``scripts/build_benchmark.sh`` (the annotated set:
a person's graph, checked edge by edge by a second; docs/claims.md), read from the release
folder. **Sample** (:func:`claim_units`): every conversation of the split that holds a claim,
with every claim of it, shortest first (a run stopped early covers the most conversations).
**Table** (:func:`claim_table`): Tokengeist and flat over average attention at the default
search settings, and the floors string-match (the lineage rules as a method), recency and
first-user on the same spans: edge F1 with its 95% conversation-clustered interval, the paired
difference Tokengeist - flat, and source recall.
"""

from __future__ import annotations

from collections.abc import Sequence

from mtcabench.baselines import FLOORS
from mtcabench.benchmark import Benchmark, split_of
from mtcabench.model import ClaimKind, SpanKind
from mtcabench.studies._plan import length
from mtcabench.studies._results import StudyResult
from mtcabench.studies._split import by_conversation
from mtcabench.studies._tables import compare, diff_ci, md, spans_of, with_ci
from mtcabench.evaluate import SearchSettings
from mtcabench.studies._shares import ShareTables
from mtcabench.studies._units import SearchPoint, Unit, replay_point

#: The units' study name, scorer and setting: the default base scorer at its defaults, under a
#: setting label of its own (result files live by split, scorer and setting: the domains
#: study's units of the same conversations hold other spans).
STUDY, SCORER, SETTING = "claims", "avg-attention", "claims"
#: The floors beside the model's methods, replayed on the same spans (no model): every floor
#: of the registry (:data:`mtcabench.baselines.FLOORS`), string-match first (on claims it is
#: the floor that says what copying alone explains), then the others in the registry's order,
#: so that a floor added there gets its column here too.
FLOOR_METHODS = ("string-match", *(name for name in FLOORS if name != "string-match"))
POINTS = (SearchPoint("default", methods=("tokengeist", "flat", *FLOOR_METHODS)),)


def claims_of(bench: Benchmark) -> Benchmark:
    """The benchmark's claims alone (its values left out), on the same conversations."""
    return Benchmark(bench.conversations, [s for s in bench.spans
                                           if s.span_kind is SpanKind.CLAIM], bench.origin)


def claim_units(bench: Benchmark, split: str) -> list[Unit]:
    """Every conversation of ``split`` holding a claim, with its claims, shortest first."""
    work = by_conversation(s for s in bench.spans if s.span_kind is SpanKind.CLAIM
                           and split_of(s.conversation_id) == split)
    order = sorted(work, key=lambda c: (length(bench.conversations[c], work[c]), c))
    return [Unit(STUDY, split, bench.conversations[c], tuple(work[c]), SCORER, SETTING,
                 points=POINTS) for c in order]


def _groups(units: Sequence[StudyResult], bench: Benchmark) -> dict[str, list[str]]:
    """Span ids by row: all, by claim kind, by domain, by agent model."""
    spans = bench.span_index()
    ids = [s.span_id for r in units for s in r.points["default"].methods["tokengeist"]]
    out: dict[str, list[str]] = {"all": ids}
    kinds = [k.value for k in ClaimKind]
    for label, key, order in (
            ("kind", lambda s: s.claim_kind.value, kinds.index),
            ("domain", lambda s: s.domain, str),
            ("agent", lambda s: bench.conversations[s.conversation_id].agent_model or "unknown",
             str)):
        by: dict[str, list[str]] = {}
        for i in ids:
            by.setdefault(key(spans[i]), []).append(i)
        if len(by) > 1:
            out.update((f"{label}: {v}", by[v]) for v in sorted(by, key=order))
    return out


def claim_table(results: Sequence[StudyResult], bench: Benchmark, split: str) -> str:
    """The table of the module docstring, from the result files of the split's units."""
    sample = {u.conversation.id for u in claim_units(bench, split)}
    units = [r for r in results if r.split == split and r.scorer == SCORER and r.setting == SETTING and r.seed == 0
             and r.conversation_id in sample]
    if not units:
        return ""
    tg = spans_of(units, "default", "tokengeist")
    fl = spans_of(units, "default", "flat")
    floors = {m: spans_of(units, "default", m) for m in FLOOR_METHODS}
    rows = []
    for title, ids in _groups(units, bench).items():
        f, _, n_conv = compare(tg.take(ids), fl.take(ids))
        g, _, _ = compare(fl.take(ids), None)
        fs = {m: compare(s.take(ids), None)[0] for m, s in floors.items()}
        if n_conv < 2:  # resampling one conversation gives no interval, only its value
            for fig in (*f.values(), *g.values(), *(x for d in fs.values() for x in d.values())):
                fig.low = fig.high = fig.diff_low = fig.diff_high = fig.p = None
        rows.append([title, f"{n_conv} / {len(ids)}", with_ci(f["edge_f1"]),
                     with_ci(g["edge_f1"]), diff_ci(f["edge_f1"]),
                     *[with_ci(fs[m]["edge_f1"]) for m in FLOOR_METHODS],
                     with_ci(f["source_recall"]), with_ci(g["source_recall"]),
                     with_ci(fs["string-match"]["source_recall"])])
    lines = [f"Claims, {split} split: the annotated set's claims of the {split} tasks "
             f"({len(units)} conversations), default search settings, average attention "
             "(SmolLM2-135M). Per row: conversations / claims; edge F1 and source recall with "
             "95% conversation-clustered bootstrap intervals (1,000 resamples); the difference "
             "Tokengeist - flat is paired on the same claims; the floors read no model. A row "
             "of one conversation has no interval.", ""]
    lines += md(["claims", "conv. / claims", "Tokengeist edge F1", "flat edge F1",
                 "difference", *FLOOR_METHODS,
                 "Tokengeist source R", "flat source R", "string-match source R"], rows)
    return "\n".join(lines)


def claim_errors(results: Sequence[StudyResult], bench: Benchmark, split: str) -> str:
    """Where the graphs of claims go wrong, by the parent's role: gold edges found and missed,
    predicted edges that are not gold, for Tokengeist and flat; edges out of the claim's own
    turn (its first hop) apart from the deeper ones."""
    sample = {u.conversation.id for u in claim_units(bench, split)}
    units = [r for r in results if r.split == split and r.scorer == SCORER
             and r.setting == SETTING and r.seed == 0 and r.conversation_id in sample]
    if not units:
        return ""
    spans = bench.span_index()
    rows = []
    for method in ("tokengeist", "flat"):
        counts: dict[tuple[str, str], list[int]] = {}
        for r in units:
            conv = bench.conversations[r.conversation_id]
            for s in r.points["default"].methods[method]:
                gold = spans[s.span_id].graph.pairs()
                got = {(c, p) for c, p, _ in s.edges}
                target = spans[s.span_id].span.turn
                for pair in gold | got:
                    hop = "first hop" if pair[0] == target else "deeper"
                    row = counts.setdefault((conv.turns[pair[1]].role.value, hop), [0, 0, 0])
                    row[0 if pair in gold & got else 1 if pair in gold else 2] += 1
        for (role, hop), (found, missed, wrong) in sorted(counts.items()):
            rows.append([method, role, hop, str(found + missed), str(found), str(missed),
                         str(wrong)])
    lines = [f"Claims, {split} split: edges by the parent's role, first hop (out of the claim's "
             "own turn) and deeper, default settings, average attention (SmolLM2-135M); "
             f"{len(units)} conversations.", ""]
    lines += md(["method", "parent role", "hop", "gold edges", "found", "missed",
                 "predicted, not gold"], rows, left=3)
    return "\n".join(lines)


#: Search settings tried on the dev split, one change from the default at a time: each is
#: replayed from the stored shares (no model), on claims and on values side by side. The
#: claims' rules (``open_system`` 0.05, ``named_values``, then ``value_origin``) were chosen on
#: this grid and are the default now: their rows take them out, one and all.
CANDIDATE_POINTS = tuple(
    SearchPoint(label, SearchSettings(**change), ("tokengeist",)) for label, change in (
        ("top_k=2", {"top_k": 2}), ("top_k=5", {"top_k": 5}),
        ("threshold=0.02", {"threshold": 0.02}), ("threshold=0.1", {"threshold": 0.1}),
        ("alpha=0.3", {"alpha": 0.3}), ("alpha=0.7", {"alpha": 0.7}),
        ("d_max=3", {"d_max": 3}), ("no match_values", {"match_values": False}),
        # a relative threshold (and top-k) of their own for the queries no turn holds the
        # text of: a claim's several sources (record, rule, request) differ more than alpha
        ("open_alpha=0.3", {"open_alpha": 0.3}), ("open_alpha=0.2", {"open_alpha": 0.2}),
        ("open_alpha=0.1", {"open_alpha": 0.1}),
        ("open_alpha=0.2, open_top_k=5", {"open_alpha": 0.2, "open_top_k": 5}),
        # the policy behind a conclusion: a claim keeps the system turn past top-k and alpha
        ("open_system=0.1", {"open_system": 0.1}), ("open_system=0.03", {"open_system": 0.03}),
        ("open_system=0.02", {"open_system": 0.02}), ("no open_system", {"open_system": None}),
        # the values a claim names decide among the records; then neither rule (the default
        # before issue 47's claims rules)
        ("no named_values", {"named_values": False}),
        # a call's argument credited to where it came from, not to an assistant restating it
        ("no value_origin", {"value_origin": False}),
        # none of the three: the search before issue 47's rules
        ("none of the claims rules", {"named_values": False, "open_system": None,
                                      "value_origin": False}),
    ))


def _replayed(results: Sequence[StudyResult], bench: Benchmark, points) -> list[StudyResult]:
    """``results`` with every point of ``points`` replayed from their stored shares."""
    spans = bench.span_index()
    out = []
    for r in results:
        if r.shares is None:
            continue
        ids = [s.span_id for s in r.points["default"].methods["tokengeist"]]
        unit = Unit(STUDY, r.split, bench.conversations[r.conversation_id],
                    tuple(spans[i] for i in ids), r.scorer, r.setting)
        tables = ShareTables.from_json(r.shares)
        out.append(r.model_copy(update={"points": {
            "default": replay_point(unit, tables, SearchPoint("default", methods=("tokengeist",))),
            **{p.label: replay_point(unit, tables, p) for p in points}}}))
    return out


def search_table(claims: Sequence[StudyResult], claim_bench: Benchmark,
                 values: Sequence[StudyResult], value_bench: Benchmark, split: str = "dev",
                 points=CANDIDATE_POINTS) -> str:
    """Tokengeist at each of ``points`` against the default search settings, replayed from the
    same stored shares, on claims and on values side by side: edge F1 and the paired
    difference with its conversation-clustered interval (issue 47: a change for claims must
    keep the values' figures)."""
    c = _replayed(claims, claim_bench, points)
    v = _replayed(values, value_bench, points)
    if not c or not v:
        return ""
    rows = []
    for label in ("default", *(p.label for p in points)):
        cells = [label]
        for results in (c, v):
            f, used, n = compare(spans_of(results, label, "tokengeist"),
                                 None if label == "default"
                                 else spans_of(results, "default", "tokengeist"))
            cells += [f"{n} / {len(used.ids)}", with_ci(f["edge_f1"]), diff_ci(f["edge_f1"]),
                      with_ci(f["source_recall"]), diff_ci(f["source_recall"])]
        rows.append(cells)
    lines = ["Tokengeist's search settings, one change from the default at a time, replayed from "
             "the stored shares of the same units (no model): claims of the claims study and "
             f"values of the domains study, their {split} splits; paired differences from the "
             "default with 95% conversation-clustered intervals.", ""]
    lines += md(["setting", "claims: conv. / spans", "edge F1", "difference", "source R",
                 "difference", "values: conv. / spans", "edge F1", "difference", "source R",
                 "difference"], rows)
    return "\n".join(lines)


def first_hop_shares(results: Sequence[StudyResult], bench: Benchmark, split: str,
                     threshold: float = SearchSettings().threshold) -> str:
    """What the base scorer gives the claim's gold parents at the first hop, by the parent's
    role: the median share of the target's attention, how often it reaches the search's
    threshold, and how often it ranks among the top 3 turns (what Tokengeist's defaults can
    select); beside it, the same for the turns that are not gold parents. A setting of the
    search cannot select a parent whose share is below the threshold or outranked."""
    spans = bench.span_index()
    sample = {u.conversation.id for u in claim_units(bench, split)}
    rows: dict[tuple[str, bool], list[tuple[float, int]]] = {}
    n_claims = 0
    for r in results:
        if (r.split != split or r.setting != SETTING or r.seed != 0 or r.shares is None
                or r.conversation_id not in sample):
            continue
        conv = bench.conversations[r.conversation_id]
        tables = ShareTables.from_json(r.shares)
        for sid, shares in tables.targets.items():
            span = spans.get(sid)
            if span is None:
                continue
            n_claims += 1
            gold = {p for c, p in span.graph.pairs() if c == span.span.turn}
            ranked = sorted(shares, key=lambda t: -shares[t])
            for t in range(span.span.turn):
                share = shares.get(t, 0.0)
                rank = ranked.index(t) + 1 if t in shares else len(conv.turns)
                rows.setdefault((conv.turns[t].role.value, t in gold), []).append((share, rank))
    out = []
    for (role, is_gold), got in sorted(rows.items(), key=lambda kv: (not kv[0][1], kv[0][0])):
        shares_ = sorted(s for s, _ in got)
        median = shares_[len(shares_) // 2]
        over = sum(s >= threshold for s in shares_)
        top3 = sum(rank <= 3 for _, rank in got)
        out.append([role, "gold parent" if is_gold else "not a parent", str(len(got)),
                    f"{median:.3f}", f"{over} ({over / len(got):.0%})",
                    f"{top3} ({top3 / len(got):.0%})"])
    lines = [f"Claims, {split} split: the target's shares at the first hop ({n_claims} claims, "
             "average attention, SmolLM2-135M), by the earlier turn's role, for the claim's gold "
             f"parents and for the other turns: median share, at least the threshold "
             f"({threshold:g}), among the top 3.", ""]
    lines += md(["earlier turn", "", "turns", "median share", f">= {threshold:g}", "top 3"],
                out, left=2)
    return "\n".join(lines)
