"""Shares stored once per conversation: one forward pass gives the sentence scores of every
query (trace's own ``model_shares``), kept for both turn aggregates in a JSON Lines cache keyed
by model, scorer, conversation and spans, so that a rerun costs no forward pass."""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from mtcabench.benchmark import Benchmark
from mtcabench.errors import InputError
from mtcabench.evaluate import (
    TARGET,
    Attributor,
    Part,
    Tokengeist,
    TraceSettings,
    model_shares,
    relay_nodes,
)
from mtcabench.io import cut_torn_tail, iter_json_lines
from mtcabench.model import BenchmarkSpan, Conversation

AGGREGATES = ("max", "sum")
#: Part of every cached conversation's signature: a cache of another format is recomputed.
CACHE_FORMAT = "shares-v2"


@dataclass
class ShareTables:
    """The stored turn shares of one conversation under one turn aggregate.

    ``targets[span id]`` is a span's ``shares(TARGET)``, ``turns[i]`` an assistant turn's
    ``shares(i)``; ``skipped[span id]`` says why trace would skip a span (too long for any
    window). A span past the model's context, attributed in a context window, reads its own
    turn table, ``windowed[span id]`` (the window's answers: the same queries, shares of
    another rendering), and ``windows[span id]`` is the window (a submission's ``window``).
    """

    targets: dict[str, dict[int, float]] = field(default_factory=dict)
    #: By query: a whole turn under its index, a part of one (a call's argument value, the
    #: text of a turn that calls) under its Part.
    turns: dict[object, dict[int, float]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    windowed: dict[str, dict[object, dict[int, float]]] = field(default_factory=dict)
    windows: dict[str, dict] = field(default_factory=dict)

    def shares_fn(self, span_id: str):
        target = self.targets[span_id]
        turns = self.windowed.get(span_id, self.turns)

        def shares(key):
            return target if key == TARGET else turns.get(key, {})
        return shares

    def to_json(self) -> dict:
        def enc(d):
            return {str(k): v for k, v in d.items()}

        def table(t):
            return {_key_text(k): enc(v) for k, v in t.items()}
        out = {"targets": {s: enc(v) for s, v in self.targets.items()},
               "turns": table(self.turns), "skipped": self.skipped}
        if self.windows:  # a table without windows is written as before
            out["windowed"] = {s: table(t) for s, t in self.windowed.items()}
            out["windows"] = self.windows
        return out

    @classmethod
    def from_json(cls, obj: dict) -> ShareTables:
        def dec(d):
            return {int(k): float(v) for k, v in d.items()}

        def table(t):
            return {_key_of(k): dec(v) for k, v in t.items()}
        return cls(targets={s: dec(v) for s, v in obj["targets"].items()},
                   turns=table(obj["turns"]), skipped=dict(obj["skipped"]),
                   windowed={s: table(t) for s, t in obj.get("windowed", {}).items()},
                   windows=dict(obj.get("windows", {})))

    @property
    def before_windows(self) -> bool:
        """Computed under the policy before context windows (a span past the context was
        skipped): such tables are computed again; tables with no such span stay valid."""
        return any(before_windows(r) for r in self.skipped.values())


def before_windows(reason: str | None) -> bool:
    """A ``skipped`` reason of the policy before context windows (``too-long: the span ends
    at token N ...``): that span is now attributed in a window, so its result is stale."""
    return bool(reason) and reason.startswith("too-long: the span ends at token")


def tables_from(result, conversation: Conversation, spans: list[BenchmarkSpan],
                relayed: bool = False) -> ShareTables:
    """The share tables of one ``model_shares`` result (:class:`SpanShares`): each span's
    target shares; every query Tokengeist may ask (with ``relayed``, each assistant sentence
    too), once for the spans read from the whole conversation and once per span read from a
    context window."""
    tables = ShareTables(skipped={k: u.reason() for k, u in result.unfit.items()})
    for sid, fn in result.shares.items():
        tables.targets[sid] = dict(fn(TARGET))
    turn_of = {s.id: s.span.turn for s in spans}
    plain = [sid for sid in result.shares if sid not in result.windows]
    if plain:
        last = max(turn_of[sid] for sid in plain)
        tables.turns = _turn_table(result.shares[plain[0]], conversation, last, relayed)
    for sid, window in result.windows.items():
        tables.windowed[sid] = _turn_table(result.shares[sid], conversation, turn_of[sid],
                                           relayed)
        tables.windows[sid] = stored_window(window)
    return tables


def stored_window(window) -> dict:
    """A window as a study stores it: the submission's ``window`` and how it was chosen."""
    return {**window.report(), **window.policy()}


def other_window_policy(windows: dict[str, dict], settings: TraceSettings) -> bool:
    """Stored windows (:func:`stored_window`) of another room than ``settings``' (a window
    stored without one, before shared windows, is a window per turn: room 0). Such shares are
    computed again; shares without windows stay valid."""
    return any(w.get("room", 0) != settings.window_room_tokens(w["limit"])
               for w in windows.values())


def _turn_table(fn, conversation: Conversation, last: int, relayed: bool) -> dict:
    out = {}
    keys = Tokengeist().query_turns(conversation, last)
    for key in [*keys, *relay_nodes(conversation, last)] if relayed else keys:
        shares = fn(key)
        if shares:
            out[key] = dict(shares)
    return out


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
    scores_once = _OnePass(attributor)
    out = {}
    for agg in AGGREGATES:
        scores_once.aggregate = agg
        result = model_shares(scores_once, conversation, {s.id: s.span for s in spans},
                              [Tokengeist()], TraceSettings(turn_aggregate=agg))
        out[agg] = tables_from(result, conversation, spans)
    return out


class _OnePass(Attributor):
    """An attributor whose sentence scores are computed once per rendering and queries (the
    conversation, and each context window of it), so that the second turn aggregate costs no
    forward pass."""

    def __init__(self, inner: Attributor):
        super().__init__(inner.loaded, inner.scorer, aggregate=inner.aggregate, seed=inner.seed)
        self._inner = inner
        self._scores: dict[tuple, object] = {}

    def sentence_scores(self, rendered, queries, shared=None):
        # A window renders the conversation under the same id: its text tells them apart.
        key = (rendered.conversation.id, rendered.full.text, tuple(queries))
        if key not in self._scores:
            self._scores[key] = self._inner.sentence_scores(rendered, queries, shared)
        return self._scores[key]


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
        # io's one reader: split at \n only, one number policy, a bad line one InputError.
        for lineno, obj in iter_json_lines(path, torn_tail=True):
            cid = obj.get("conversation_id")
            if not isinstance(cid, str):
                raise InputError.at(path, "a shares line without its conversation_id; remove "
                                    "the line (or the file) to compute it again", line=lineno)
            out[cid] = obj
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
        stored = hit["shares"]["max"] if hit is not None else {}
        if (hit is not None and hit["signature"] == sig
                and not any(before_windows(r) for r in stored["skipped"].values())
                and not other_window_policy(stored.get("windows", {}), TraceSettings())):
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
    cut_torn_tail(cache_path)  # a crash's torn line: the next record starts a line of its own
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
