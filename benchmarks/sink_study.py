"""Sink study: where does the system prompt's credit come from, and which correction of the
base scorers' attention removes it without losing edges? On the dev split of TauBench airline
(benchmarks/parameter_study.py's split and gold), with average attention.

    python benchmarks/sink_study.py --conversations 6          # capture (model) + replay
    python benchmarks/sink_study.py --replay-only              # replay the stored captures

**Capture** (the model's cost, once per conversation): one forward pass over the whole
conversation gives every query's attention to every token (averaged over its rows, heads and
layers: what average attention reads), for the target spans, every assistant turn as a whole
and every part of one (its text, each call's arguments). Stored in ``--out``/captures/ as
.npz with each token's turn and offset in ``Turn.text``, so that every variant below is
replayed without the model.

**Variants** (replayed): the unit splitting (sentences and lines, as shipped before; or JSON
fields and items first, as now), how intermediate call turns are queried (whole turn, as
before; by parts, as now), and the sink correction of ``mtcabench.evaluate.attribution.
_attention`` (none; or the one the scorers now apply: the sink positions the probe finds
belong to no unit). Each gives Tokengeist's graphs at the
default search settings; scored against the gold: macro edge F1, and the predicted content
edges to the system turn where the gold has none (per span). Intervals: conversation-clustered
paired bootstrap (1,000 resamples) of each variant's difference from the shipped one.

**Results**: one file per conversation and variant under benchmarks/results/sink/ (its spans'
edges and scores, keyed by the variant, the search settings and the conversation), written
after each capture is replayed; the captures are large and stay in ``--out``. The table comes
from the result files alone: ``python benchmarks/study_tables.py`` (the "sink-study" table).
A stop loses at most the capture in progress (each is written whole or not at all).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from bisect import bisect_right
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))  # tests.support

from tests.support.paths import taubench_airline_path  # noqa: E402

from mtcabench.benchmark import load_benchmark  # noqa: E402
from mtcabench.evaluate import TARGET, SearchSettings, tokengeist  # noqa: E402
from mtcabench.evaluate import Part, query_nodes, split_sentences  # noqa: E402
from mtcabench.model import EdgeKind, Role  # noqa: E402
from mtcabench.results.metrics import score_span  # noqa: E402
from mtcabench.files import atomic_write  # noqa: E402
from mtcabench.studies import (  # noqa: E402
    RESULTS,
    SINK,
    PointResult,
    ResultStore,
    StudyResult,
    build_gold,
    by_conversation,
    code_commit,
    conversation_fingerprint,
    digest,
    gold_fingerprint,
    point_settings,
    rounded,
    split_of,
    write_tables,
)

#: The search the study was measured with: the default before the claims' rules (issue 47),
#: which act only on spans no earlier turn holds the text of and leave the sink variants'
#: comparison as it was; its result files (keyed by these settings) stay valid without the
#: captures they were replayed from.
MEASURED_WITH = SearchSettings(open_system=None, named_values=False, value_origin=False)
DEFAULT_OUT = ROOT / "runs" / "sink-study"
_OLD_BOUNDARY = re.compile(r"(?<=[.!?])\s+|\n+")


def old_split(text: str) -> list[tuple[int, int]]:
    """The unit splitting as shipped before (sentences and lines only)."""
    starts, pos = [], 0
    for m in _OLD_BOUNDARY.finditer(text):
        if text[pos : m.start()].strip():
            starts.append(pos)
        pos = m.end()
    if text[pos:].strip():
        starts.append(pos)
    if not starts:
        return []
    starts[0] = 0
    return list(zip(starts, starts[1:] + [len(text)]))


# --------------------------------------------------------------------------- capture


def capture(loaded, conv, spans, path, seconds=lambda: 0.0) -> None:
    """One forward pass: every query's raw per-token attention, saved with the token map (to
    ``path``, a file name or an open binary file) and the pass's seconds."""
    from mtcabench.evaluate import query_features, render_conversation, sink_positions

    last = max(s.span.turn for s in spans)
    rendered = render_conversation(conv, loaded.tokenizer, upto=last)
    full = rendered.full
    limit = loaded.context_length
    keys, queries = [], []
    for s in spans:
        a, b = full.span_tokens(s.span.turn, s.span.start, s.span.end)
        if b > a and b <= limit:
            keys.append(["span", s.id])
            queries.append((s.span.turn, s.span.start, s.span.end))
    if not queries:
        return
    nodes = query_nodes(conv, last)
    whole = sorted({k.turn if isinstance(k, Part) else k for k in nodes})
    for i in whole:
        keys.append(["turn", i])
        queries.append((i, 0, len(conv.turns[i].text)))
    for k in nodes:
        if isinstance(k, Part):
            keys.append(["part", list(k)])
            queries.append(tuple(k))
    rows = [np.arange(*full.span_tokens(*q)) for q in queries]
    rows = [r[r < limit] for r in rows]
    # The raw attention, sinks included (sinks=False): the variants apply the correction.
    feats = query_features(loaded.model, full.input_ids, rows, full.token_sentence,
                           len(rendered.sentences), with_heads=False, sinks=False)
    sinks = sink_positions(loaded.model, full.input_ids)
    T = feats.token_attn.shape[1]
    tok_turn = np.full(T, -1, dtype=np.int64)
    tok_char = np.full(T, -1, dtype=np.int64)
    for i, (lo, hi) in enumerate(full.turn_chars):
        a, b = full.tokens_for_chars(lo, hi)
        b = min(b, T)
        tok_turn[a:b] = i
        tok_char[a:b] = np.maximum(full.offsets[a:b, 0], lo) - full.origins[i]
    np.savez_compressed(path, token_attn=feats.token_attn.numpy().astype(np.float32),
                        tok_turn=tok_turn, tok_char=tok_char,
                        keys=np.array(json.dumps(keys)),
                        queries=np.array(queries, dtype=np.int64), sinks=sinks,
                        seconds=np.array(seconds()))


# --------------------------------------------------------------------------- replay


def unit_of_tokens(conv, tok_turn, tok_char, splitter) -> tuple[np.ndarray, list[tuple[int, int, int]]]:
    """Each token's unit id under ``splitter`` (-1: template), and the units (turn, a, b)."""
    units: list[tuple[int, int, int]] = []
    starts: dict[int, tuple[list[int], int]] = {}
    for t in conv.turns:
        spans = splitter(t.text)
        starts[t.index] = ([a for a, _ in spans], len(units))
        units += [(t.index, a, b) for a, b in spans]
    out = np.full(len(tok_turn), -1, dtype=np.int64)
    for k, (turn, c) in enumerate(zip(tok_turn, tok_char)):
        if turn >= 0 and turn in starts:
            s, base = starts[turn]
            j = bisect_right(s, int(c)) - 1
            if j >= 0:
                out[k] = base + j
    return out, units

def unit_sums(values: np.ndarray, unit: np.ndarray, n_units: int) -> np.ndarray:
    """Each unit's attention mass (the sum of its tokens' values)."""
    return np.bincount(np.where(unit >= 0, unit, n_units), weights=values[: len(unit)],
                       minlength=n_units + 1)[:n_units]


def shares_from(sums: np.ndarray, units, segment, before: int,
                aggregate: str = "max") -> dict[int, float]:
    """Turn shares from unit masses: units pooled per segment, turns by their best segment
    (or the sum of their units), normalised (as the engine's turn_shares)."""
    raw: dict[int, float] = {}
    pooled: dict[tuple[int, int], float] = {}
    for u, (turn, _, _) in enumerate(units):
        if turn < before:
            if aggregate == "sum":
                raw[turn] = raw.get(turn, 0.0) + sums[u]
            else:
                pooled[turn, segment[u]] = pooled.get((turn, segment[u]), 0.0) + sums[u]
    for (turn, _), v in pooled.items():
        raw[turn] = max(raw.get(turn, -np.inf), v)
    total = sum(max(v, 0.0) for v in raw.values())
    return {t: (max(v, 0.0) / total if total > 0 else 0.0) for t, v in raw.items()}


def evidence_of(sums: np.ndarray, units, conv, parent: int, k: int = 3):
    """The parent's ``k`` best units for a query (trimmed as the engine trims them)."""
    from mtcabench.evaluate import evidence_range
    from mtcabench.model import ScoredSentence

    ranked = sorted((-sums[u], u) for u, (turn, _, _) in enumerate(units)
                    if turn == parent and sums[u] > 0)[:k]
    out = []
    for neg, u in ranked:
        a, b = evidence_range(conv.turns[parent].text, units[u][1], units[u][2])
        out.append(ScoredSentence(start=a, end=b, score=float(-neg)))
    return out


def replay_conversation(conv, spans, data, variant, search) -> dict[str, tuple]:
    """Tokengeist's graph of each captured span under ``variant``, and each content edge's
    evidence (the best units of its parent for the query that found it)."""
    from mtcabench.evaluate import node_keys

    attn = data["token_attn"].astype(np.float64)
    keys = json.loads(str(data["keys"]))
    queries = data["queries"]
    splitter = split_sentences if variant["units"] == "json" else old_split
    unit, units = unit_of_tokens(conv, data["tok_turn"], data["tok_char"], splitter)
    if variant.get("segments", True):  # units pooled in their sentence or line
        starts = {t.index: [x for x, _ in old_split(t.text)] for t in conv.turns}
        segment = [max(bisect_right(starts[turn], a) - 1, 0) for turn, a, _ in units]
    else:  # every unit a segment of its own
        segment = list(range(len(units)))
    if variant["sink"].startswith("probe"):  # sinks in no unit
        sinks = data["sinks"]
        attn[:, sinks[sinks < attn.shape[1]]] = 0.0
    if "floor" in variant["sink"]:  # each query's diffuse floor: its median per-token attention
        for i, (turn, _, _) in enumerate(queries):
            before = ((data["tok_turn"] >= 0) & (data["tok_turn"] < turn))[: attn.shape[1]]
            if before.any():
                attn[i] = np.maximum(attn[i] - np.median(attn[i, before]), 0.0)
    if variant["sink"].endswith("common"):
        attn = np.maximum(attn - common_mode(attn, data["tok_turn"], queries[:, 0])[None, :],
                          0.0)
    table: dict[object, tuple] = {}
    for (kind, key), (turn, _, _), row in zip(keys, queries, attn):
        sums = unit_sums(row, unit, len(units))
        sh = shares_from(sums, units, segment, int(turn), variant.get("aggregate", "max"))
        k = ("span", key) if kind == "span" else int(key) if kind == "turn" else Part(*key)
        table[k] = (sh, sums)
    out = {}
    for s in spans:
        if ("span", s.id) not in table:
            continue

        def lookup(k, s=s):
            if k == TARGET:
                return table[("span", s.id)]
            if isinstance(k, Part) and variant["calls"] == "whole":
                return table.get(k.turn, ({}, None))
            return table.get(k, ({}, None))

        graph = tokengeist(conv, s.span.turn, lambda k: lookup(k)[0], search, s.span.text)
        evidence = {}
        for e in graph.edges:
            if e.kind is not EdgeKind.CONTENT:
                continue
            cands = [TARGET] if e.child == s.span.turn else node_keys(conv, e.child)
            best = max(cands, key=lambda k: lookup(k)[0].get(e.parent, -1.0))
            sums = lookup(best)[1]
            if sums is not None:
                evidence[e.pair] = evidence_of(sums, units, conv, e.parent)
        out[s.id] = (graph, evidence)
    return out


def common_mode(attn: np.ndarray, tok_turn: np.ndarray, q_turn: np.ndarray,
                least: int = 2) -> np.ndarray:
    """Per token, the attention every query reading it pays it: the least over the queries of
    later turns (0 where fewer than ``least`` of them read it)."""
    out = np.zeros(attn.shape[1])
    for turn in np.unique(tok_turn[tok_turn >= 0]):
        sel = q_turn > turn
        if sel.sum() >= least:
            cols = tok_turn == turn
            out[cols] = attn[np.ix_(sel, cols)].min(axis=0)
    return out




def span_results(bench, spans, graphs) -> list:
    """Each span's row (the scorer's per-span matrix, evidence included) and the wrong edges
    to the system turn, as a result file holds them."""
    from mtcabench.results.metrics import columns, span_matrix
    from mtcabench.studies import SpanResult

    out = []
    for s in spans:
        conv = bench.conversations[s.conversation_id]
        g, evidence = graphs.get(s.id, (None, {}))
        pred = [] if g is None else sorted(g.edges, key=lambda e: (-e.child, e.parent))
        gold = {e.pair for e in s.graph.edges}
        row = span_matrix([score_span(s, conv, [e.pair for e in pred], sentences=evidence)])[0]
        system = {t.index for t in conv.turns if t.role is Role.SYSTEM}
        content = [e.pair for e in pred if e.kind is EdgeKind.CONTENT]
        out.append(SpanResult(
            span_id=s.id, skipped=None if g is not None else "not captured (too long)",
            edges=[(e.child, e.parent, rounded(e.score)) for e in pred],
            score={c: rounded(v) for c, v in zip(columns(), row)},
            extra={"system_wrong": float(sum(1 for p in content
                                             if p[1] in system and p not in gold))}))
    return out


VARIANTS = {
    "shipped (sentences, whole call turns, sinks in)":
        {"units": "sentences", "calls": "whole", "sink": "none"},
    "sinks out": {"units": "sentences", "calls": "whole", "sink": "probe"},
    "calls by argument values": {"units": "sentences", "calls": "parts", "sink": "none"},
    "calls by argument values + sinks out":
        {"units": "sentences", "calls": "parts", "sink": "probe"},
    "calls by argument values + sinks out + JSON units (now)":
        {"units": "json", "calls": "parts", "sink": "probe"},
    "(rejected) JSON units scored alone, not pooled per sentence":
        {"units": "json", "calls": "parts", "sink": "probe", "segments": False},
    "(tried) now + common mode out": {"units": "json", "calls": "parts", "sink": "probe+common"},
    "(tried) now + each query's median floor out":
        {"units": "json", "calls": "parts", "sink": "probe+floor"},
}


SINK_FORMAT = "sink-study-v1"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="captures and gold (not "
                    "committed: the captures are large)")
    ap.add_argument("--results", type=Path, default=ROOT / RESULTS,
                    help="the result files' folder (their sink/ part; committed)")
    ap.add_argument("--conversations", type=int, default=6,
                    help="dev conversations captured (the first N by id)")
    ap.add_argument("--replay-only", action="store_true")
    ap.add_argument("--captures", type=Path, help="captures folder (default: OUT/captures)")
    ap.add_argument("--sum", action="store_true", help="also replay the sum turn aggregate")
    args = ap.parse_args()
    gold = args.out / "gold"
    folder = gold / "release" / "study" if (gold / "release" / "study").is_dir() else build_gold(
        gold, taubench_airline_path(), None, None)
    bench = load_benchmark(folder)
    work = by_conversation(s for s in bench.spans if split_of(s.conversation_id) == "dev")
    chosen = sorted(work)[: args.conversations]
    caps = args.captures or args.out / "captures"
    caps.mkdir(parents=True, exist_ok=True)
    todo = [c for c in chosen if not (caps / f"{c.replace('/', '_')}.npz").exists()]
    if todo and not args.replay_only:
        from mtcabench.evaluate import load_model

        loaded = load_model()
        for n, cid in enumerate(todo, 1):
            t0 = time.perf_counter()
            path = caps / f"{cid.replace('/', '_')}.npz"
            # written whole or not at all: a stop never leaves a capture a rerun would trust
            with atomic_write(path, "wb") as fh:
                capture(loaded, bench.conversations[cid], work[cid], fh,
                        seconds=lambda t0=t0: time.perf_counter() - t0)
            print(f"captured {n}/{len(todo)} {cid}: {len(work[cid])} spans, "
                  f"{time.perf_counter() - t0:.0f} s", flush=True)
    have = [c for c in chosen if (caps / f"{c.replace('/', '_')}.npz").exists()]
    variants = dict(VARIANTS)
    if args.sum:
        for name in list(variants):
            variants[name + " [sum]"] = {**variants[name], "aggregate": "sum"}
    search = MEASURED_WITH
    store = ResultStore(args.results / SINK)
    commit = code_commit()
    for c in have:
        data = np.load(caps / f"{c.replace('/', '_')}.npz")
        conv = bench.conversations[c]
        seconds = float(data["seconds"]) if "seconds" in data else 0.0
        for order, (name, v) in enumerate(variants.items()):
            # stored as every study stores a point (the settings off since left out), so the
            # result files written before those settings keep their signature
            record = {"format": SINK_FORMAT, "variant": v, "search": point_settings(search),
                      "model": "smollm2-135m-instruct",
                      "conversation": conversation_fingerprint(conv, work[c])}
            path = store.path("dev", "avg-attention", name, 0, c)
            old = store.read(path)
            if isinstance(old, StudyResult) and old.signature == digest(record):
                continue
            graphs = replay_conversation(conv, work[c], data, v, search)
            point = PointResult(settings=point_settings(search),
                                settings_hash=digest(point_settings(search)),
                                gold=gold_fingerprint(work[c]),
                                methods={"tokengeist": span_results(bench, work[c], graphs)})
            store.write(StudyResult(
                split="dev", conversation_id=c, scorer="avg-attention", setting=name, seed=0,
                signature=digest(record), settings={**record, "order": order}, model=
                "smollm2-135m-instruct", commit=commit, forward_passes=1,
                queries=len(data["queries"]),
                spans=len(work[c]), seconds=round(seconds, 1),
                points={"default": point}), path)
    print(f"dev subset: {len(have)} conversations, {sum(len(work[c]) for c in have)} spans "
          f"({', '.join(have)}); result files under {store.root}")
    tables = write_tables(args.results, log=lambda _: None)
    print(tables.get("sink-study") or "(no results)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
