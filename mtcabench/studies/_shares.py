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
from mtcabench.evaluate import TARGET, Attributor, Part, Tokengeist, TraceSettings, model_shares
from mtcabench.io import iter_json_lines
from mtcabench.model import BenchmarkSpan, Conversation

AGGREGATES = ("max", "sum")
#: Part of every cached conversation's signature: a cache of another format is recomputed.
CACHE_FORMAT = "shares-v2"


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
