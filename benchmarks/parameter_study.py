"""Parameter study: Tokengeist's edge F1 and source recall over its search settings, on a
development split of TauBench airline; test-split figures of the chosen settings beside flat
and the model-free floors.

One command produces the whole table:

    python benchmarks/parameter_study.py                      # gold: lineage on the real file
    python benchmarks/parameter_study.py --benchmark release/X          # or any benchmark
    python benchmarks/parameter_study.py --conversations C --reviewed R  # or review decisions
    python benchmarks/parameter_study.py --write-docs docs/evaluate.md   # also update the docs

**Gold.** By default the gold is what the pipeline builds from the real runs
(gpt-4o-airline.json): ingest, ``annotate lineage`` with its default rules, ``review
auto-accept``, ``release build`` (written under ``--out``/gold). ``--benchmark`` takes any
benchmark (a release folder, a folder of conversations.jsonl + spans.jsonl, a Hub id);
``--conversations`` with ``--reviewed`` builds a release from review decisions first. Rerun on
newer gold (lineage-v2) with either.

**Split** (:func:`split_of`): by *task*, so that the trials of one task never straddle it. A
TauBench conversation ``.../task-<id>/trial-<n>`` is **dev** when ``id mod 5 = 0`` (tasks 0, 5,
..., 45) and **test** when ``id mod 5 = 1`` (tasks 1, 6, ..., 46), in both cases trials 0 and 1
only (the model pass is the cost: about 90 s per conversation on 2 shared cores); every other
conversation is unused, kept unseen for later studies. A conversation without a task id is
bucketed by the CRC-32 of its id. Settings are chosen on dev only; test figures are computed
once, for the chosen settings.

**Cost.** The model runs once per conversation: one forward pass with average attention gives
the sentence scores of every query (the spans and every assistant turn Tokengeist may recurse
into), exactly as ``trace`` computes them (the same function, ``model_shares``); both turn
aggregates (max, sum) are derived from those scores. The shares are cached in
``--out``/shares.jsonl (keyed by model, scorer, conversation and spans), so a rerun with new
grid points or the test table costs no forward pass. Every grid point then replays the pure
search (:func:`mtcabench.evaluate.tokengeist`, :func:`~mtcabench.evaluate.flat`) on the stored
shares; tests/evaluate/test_parameter_study.py checks that a replay gives trace's graphs.

Outputs in ``--out`` (default runs/parameter-study): table.md (printed too), grid.csv (every
grid point on dev), shares.jsonl, test/ (the test split's benchmark, submissions at the chosen
settings and their score reports with floors, from ``mtcabench score``).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import itertools
import json
import re
import sys
import time
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.support

from tests.support.paths import taubench_airline_path

from mtcabench.baselines import FLOORS
from mtcabench.benchmark import Benchmark, load_benchmark
from mtcabench.evaluate import (
    TARGET,
    Attributor,
    SearchSettings,
    TraceSettings,
    flat,
    tokengeist,
)
from mtcabench.evaluate.methods._tokengeist import Part
from mtcabench.io import write_records
from mtcabench.model import (
    BenchmarkSpan,
    Conversation,
    PredictedEdge,
    ProvenanceGraph,
    SubmissionEntry,
    SubmissionHeader,
)
from mtcabench import results
from mtcabench.results.metrics import score_span

#: The grid. Every combination is replayed for Tokengeist; flat has no d_max.
GRID: dict[str, tuple] = {
    "top_k": (1, 2, 3, 4, 5),
    "threshold": (0.0, 0.02, 0.05, 0.1, 0.2),
    "alpha": (0.0, 0.25, 0.5, 0.75, 1.0),
    "d_max": (1, 2, 3, 4, 6, 8),
    "turn_aggregate": ("max", "sum"),
}
AGGREGATES = ("max", "sum")
#: The split: task id mod 5 of each split, and the trials used.
DEV_BUCKETS, TEST_BUCKETS, TRIALS = frozenset({0}), frozenset({1}), frozenset({0, 1})
_TASK = re.compile(r"/task-(\d+)/trial-(\d+)$")
#: Review decisions of the default gold carry this time, so that the gold is reproducible.
GOLD_DECIDED_AT = datetime(2026, 1, 1, tzinfo=UTC)
DEFAULT_OUT = ROOT / "runs" / "parameter-study"
DOCS_BEGIN, DOCS_END = "<!-- parameter-study:begin -->", "<!-- parameter-study:end -->"
#: Part of every cached conversation's signature: a cache of another format is recomputed.
CACHE_FORMAT = "shares-v2"


# --------------------------------------------------------------------------- gold and split


def split_of(conversation_id: str) -> str | None:
    """``dev``, ``test`` or None (unused), by task (see the module docstring)."""
    m = _TASK.search(conversation_id)
    if m and int(m[2]) not in TRIALS:
        return None
    bucket = int(m[1]) % 5 if m else zlib.crc32(conversation_id.encode()) % 5
    if bucket in DEV_BUCKETS:
        return "dev"
    if bucket in TEST_BUCKETS:
        return "test"
    return None


def build_gold(out: Path, raw: Path | None, conversations: Path | None,
               reviewed: Path | None) -> Path:
    """A release folder of gold spans: from review decisions, or the pipeline on ``raw``."""
    from mtcabench.release import build_release

    out.mkdir(parents=True, exist_ok=True)
    if conversations is None:
        from mtcabench.annotate.lineage import propose_lineage
        from mtcabench.ingest import read_taubench, write_conversations
        from mtcabench.review import auto_accept

        if raw is None:
            raise SystemExit("gpt-4o-airline.json not found: pass --raw, --benchmark or "
                             "--conversations/--reviewed, or set MTCABENCH_TAUBENCH_AIRLINE")
        convs = {c.id: c for c in read_taubench(raw)}
        conversations, reviewed = out / "conversations.jsonl", out / "reviewed.jsonl"
        write_conversations(conversations, convs.values())
        candidates = list(propose_lineage(convs.values()))
        write_records(out / "candidates.jsonl", candidates)
        write_records(reviewed, auto_accept(candidates, convs, decided_at=GOLD_DECIDED_AT)
                      .decisions)
    if reviewed is None:
        raise SystemExit("--conversations needs --reviewed")
    built = build_release("study", reviewed, conversations, out=out / "release", force=True)
    return built.folder


def by_conversation(spans: Iterable[BenchmarkSpan]) -> dict[str, list[BenchmarkSpan]]:
    out: dict[str, list[BenchmarkSpan]] = {}
    for s in spans:
        out.setdefault(s.conversation_id, []).append(s)
    return out


# --------------------------------------------------------------------------- shares, once


@dataclass
class ShareTables:
    """The stored turn shares of one conversation under one turn aggregate.

    ``targets[span id]`` is a span's ``shares(TARGET)``, ``turns[i]`` an assistant turn's
    ``shares(i)``; ``skipped[span id]`` says why trace would skip a span (too long).
    """

    targets: dict[str, dict[int, float]] = field(default_factory=dict)
    #: By query: a whole turn under its index, a part of one (a call's argument value, the
    #: text of a turn that calls) under its Part.
    turns: dict[object, dict[int, float]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    def shares_fn(self, span_id: str):
        target = self.targets[span_id]

        def shares(key):
            return target if key == TARGET else self.turns.get(key, {})
        return shares

    def to_json(self) -> dict:
        def enc(d):
            return {str(k): v for k, v in d.items()}
        return {"targets": {s: enc(v) for s, v in self.targets.items()},
                "turns": {_key_text(t): enc(v) for t, v in self.turns.items()},
                "skipped": self.skipped}

    @classmethod
    def from_json(cls, obj: dict) -> ShareTables:
        def dec(d):
            return {int(k): float(v) for k, v in d.items()}
        return cls(targets={s: dec(v) for s, v in obj["targets"].items()},
                   turns={_key_of(t): dec(v) for t, v in obj["turns"].items()},
                   skipped=dict(obj["skipped"]))


def _key_text(key) -> str:
    """A query key in the cache: a turn's index, or ``turn:start:end`` of a part."""
    return ":".join(map(str, key)) if isinstance(key, Part) else str(key)


def _key_of(text: str):
    return Part(*map(int, text.split(":"))) if ":" in text else int(text)


def compute_shares(attributor, conversation: Conversation,
                   spans: list[BenchmarkSpan]) -> dict[str, ShareTables]:
    """Both aggregates' share tables of one conversation from one set of forward passes.

    The shares come from trace's own function (``model_shares``: the context-length policy,
    the queries Tokengeist asks for); the attributor's sentence scores are computed once and
    reused for the second aggregate.
    """
    from mtcabench.evaluate.methods._conversation import model_shares
    from mtcabench.evaluate.methods._methods import Tokengeist

    scores_once = _OnePass(attributor)
    out = {}
    for agg in AGGREGATES:
        scores_once.aggregate = agg
        result = model_shares(scores_once, conversation, {s.id: s.span for s in spans},
                              [Tokengeist()], TraceSettings(turn_aggregate=agg))
        fns = result.shares
        tables = ShareTables(skipped={k: u.reason() for k, u in result.unfit.items()})
        for sid, fn in fns.items():
            tables.targets[sid] = dict(fn(TARGET))
        if fns:
            any_fn = next(iter(fns.values()))
            last = max(s.span.turn for s in spans)
            for key in Tokengeist().query_turns(conversation, last):
                shares = any_fn(key)
                if shares:
                    tables.turns[key] = dict(shares)
        out[agg] = tables
    return out


class _OnePass(Attributor):
    """An attributor whose sentence scores are computed once per conversation and queries,
    so that the second turn aggregate costs no forward pass."""

    def __init__(self, inner: Attributor):
        super().__init__(inner.loaded, inner.scorer, aggregate=inner.aggregate, seed=inner.seed)
        self._inner = inner
        self._key: tuple | None = None
        self._scores = None

    def sentence_scores(self, rendered, queries):
        key = (rendered.conversation.id, tuple(queries))
        if key != self._key:
            self._key, self._scores = key, self._inner.sentence_scores(rendered, queries)
        return self._scores


def signature(model: str, scorer: str, conversation: Conversation,
              spans: list[BenchmarkSpan]) -> str:
    """What shapes a conversation's shares: model, scorer, the conversation, its spans."""
    h = hashlib.sha256()
    # CACHE_FORMAT: the queries stored changed (calls by argument values, sinks out).
    for part in (CACHE_FORMAT, model, scorer, conversation.model_dump_json(),
                 *sorted(f"{s.id}|{s.span.start}|{s.span.end}" for s in spans)):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def load_cache(path: Path) -> dict[str, dict]:
    """Complete lines of the shares cache by conversation id (a torn last line is ignored)."""
    out: dict[str, dict] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
            if line.endswith("\n") and line.strip():
                obj = json.loads(line)
                out[obj["conversation_id"]] = obj
    return out


def all_shares(bench: Benchmark, work: dict[str, list[BenchmarkSpan]], cache_path: Path,
               model: str, scorer: str, log=lambda msg: None, attributor: Attributor | None = None,
               ) -> tuple[dict[str, dict[str, ShareTables]], dict]:
    """Share tables of every conversation in ``work``, from the cache or one model pass each.

    The model is loaded only when a conversation is not in the cache (or ``attributor``, on
    the model named ``model`` with the scorer ``scorer``, is used).
    """
    cache = load_cache(cache_path)
    out, todo = {}, []
    seconds: dict[str, float | None] = {}  # model time of each conversation, when computed
    for cid, spans in work.items():
        sig = signature(model, scorer, bench.conversations[cid], spans)
        hit = cache.get(cid)
        if hit is not None and hit["signature"] == sig:
            out[cid] = {agg: ShareTables.from_json(hit["shares"][agg]) for agg in AGGREGATES}
            seconds[cid] = hit.get("seconds")
        else:
            todo.append((cid, sig))
    cost = {"conversations": len(work), "cached": len(work) - len(todo), "computed": len(todo),
            "forward_passes": 0, "model_s": 0.0, "load_s": 0.0, "seconds": seconds}
    if not todo:
        return out, cost
    if attributor is None:
        from mtcabench.evaluate import load_model, make_scorer

        t0 = time.perf_counter()
        loaded = load_model(model)
        attributor = Attributor(loaded, make_scorer(scorer, TraceSettings(), loaded))
        cost["load_s"] = time.perf_counter() - t0
    passes = attributor.forward_passes
    cache_path.parent.mkdir(parents=True, exist_ok=True)
    with cache_path.open("a", encoding="utf-8") as fh:
        t0 = time.perf_counter()
        for n, (cid, sig) in enumerate(todo, 1):
            t1 = time.perf_counter()
            tables = compute_shares(attributor, bench.conversations[cid], work[cid])
            out[cid] = tables
            seconds[cid] = round(time.perf_counter() - t1, 1)
            fh.write(json.dumps({"conversation_id": cid, "signature": sig,
                                 "seconds": seconds[cid], "shares": {
                                     agg: t.to_json() for agg, t in tables.items()}}) + "\n")
            fh.flush()
            log(f"shares {n}/{len(todo)} {cid}: {len(work[cid])} spans, "
                f"{time.perf_counter() - t1:.1f} s")
        cost["model_s"] = time.perf_counter() - t0
    cost["forward_passes"] = attributor.forward_passes - passes
    return out, cost


# --------------------------------------------------------------------------- replay and scores


@dataclass(frozen=True)
class Point:
    """One grid point: the search settings and the turn aggregate."""

    top_k: int
    threshold: float
    alpha: float
    d_max: int
    turn_aggregate: str

    @property
    def search(self) -> SearchSettings:
        return SearchSettings(top_k=self.top_k, threshold=self.threshold, d_max=self.d_max,
                              alpha=self.alpha)

    def label(self, keys: Sequence[str] = ("top_k", "threshold", "alpha", "d_max",
                                           "turn_aggregate")) -> str:
        return ", ".join(f"{k} {getattr(self, k)}" for k in keys)


def default_point() -> Point:
    """The evaluator's current defaults."""
    s, t = SearchSettings(), TraceSettings()
    return Point(s.top_k, s.threshold, s.alpha, s.d_max, t.turn_aggregate)


def replay(method: str, conversation: Conversation, span: BenchmarkSpan, tables: ShareTables,
           search: SearchSettings) -> ProvenanceGraph | None:
    """The graph trace would give ``span`` from the stored shares; None when trace skips it."""
    if span.id in tables.skipped:
        return None
    shares = tables.shares_fn(span.id)
    if method == "tokengeist":
        return tokengeist(conversation, span.span.turn, shares, search)
    if method == "flat":
        return flat(span.span.turn, shares, search)
    raise ValueError(f"no replay for method {method!r}")


def to_entry(span: BenchmarkSpan, graph: ProvenanceGraph | None,
             skipped: str | None = None) -> SubmissionEntry:
    """A submission line as trace makes it (edge order; scores rounded once, when written)."""
    if graph is None:
        return SubmissionEntry(span_id=span.id, skipped=skipped)
    return SubmissionEntry(span_id=span.id, edges=[
        PredictedEdge(child=e.child, parent=e.parent,
                      score=None if e.score is None else float(e.score))  # rounded when written
        for e in sorted(graph.edges, key=lambda e: (-e.child, e.parent))])


@dataclass
class Scores:
    """Macro edge F1 and source recall over a set of spans (skipped spans score as empty)."""

    edge_f1: float
    source_recall: float
    spans: int
    empty: int


def score_graphs(bench: Benchmark, spans: list[BenchmarkSpan],
                 graphs: list[ProvenanceGraph | None]) -> Scores:
    f1 = sr = 0.0
    empty = 0
    for s, g in zip(spans, graphs):
        pred = [] if g is None else [e.pair for e in g.edges]
        empty += g is None
        sc = score_span(s.id, pred, [e.pair for e in s.graph.edges], s.sources,
                        bench.conversations[s.conversation_id], s.dependency_type)
        f1 += sc.edge_f1
        sr += sc.source_recall
    n = len(spans)
    return Scores(f1 / n, sr / n, n, empty)


def evaluate_point(method: str, point: Point, bench: Benchmark, spans: list[BenchmarkSpan],
                   shares: dict[str, dict[str, ShareTables]]) -> Scores:
    search = point.search
    graphs = [replay(method, bench.conversations[s.conversation_id], s,
                     shares[s.conversation_id][point.turn_aggregate], search) for s in spans]
    return score_graphs(bench, spans, graphs)


def floor_scores(bench: Benchmark, spans: list[BenchmarkSpan]) -> dict[str, Scores]:
    return {name: score_graphs(bench, spans, [
        f.graph(bench.conversations[s.conversation_id], s.span.turn) for s in spans])
        for name, f in FLOORS.items()}


def run_grid(bench, spans, shares, log) -> tuple[dict[Point, Scores], dict[Point, Scores]]:
    """Tokengeist at every grid point, flat at every point without d_max (d_max = 1 keys)."""
    tg, fl = {}, {}
    keys = list(GRID)
    points = [Point(**dict(zip(keys, values))) for values in itertools.product(*GRID.values())]
    t0 = time.perf_counter()
    for n, p in enumerate(points, 1):
        tg[p] = evaluate_point("tokengeist", p, bench, spans, shares)
        flat_key = replace(p, d_max=GRID["d_max"][0])
        if flat_key not in fl:
            fl[flat_key] = evaluate_point("flat", p, bench, spans, shares)
        if n % 100 == 0:
            log(f"grid {n}/{len(points)} ({time.perf_counter() - t0:.0f} s)")
    return tg, fl


#: Points whose objective is within this of the best form the plateau the choice is made on.
PLATEAU = 0.005


def objective(s: Scores) -> float:
    """What the defaults are chosen by: edge F1 and source recall weigh the same."""
    return (s.edge_f1 + s.source_recall) / 2


def changes(p: Point, prefer: Point) -> int:
    return sum(getattr(p, k) != getattr(prefer, k) for k in GRID)


def choose(scores: dict[Point, Scores], prefer: Point) -> Point:
    """The defaults: of the points within :data:`PLATEAU` of the best :func:`objective`, the
    one with the fewest changes from ``prefer`` (the previous defaults), then the best."""
    top = max(objective(s) for s in scores.values())
    plateau = [p for p, s in scores.items() if objective(s) >= top - PLATEAU]
    return max(plateau, key=lambda p: (-changes(p, prefer), round(objective(scores[p]), 9),
                                       round(scores[p].edge_f1, 9)))


def best_edge_f1(scores: dict[Point, Scores], prefer: Point) -> Point:
    """Highest edge F1 alone; ties by source recall, then fewest changes from ``prefer``."""
    return max(scores, key=lambda p: (round(scores[p].edge_f1, 6),
                                      round(scores[p].source_recall, 6), -changes(p, prefer)))


# --------------------------------------------------------------------------- test split


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


# --------------------------------------------------------------------------- the table


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


def describe(spans: list[BenchmarkSpan], empty: int = 0) -> dict:
    from collections import Counter

    types = Counter(s.dependency_type.value for s in spans)
    return {"conversations": len({s.conversation_id for s in spans}), "spans": len(spans),
            "empty": empty, "types": ", ".join(f"{k} {v}" for k, v in sorted(types.items()))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--benchmark", help="Gold benchmark (release folder, JSONL folder, Hub id).")
    ap.add_argument("--conversations", type=Path, help="Conversations (with --reviewed).")
    ap.add_argument("--reviewed", type=Path, help="Review decisions (with --conversations).")
    ap.add_argument("--raw", type=Path, default=taubench_airline_path(),
                    help="gpt-4o-airline.json, for the default gold.")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--scorer", default="avg-attention")
    ap.add_argument("--write-docs", type=Path, help="Also write the table into this Markdown "
                    "file between the parameter-study markers (docs/evaluate.md).")
    args = ap.parse_args()
    start = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - start:7.1f} s] {msg}", file=sys.stderr, flush=True)

    if args.benchmark:
        gold_label = f"`{args.benchmark}`"
        bench = load_benchmark(args.benchmark)
    else:
        folder = build_gold(args.out / "gold", args.raw, args.conversations, args.reviewed)
        gold_label = (f"review decisions `{args.reviewed}`" if args.conversations else
                      f"lineage candidates on `{args.raw.name}`, accepted automatically")
        bench = load_benchmark(folder)
    log(f"gold: {len(bench.spans)} spans in {len(bench.conversations)} conversations")
    dev = [s for s in bench.spans if split_of(s.conversation_id) == "dev"]
    test = [s for s in bench.spans if split_of(s.conversation_id) == "test"]
    work = by_conversation(dev + test)
    shares, cost = all_shares(bench, work, args.out / "shares.jsonl", args.model, args.scorer,
                              log)
    t0 = time.perf_counter()
    tg, fl = run_grid(bench, dev, shares, log)
    grid_s = time.perf_counter() - t0
    current = default_point()
    chosen = choose(tg, current)
    by_f1 = best_edge_f1(tg, current)
    flat_best = choose(fl, replace(current, d_max=GRID["d_max"][0]))
    with (args.out / "grid.csv").open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow([*GRID, "method", "edge_f1", "source_recall", "spans"])
        for method, scores in (("tokengeist", tg), ("flat", fl)):
            for p, s in scores.items():
                w.writerow([*(getattr(p, k) for k in GRID), method, f"{s.edge_f1:.6f}",
                            f"{s.source_recall:.6f}", s.spans])

    folder = args.out / "test"
    write_split_benchmark(folder / "bench", bench, test)
    files = {
        "Tokengeist (chosen)": write_submission(folder / "tokengeist.jsonl", "tokengeist", chosen,
                                                args.model, args.scorer, bench, test, shares),
        "flat (same settings)": write_submission(folder / "flat.jsonl", "flat", chosen,
                                                 args.model, args.scorer, bench, test, shares),
    }
    if by_f1 != chosen:
        files["Tokengeist (best dev edge F1 alone)"] = write_submission(
            folder / "tokengeist-edge-f1.jsonl", "tokengeist", by_f1, args.model, args.scorer,
            bench, test, shares)
    if replace(flat_best, d_max=chosen.d_max) != chosen:
        files["flat (its own dev best)"] = write_submission(
            folder / "flat-own-best.jsonl", "flat", flat_best, args.model, args.scorer, bench,
            test, shares)
    reports = score_test(folder, files)
    dev_empty = sum(len(t["max"].skipped) for cid, t in shares.items()
                    if split_of(cid) == "dev")
    ctx = {"gold": gold_label, "model": args.model, "scorer": args.scorer,
           "dev": describe(dev, dev_empty), "test": describe(test), "tg": tg, "fl": fl,
           "chosen": chosen, "by_f1": by_f1, "current": current, "flat_best": flat_best,
           "dev_floors": floor_scores(bench, dev), "reports": reports, "cost": cost,
           "grid_s": grid_s, "total_s": time.perf_counter() - start}
    table = render(ctx)
    (args.out / "table.md").write_text(table, encoding="utf-8")
    if args.write_docs:
        write_docs(args.write_docs, table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
