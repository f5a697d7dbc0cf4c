"""The domains study: Tokengeist against flat over average attention on every domain and agent
model, with conversation-clustered intervals, from result files (issue 32's headline per
domain; issue 36 measures its defaults with it).

**Gold**: the pipeline on the real runs, as the benchmark builds it: tau2-bench's results
files (airline, retail, telecom; every agent) and tau-bench's gpt-4o airline runs, ``annotate
lineage`` with its default rules, ``review auto-accept``, ``release build``
(:func:`domain_gold`, built once into a folder and read from there after).

**Sample** (:func:`domain_units`): per split, per (domain, agent model), the ``per_group``
shortest conversations that hold spans, with every span of each (the model pass is the cost:
the shortest keep it low and lose fewer spans to the model's context; a length bias, stated
with the table). Units run shortest group member first across groups (round robin), so that a
run stopped early still covers every group.

**Table** (:func:`domain_table`): per domain and per agent model, all spans and the chained and
multi-source ones, Tokengeist and flat at the default search settings, and the string-match
floor on the same spans (:data:`FLOOR_METHOD`, from the gold alone): edge F1 with its 95%
conversation-clustered bootstrap interval, the paired difference, original-source recall, the
predicted edges over the gold's (how much too big or too small a graph is), and the spans the
model's context left without a graph.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from mtcabench.benchmark import Benchmark
from mtcabench.model import NO_AGENT, Conversation, SpanKind, SpanOrigin
from mtcabench.results.metrics import columns
from mtcabench.studies._plan import length
from mtcabench.studies._results import StudyResult
from mtcabench.benchmark import split_of
from mtcabench.studies._split import GOLD_DECIDED_AT, by_conversation
from mtcabench.studies._tables import compare, diff_ci, md, spans_of, with_ci
from mtcabench.evaluate import SearchSettings
from mtcabench.studies._units import FLOOR, SearchPoint, Unit, replay_point

#: The units' study name, scorer and setting (the default base scorer at its defaults).
STUDY, SCORER, SETTING = "domains", "avg-attention", "default"
#: Dependency types with rows of their own under each group (the paper's recursive cases).
TYPES = ("chained", "multi-source")
#: A candidate default, replayed from every unit's stored shares (no model) and compared with
#: the default on the same spans: ``alpha`` 0.7 (the relative pruning threshold).
CANDIDATE = SearchPoint("alpha=0.7", SearchSettings(alpha=0.7), ("tokengeist",))
POINTS = (SearchPoint("default"), CANDIDATE)
#: The floor beside the methods: the lineage rules as a method (:data:`mtcabench.baselines.
#: FLOORS`), on the same spans, from the gold's conversations alone (no model; the units'
#: files are not touched, so adding it recomputes nothing).
FLOOR_METHOD = "string-match"


def domain_gold(folder: Path, tau2: Sequence[Path], taubench: Path | None) -> Benchmark:
    """The study's gold, built into ``folder`` once (see the module docstring)."""
    from mtcabench.benchmark import load_benchmark

    built = folder / "release" / STUDY
    if not built.is_dir():
        from mtcabench.lineage import propose_lineage
        from mtcabench.ingest import read_tau2, read_taubench, write_conversations
        from mtcabench.io import write_records
        from mtcabench.release import build_release
        from mtcabench.review import auto_accept

        convs: dict[str, Conversation] = {}
        for path in sorted(tau2):
            convs.update((c.id, c) for c in read_tau2(path))
        if taubench is not None:
            convs.update((c.id, c) for c in read_taubench(taubench))
        folder.mkdir(parents=True, exist_ok=True)
        conversations, reviewed = folder / "conversations.jsonl", folder / "reviewed.jsonl"
        write_conversations(conversations, convs.values())
        candidates = list(propose_lineage(convs.values()))
        write_records(reviewed, auto_accept(candidates, convs, decided_at=GOLD_DECIDED_AT)
                      .decisions)
        build_release(STUDY, reviewed, conversations, out=folder / "release", force=True)
    return load_benchmark(built)


def release_gold(path: str | Path) -> Benchmark:
    """The study's gold from a built release (``scripts/build_benchmark.sh OUT``, then
    ``OUT/release/<version>``): its real value spans and their conversations, the counterfactual
    copies left out (:func:`domain_gold` builds no such split either; claims are another
    configuration and never loaded here)."""
    from mtcabench.benchmark import load_benchmark

    bench = load_benchmark(path)
    spans = [s for s in bench.spans
             if s.origin is SpanOrigin.REAL and s.span_kind is SpanKind.VALUE]
    keep = {s.conversation_id for s in spans}
    return Benchmark({c: v for c, v in bench.conversations.items() if c in keep}, spans,
                     bench.origin)


def group_of(conversation: Conversation) -> tuple[str, str]:
    """(domain, agent model) of a conversation; ``unknown`` where the log names no agent."""
    return conversation.domain, conversation.agent_model or NO_AGENT


def domain_units(bench: Benchmark, split: str, per_group: int) -> list[Unit]:
    """The ``per_group`` shortest conversations of ``split`` of every (domain, agent model)
    holding spans, round robin over the groups (see the module docstring)."""
    work = by_conversation(s for s in bench.spans if split_of(s.conversation_id) == split)
    groups: dict[tuple[str, str], list[str]] = {}
    for cid in work:
        groups.setdefault(group_of(bench.conversations[cid]), []).append(cid)
    ranked = {g: sorted(ids, key=lambda c: (length(bench.conversations[c], work[c]), c))
              [:per_group] for g, ids in sorted(groups.items())}
    units = []
    for i in range(per_group):
        for ids in ranked.values():
            if i < len(ids):
                units.append(Unit(STUDY, split, bench.conversations[ids[i]], tuple(work[ids[i]]),
                                  SCORER, SETTING, points=POINTS))
    return units


def domain_table(results: Sequence[StudyResult], bench: Benchmark, split: str,
                 per_group: int) -> str:
    """The table of the module docstring, from the result files of the sample's units (and
    the gold's conversations, for each one's domain, agent model and span types)."""
    sample = {u.conversation.id for u in domain_units(bench, split, per_group)}
    units = [r for r in results if r.split == split and r.scorer == SCORER
             and r.setting == SETTING and r.seed == 0 and r.conversation_id in sample]
    if not units:
        return ""
    spans = bench.span_index()
    floors = floor_results(units, bench, FLOOR_METHOD)
    rows = []
    for title, members in _groups(units, bench.conversations).items():
        tg = spans_of(members, "default", "tokengeist")
        fl = spans_of(members, "default", "flat")
        sm = spans_of([floors[r.conversation_id] for r in members], "default", FLOOR_METHOD)
        skipped = sum(s.skipped is not None for r in members
                      for s in r.points["default"].methods["tokengeist"])
        windowed = sum(len((r.shares or {}).get("windows", {})) for r in members)
        for kind in ("all", *TYPES):
            ids = [s for s in tg.ids if kind == "all"
                   or spans[s].dependency_type.value == kind]
            if not ids:
                continue
            a, b = tg.take(ids), fl.take(ids)
            f, _, n_conv = compare(a, b)
            g, _, _ = compare(b, None)
            h, _, _ = compare(sm.take(ids), None)
            if n_conv < 2:  # resampling one conversation gives no interval, only its value
                for fig in (*f.values(), *g.values(), *h.values()):
                    fig.low = fig.high = fig.diff_low = fig.diff_high = fig.p = None
            rows.append([title if kind == "all" else "", kind, f"{n_conv} / {len(ids)}",
                         with_ci(f["edge_f1"]), with_ci(g["edge_f1"]), diff_ci(f["edge_f1"]),
                         with_ci(h["edge_f1"]),
                         with_ci(f["original_recall"]), with_ci(g["original_recall"]),
                         with_ci(h["original_recall"]),
                         _size(a.matrix), str(windowed) if kind == "all" else "",
                         str(skipped) if kind == "all" else ""])
    lines = [f"{split.capitalize()} split, default search settings, average attention "
             "(SmolLM2-135M). Per group: conversations / spans; edge F1 and original-source "
             "recall with 95% conversation-clustered bootstrap intervals (1,000 resamples); "
             "the difference Tokengeist - flat is paired on the same spans; *string-match* "
             "is the model-free floor of the lineage rules used as a method, on the same spans "
             "(the gold's own rules: on value spans it shows what copying alone finds); *size* is "
             "Tokengeist's predicted edges over the gold's; *in a window* counts the spans "
             "past the model's context, attributed in a context window (docs/evaluate.md, "
             "*Long conversations*), *no graph* those no window fits (scored as empty "
             "predictions). A group of one conversation has no interval.", ""]
    lines += md(["group", "spans", "conv. / spans", "Tokengeist edge F1", "flat edge F1",
                 "difference", "string-match edge F1", "Tokengeist original R",
                 "flat original R", "string-match original R", "size", "in a window",
                 "no graph"], rows, left=2)
    return "\n".join(lines)


def floor_results(units: Sequence[StudyResult], bench: Benchmark, method: str
                  ) -> dict[str, StudyResult]:
    """Per conversation, its unit's result with a floor's graphs in place of the methods' at
    the default point: on the spans the unit scored, from the gold's conversation alone."""
    spans = bench.span_index()
    point = SearchPoint("default", methods=(method,))
    out = {}
    for r in units:
        scored = [spans[s.span_id] for s in r.points["default"].methods["tokengeist"]
                  if s.span_id in spans]
        unit = Unit(STUDY, r.split, bench.conversations[r.conversation_id], tuple(scored),
                    FLOOR, "floors", points=(point,))
        out[r.conversation_id] = r.model_copy(
            update={"points": {"default": replay_point(unit, None, point)}})
    return out


def _groups(units: Sequence[StudyResult], conversations: Mapping[str, Conversation]
            ) -> dict[str, list[StudyResult]]:
    """All units, then by domain, then by agent model (each only where it has several)."""
    out: dict[str, list[StudyResult]] = {"all": list(units)}
    for label, key in (("domain", 0), ("agent", 1)):
        by: dict[str, list[StudyResult]] = {}
        for r in units:
            by.setdefault(group_of(conversations[r.conversation_id])[key], []).append(r)
        if len(by) > 1:
            out.update((f"{label}: {v}", by[v]) for v in sorted(by))
    return out


def _size(matrix: np.ndarray) -> str:
    """Predicted edges over gold edges, summed over the spans."""
    cols = columns()
    gold = matrix[:, cols.index("edge_gold")].sum()
    return f"{matrix[:, cols.index('edge_predicted')].sum() / gold:.2f}" if gold else "-"


def candidate_table(results: Sequence[StudyResult], bench: Benchmark, split: str,
                    per_group: int) -> str:
    """Tokengeist at :data:`CANDIDATE` against the default on the same spans, all spans and
    per domain: the paired difference with its conversation-clustered interval."""
    sample = {u.conversation.id for u in domain_units(bench, split, per_group)}
    units = [r for r in results if r.split == split and r.scorer == SCORER
             and r.setting == SETTING and r.seed == 0 and r.conversation_id in sample
             and CANDIDATE.label in r.points]
    if not units:
        return ""
    rows = []
    for title, members in _groups(units, bench.conversations).items():
        if title.startswith("agent: "):
            continue
        f, used, n_conv = compare(spans_of(members, CANDIDATE.label, "tokengeist"),
                                  spans_of(members, "default", "tokengeist"))
        rows.append([title, f"{n_conv} / {len(used.ids)}", with_ci(f["edge_f1"]),
                     diff_ci(f["edge_f1"])])
    lines = [f"{split.capitalize()} split: Tokengeist at {CANDIDATE.label} against the default "
             "search settings, replayed from the same shares; paired difference, 95% "
             "conversation-clustered bootstrap interval.", ""]
    lines += md(["group", "conv. / spans", "edge F1 at " + CANDIDATE.label,
                 "difference from default"], rows)
    return "\n".join(lines)
