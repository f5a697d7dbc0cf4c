"""Resumable studies: units of model work, each one result file, run in order, skipped when done.

A study is a list of :class:`Unit` (one conversation x base-scorer configuration x seed, with
the search points whose graphs it reports). :func:`run_units` works through them:

- a unit whose result file holds its signature is **done** and skipped (its points are
  replayed without the model when a point is new, its settings changed or the gold did);
- a unit without a file, with a torn one or with another signature (other settings, another
  model, another conversation text) is **computed**: the base scorer's turn shares of every
  query the methods may ask, from the evaluator's own per-conversation function
  (:func:`mtcabench.evaluate.model_shares`, on :func:`mtcabench.evaluate.load_attributor`), the
  forward passes as the evaluator counts them, then each point's graphs by the search itself
  (:func:`mtcabench.studies.replay`) and each span's scores (:func:`score_span`);
- every file is written atomically when its unit is finished, so a stop (``kill -9`` too)
  loses at most the unit in progress; the run claims the store so that two runs never write
  it at once, and removes what a killed writer left.

Progress goes to ``log``: one line per unit (done, replayed, computed with its seconds and
passes), with the model time left at the pace so far.
"""

from __future__ import annotations

import contextlib
import fcntl
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mtcabench.baselines import FLOORS
from mtcabench.evaluate import (
    SCORERS,
    TARGET,
    SearchSettings,
    Tokengeist,
    TraceSettings,
    get_methods,
    load_attributor,
    model_shares,
)
from mtcabench.files import claim_output
from mtcabench.model import BenchmarkSpan, Conversation
from mtcabench.results.metrics import columns, edge_sources, score_span, span_matrix
from mtcabench.studies._grid import replay
from mtcabench.studies._results import (
    RESULT_FORMAT,
    PointResult,
    ResultStore,
    SpanResult,
    StudyResult,
    conversation_fingerprint,
    digest,
    gold_fingerprint,
    point_settings,
    rounded,
    settings_record,
)
from mtcabench.studies._shares import (
    ShareTables,
    before_windows,
    other_window_policy,
    stored_window,
    tables_from,
)

#: The scorer name of a unit of the model-free floors (no model, no shares).
FLOOR = "model-free"
#: Which queries a unit computes: the spans only (a scorer run flat only) or also every
#: assistant turn and call argument Tokengeist may recurse into (flat is replayed from those
#: units too: its queries are a subset).
QUERIES = {"flat": ("flat",), "tokengeist": ("tokengeist", "flat")}


@dataclass(frozen=True)
class SearchPoint:
    """A search point: the settings a unit's graphs are replayed at, under a label."""

    label: str
    search: SearchSettings = field(default_factory=SearchSettings)
    methods: tuple[str, ...] = ("tokengeist", "flat")

    @property
    def record(self) -> dict:
        return {**point_settings(self.search), "methods": list(self.methods)}


#: The point a floor unit reports: every floor of the registry, in its order (recency,
#: first-user, string-match), so that a floor added there shows in every table beside the
#: methods (its units then read as stale and are recomputed, without a model).
FLOOR_POINT = SearchPoint("default", methods=tuple(FLOORS))


@dataclass(frozen=True)
class Unit:
    """One conversation under one base-scorer configuration and seed."""

    study: str
    split: str
    conversation: Conversation
    spans: tuple[BenchmarkSpan, ...]
    scorer: str
    setting: str
    settings: TraceSettings = field(default_factory=TraceSettings)
    queries: str = "tokengeist"
    points: tuple[SearchPoint, ...] = (SearchPoint("default"),)
    model: str = "smollm2-135m-instruct"

    @property
    def seed(self) -> int:
        return self.settings.seed

    def signature_record(self) -> dict:
        """Everything that shapes the unit's shares (what :attr:`signature` hashes)."""
        conversation = conversation_fingerprint(self.conversation, list(self.spans))
        if self.scorer == FLOOR:
            return {"format": RESULT_FORMAT, "scorer": FLOOR, "floors": {
                n: FLOORS[n].parameters for n in sorted(FLOORS)}, "conversation": conversation}
        cls = SCORERS.get(self.scorer)
        own = cls.settings_key()
        return {
            "format": RESULT_FORMAT, "model": self.model, "scorer": self.scorer,
            "scorer_settings": settings_record(self.settings.scorer_settings(own, cls.Settings)),
            "turn_aggregate": self.settings.turn_aggregate,
            "max_tokens": self.settings.max_tokens, "seed": self.settings.seed,
            "queries": self.queries, "conversation": conversation,
            # the relayed sentences are queries of their own (stated only when asked)
            **({"relay_sentences": True} if self.settings.search.relay_sentences else {}),
        }

    @property
    def signature(self) -> str:
        return digest(self.signature_record())

    def path(self, store: ResultStore) -> Path:
        return store.path(self.split, self.scorer, self.setting, self.seed, self.conversation.id)


def code_commit(root: Path | None = None) -> str:
    """The checkout's commit, ``-dirty`` when tracked files outside the results differ."""
    root = root or Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain",
                                "--untracked-files=no", "--", ".", ":!benchmarks/results"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("-dirty" if dirty else "")


# --------------------------------------------------------------------------- per span


def original_sources(span: BenchmarkSpan) -> set[int]:
    """The gold sources at the end of the longest chains from the target: the ones flat
    attribution is said to miss (every source when none is reached by the edges)."""
    parents: dict[int, list[int]] = {}
    for e in span.graph.edges:
        parents.setdefault(e.child, []).append(e.parent)
    depth = {span.span.turn: 0}
    frontier = [span.span.turn]
    while frontier:
        nxt = []
        for node in frontier:
            for p in parents.get(node, []):
                if p not in depth:
                    depth[p] = depth[node] + 1
                    nxt.append(p)
        frontier = nxt
    reached = [s for s in span.sources if s in depth]
    if not reached:
        return set(span.sources)
    deepest = max(depth[s] for s in reached)
    return {s for s in reached if depth[s] == deepest}


def span_result(span: BenchmarkSpan, conversation: Conversation, graph, skipped: str | None,
                lookups: int | None) -> SpanResult:
    """A span's graph scored against its gold: the span_matrix row and original-source
    recall (the share of :func:`original_sources` the prediction reaches as sources)."""
    edges = [] if graph is None else sorted(graph.edges, key=lambda e: (-e.child, e.parent))
    row = span_matrix([score_span(span, conversation, edges)])[0]
    gold = original_sources(span)
    got = edge_sources({e.pair for e in edges}, conversation) if edges else set()
    return SpanResult(
        span_id=span.id, skipped=skipped,
        edges=[(e.child, e.parent, rounded(e.score)) for e in edges],
        score={c: rounded(v) for c, v in zip(columns(), row)},
        extra={"original_recall": rounded(len(gold & got) / len(gold)) if gold else None},
        lookups=lookups)


def replay_point(unit: Unit, tables: ShareTables | None, point: SearchPoint) -> PointResult:
    """Every span's graph at ``point`` from the stored shares, scored (a floor's from the
    conversation alone)."""
    methods: dict[str, list[SpanResult]] = {}
    for method in point.methods:
        out = []
        if method in FLOORS:
            out = [span_result(s, unit.conversation,
                               FLOORS[method].graph(unit.conversation, s.span), None, 0)
                   for s in unit.spans]
            methods[method] = out
            continue
        for s in unit.spans:
            asked: list = []
            graph = None
            if s.id not in tables.skipped:
                shares = tables.shares_fn(s.id)

                def counted(key, shares=shares, asked=asked):
                    asked.append(key)
                    return shares(key)

                graph = replay(method, unit.conversation, s, _Counted(tables, s.id, counted),
                               point.search)
            out.append(span_result(s, unit.conversation, graph, tables.skipped.get(s.id),
                                   len(set(map(str, asked))) if graph is not None else 0))
        methods[method] = out
    return PointResult(settings=point.record, settings_hash=digest(point.record),
                       gold=gold_fingerprint(list(unit.spans)), methods=methods)


class _Counted:
    """One span's view of a ShareTables whose shares function records the queries a search
    asks (what :func:`replay` reads: ``skipped`` and ``shares_fn``)."""

    def __init__(self, tables: ShareTables, span_id: str, fn):
        self.skipped = tables.skipped
        self._fns = {span_id: fn}

    def shares_fn(self, span_id: str):
        return self._fns[span_id]


# --------------------------------------------------------------------------- the model part


class Models:
    """The model, loaded once, when the first unit needs it (none when every unit is done)."""

    def __init__(self, device: str = "auto", loaded=None):
        self.device, self._loaded = device, loaded

    def get(self, name: str):
        if self._loaded is None or self._loaded.name != name:
            from mtcabench.evaluate import load_model

            self._loaded = load_model(name, device=self.device)
        return self._loaded


def compute_unit(unit: Unit, loaded) -> tuple[ShareTables | None, int, int, float]:
    """The unit's turn shares from the evaluator: (tables, forward passes, queries, seconds);
    a floor's unit has none."""
    if unit.scorer == FLOOR:
        return None, 0, 0, 0.0
    attributor = load_attributor(loaded, unit.scorer, unit.settings)
    methods = list(get_methods(QUERIES[unit.queries]).values())
    before = attributor.forward_passes
    t0 = time.perf_counter()
    got = model_shares(attributor, unit.conversation, {s.id: s.span for s in unit.spans},
                       methods, unit.settings)
    seconds = time.perf_counter() - t0
    if unit.queries == "tokengeist":
        tables = tables_from(got, unit.conversation, list(unit.spans),
                             unit.settings.search.relay_sentences)
    else:
        tables = ShareTables(skipped={k: u.reason() for k, u in got.unfit.items()},
                             targets={sid: dict(fn(TARGET)) for sid, fn in got.shares.items()},
                             windows={sid: stored_window(w) for sid, w in got.windows.items()})
    # The queries asked: the spans, and Tokengeist's per rendering (the whole conversation,
    # each context window).
    queries = len(got.shares)
    if unit.queries == "tokengeist":
        turns = {s.id: s.span.turn for s in unit.spans}
        lasts = {turns[sid] for sid in got.windows}
        plain = [turns[sid] for sid in got.shares if sid not in got.windows]
        lasts |= {max(plain)} if plain else set()
        queries += sum(len(Tokengeist().query_turns(unit.conversation, t)) for t in lasts)
    return tables, attributor.forward_passes - before, queries, seconds


@contextlib.contextmanager
def held(lock: Path | None) -> Iterator[None]:
    """An exclusive flock on ``lock`` (waiting for it), so that a long study shares the
    machine's heavy-job lock with other work unit by unit; nothing when None."""
    if lock is None:
        yield
        return
    with open(lock, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


# --------------------------------------------------------------------------- the loop


@dataclass
class RunSummary:
    """What a run did, unit by unit."""

    done: int = 0
    replayed: int = 0
    computed: int = 0
    left: int = 0
    model_seconds: float = 0.0
    results: list[StudyResult] = field(default_factory=list)


def state(unit: Unit, store: ResultStore) -> tuple[str, StudyResult | None]:
    """``done``, ``replay`` (points or gold changed) or why it must be computed."""
    got = store.read(unit.path(store))
    if isinstance(got, str):
        return got, None
    if got.signature != unit.signature:
        return "other settings", got
    if unit.scorer != FLOOR and any(before_windows(s.skipped) for p in got.points.values()
                                    for spans in p.methods.values() for s in spans):
        # Spans past the context were skipped then; they are attributed in a window now.
        return "spans past the context, now windowed", got
    if (unit.scorer != FLOOR and got.shares is not None
            and other_window_policy(got.shares.get("windows", {}), unit.settings)):
        # Windows of another policy (one per turn before shared windows, or another room).
        return "context windows of another policy", got
    gold = gold_fingerprint(list(unit.spans))
    for p in unit.points:
        have = got.points.get(p.label)
        if have is None or have.settings_hash != digest(p.record) or have.gold != gold:
            return ("replay" if got.shares is not None or unit.scorer == FLOOR
                    else "no shares kept"), got
    return "done", got


def run_units(units: Sequence[Unit], store: ResultStore, *, models: Models | None = None,
              lock: Path | None = None, log: Callable[[str], None] | None = None,
              commit: str | None = None, replay_only: bool = False) -> RunSummary:
    """Work through ``units`` in order (see the module docstring); returns what was done.

    ``replay_only``: replay what the stored shares allow (a changed default, a revised gold)
    and leave the units that need the model as they are (``left``): what a table-only run does,
    so that a table never shows a point stored under other settings."""
    start = time.perf_counter()
    if log is None:
        def log(msg: str) -> None:
            print(msg, file=sys.stderr, flush=True)
    models = models or Models()
    commit = commit or code_commit()
    summary = RunSummary()
    store.root.mkdir(parents=True, exist_ok=True)
    with claim_output(store.root):
        for left in store.leftovers():
            left.unlink(missing_ok=True)
            log(f"removed {left.name}: a write a stopped run left unfinished")
        states = [state(u, store) for u in units]
        todo = sum(1 for s, _ in states if s not in ("done", "replay"))
        # A floor's unit is computed from the conversation alone: say how many need the model.
        with_model = sum(1 for u, (s, _) in zip(units, states)
                         if s not in ("done", "replay") and u.scorer != FLOOR)
        log(f"{len(units)} units: {sum(s == 'done' for s, _ in states)} done, "
            f"{sum(s == 'replay' for s, _ in states)} to replay, {todo} to compute "
            f"({with_model} with the model{', left: replay only' if replay_only else ''})")
        for n, (unit, (why, old)) in enumerate(zip(units, states), 1):
            where = (f"{unit.split} {unit.scorer} {unit.setting} seed {unit.seed} "
                     f"{unit.conversation.id}")
            if why == "done":
                summary.done += 1
                summary.results.append(old)
                continue
            if why == "replay":
                tables = None if old.shares is None else ShareTables.from_json(old.shares)
                # Points of other stages (a test unit serves the comparison and the peers
                # table) are kept.
                result = old.model_copy(update={"points": {**old.points, **{
                    p.label: replay_point(unit, tables, p) for p in unit.points}}})
                store.write(result, unit.path(store))
                summary.replayed += 1
                summary.results.append(result)
                log(f"[{n}/{len(units)}] {where}: replayed (no model)")
                continue
            if replay_only and unit.scorer != FLOOR:
                summary.left += 1
                log(f"[{n}/{len(units)}] {where}: left ({why}; needs the model)")
                continue
            if unit.scorer == FLOOR:
                tables, passes, queries, seconds = compute_unit(unit, None)
            else:
                with held(lock):
                    tables, passes, queries, seconds = compute_unit(unit, models.get(unit.model))
            result = StudyResult(
                split=unit.split, conversation_id=unit.conversation.id,
                scorer=unit.scorer, setting=unit.setting, seed=unit.seed,
                signature=unit.signature, settings=unit.signature_record(),
                model=None if unit.scorer == FLOOR else unit.model,
                commit=commit, forward_passes=passes, queries=queries, spans=len(unit.spans),
                per_query=unit.scorer != FLOOR and "per query" in str(
                    SCORERS.get(unit.scorer).passes_per_conversation),
                seconds=round(seconds, 1), shares=None if tables is None else tables.to_json(),
                points={p.label: replay_point(unit, tables, p) for p in unit.points})
            store.write(result, unit.path(store))
            summary.computed += 1
            summary.model_seconds += seconds
            summary.results.append(result)
            left = todo - summary.computed
            pace = summary.model_seconds / summary.computed
            log(f"[{n}/{len(units)}] {where}: computed ({why}) in {seconds:.0f} s, {passes} "
                f"passes, {len(unit.spans)} spans; {left} to compute, about "
                f"{left * pace / 60:.0f} min at this pace; {(time.perf_counter() - start) / 60:.1f}"
                " min so far")
    return summary


def share_matrix(results: Sequence[StudyResult], point: str, method: str) -> tuple[
        list[str], np.ndarray, np.ndarray]:
    """(span ids, conversation of each span, span_matrix rows) of ``method`` at ``point``
    over the results, in their order; a result without that point is an error."""
    ids, convs, rows = [], [], []
    cols = columns()
    for r in results:
        p = r.points.get(point)
        if p is None or method not in p.methods:
            raise ValueError(f"{r.conversation_id} ({r.scorer} {r.setting}): no {method} at "
                             f"point {point!r}; rerun the study's stage (replayed, no model)")
        for s in p.methods[method]:
            missing = [c for c in cols if c not in s.score]
            if missing:
                raise ValueError(f"{r.conversation_id}: scores lack {missing}; rerun the "
                                 "study's stage to rescore (no model)")
            ids.append(s.span_id)
            convs.append(r.conversation_id)
            rows.append([s.score[c] for c in cols])
    return ids, np.array(convs), np.array(rows, dtype=np.float64).reshape(len(rows), len(cols))
