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
sys.path.insert(0, str(ROOT / "tests"))

from conftest import taubench_airline_path  # noqa: E402
from parameter_study import build_gold, by_conversation, split_of  # noqa: E402

from mtcabench.benchmark import load_benchmark  # noqa: E402
from mtcabench.evaluate import TARGET, SearchSettings, tokengeist  # noqa: E402
from mtcabench.evaluate.attribution._sentences import split_sentences  # noqa: E402
from mtcabench.evaluate.methods._tokengeist import Part, query_nodes  # noqa: E402
from mtcabench.model import EdgeKind, Role  # noqa: E402
from mtcabench.results.metrics import score_span  # noqa: E402

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


def capture(loaded, conv, spans, path: Path) -> None:
    """One forward pass: every query's raw per-token attention, saved with the token map."""
    from mtcabench.evaluate.attribution._attention import query_features, sink_positions
    from mtcabench.evaluate.attribution._render import render_conversation

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
                        queries=np.array(queries, dtype=np.int64), sinks=sinks)


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


def shares_from(values: np.ndarray, unit: np.ndarray, units, before: int,
                aggregate: str = "max") -> dict[int, float]:
    """Turn shares from per-token values: units summed, turns by max (or sum), normalised."""
    n_u = len(units)
    sums = np.bincount(np.where(unit >= 0, unit, n_u), weights=values[: len(unit)],
                       minlength=n_u + 1)[:n_u]
    raw: dict[int, float] = {}
    for u, (turn, _, _) in enumerate(units):
        if turn < before:
            v = sums[u]
            raw[turn] = max(raw.get(turn, -np.inf), v) if aggregate == "max" else raw.get(turn, 0) + v
    total = sum(max(v, 0.0) for v in raw.values())
    return {t: (max(v, 0.0) / total if total > 0 else 0.0) for t, v in raw.items()}


def replay_conversation(conv, spans, data, variant, search) -> dict[str, object]:
    """Tokengeist's graph of each captured span under ``variant``."""
    attn = data["token_attn"].astype(np.float64)
    keys = json.loads(str(data["keys"]))
    queries = data["queries"]
    splitter = split_sentences if variant["units"] == "json" else old_split
    unit, units = unit_of_tokens(conv, data["tok_turn"], data["tok_char"], splitter)
    if variant["sink"] == "probe":  # what query_features now does: sinks in no sentence
        sinks = data["sinks"]
        attn[:, sinks[sinks < attn.shape[1]]] = 0.0
    table: dict[object, dict[int, float]] = {}
    for (kind, key), (turn, _, _), row in zip(keys, queries, attn):
        sh = shares_from(row, unit, units, int(turn), variant.get("aggregate", "max"))
        if kind == "span":
            table[("span", key)] = sh
        elif kind == "turn":
            table[int(key)] = sh
        else:
            table[Part(*key)] = sh
    graphs = {}
    for s in spans:
        if ("span", s.id) not in table:
            continue

        def fn(k, s=s):
            if k == TARGET:
                return table[("span", s.id)]
            if isinstance(k, Part) and variant["calls"] == "whole":
                return table.get(k.turn, {})
            return table.get(k, {})

        graphs[s.id] = tokengeist(conv, s.span.turn, fn, search)
    return graphs


def span_rows(bench, spans, graphs) -> list[dict]:
    rows = []
    for s in spans:
        conv = bench.conversations[s.conversation_id]
        g = graphs.get(s.id)
        pred = [] if g is None else [e.pair for e in g.edges]
        gold = {e.pair for e in s.graph.edges}
        sc = score_span(s.id, pred, list(gold), s.sources, conv, s.dependency_type)
        system = {t.index for t in conv.turns if t.role is Role.SYSTEM}
        content = [] if g is None else [e.pair for e in g.edges if e.kind is EdgeKind.CONTENT]
        rows.append({"conversation": s.conversation_id, "span": s.id, "f1": sc.edge_f1,
                     "precision": sc.edge_precision, "recall": sc.edge_recall,
                     "system_wrong": sum(1 for p in content if p[1] in system and p not in gold),
                     "edges": len(content)})
    return rows


def clustered(rows_by_variant: dict[str, list[dict]], base: str, metric: str,
              resamples: int = 1000, seed: int = 0) -> dict[str, tuple]:
    """Per variant: its mean of ``metric`` over spans, and the 95% interval of its difference
    from ``base``, resampling conversations (paired: the same draws for every variant)."""
    convs = sorted({r["conversation"] for r in rows_by_variant[base]})
    index = {c: i for i, c in enumerate(convs)}
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(convs), size=(resamples, len(convs)))
    counts = np.stack([np.bincount(d, minlength=len(convs)) for d in draws])  # [R, C]
    out = {}
    base_rows = rows_by_variant[base]
    cb = np.array([index[r["conversation"]] for r in base_rows])
    vb = np.array([r[metric] for r in base_rows], dtype=np.float64)
    for name, rows in rows_by_variant.items():
        v = np.array([r[metric] for r in rows], dtype=np.float64)
        w = counts[:, cb]  # [R, spans]: how often each span's conversation was drawn
        diff = (w @ (v - vb)) / np.maximum(w.sum(axis=1), 1)
        lo, hi = np.percentile(diff, [2.5, 97.5])
        out[name] = (float(v.mean()), float(v.mean() - vb.mean()), float(lo), float(hi))
    return out


VARIANTS = {
    "shipped (sentences, whole call turns, no sink correction)":
        {"units": "sentences", "calls": "whole", "sink": "none"},
    "calls by arguments": {"units": "sentences", "calls": "parts", "sink": "none"},
    "calls by arguments + JSON units": {"units": "json", "calls": "parts", "sink": "none"},
    "calls by arguments + sinks out": {"units": "sentences", "calls": "parts", "sink": "probe"},
    "calls by arguments + JSON units + sinks out (now)":
        {"units": "json", "calls": "parts", "sink": "probe"},
    "sinks out only": {"units": "sentences", "calls": "whole", "sink": "probe"},
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--conversations", type=int, default=6,
                    help="dev conversations captured (the first N by id)")
    ap.add_argument("--replay-only", action="store_true")
    args = ap.parse_args()
    gold = args.out / "gold"
    folder = gold / "release" if (gold / "release").is_dir() else build_gold(
        gold, taubench_airline_path(), None, None)
    bench = load_benchmark(folder)
    work = by_conversation(s for s in bench.spans if split_of(s.conversation_id) == "dev")
    chosen = sorted(work)[: args.conversations]
    caps = args.out / "captures"
    caps.mkdir(parents=True, exist_ok=True)
    todo = [c for c in chosen if not (caps / f"{c.replace('/', '_')}.npz").exists()]
    if todo and not args.replay_only:
        from mtcabench.evaluate import load_model

        loaded = load_model()
        for cid in todo:
            t0 = time.perf_counter()
            capture(loaded, bench.conversations[cid], work[cid],
                    caps / f"{cid.replace('/', '_')}.npz")
            print(f"captured {cid}: {len(work[cid])} spans, {time.perf_counter() - t0:.0f} s",
                  flush=True)
    have = [c for c in chosen if (caps / f"{c.replace('/', '_')}.npz").exists()]
    spans = [s for c in have for s in work[c]]
    variants = dict(VARIANTS)
    for name in list(variants):
        variants[name + " [sum]"] = {**variants[name], "aggregate": "sum"}
    search = SearchSettings()
    rows = {}
    for name, v in variants.items():
        graphs = {}
        for c in have:
            data = np.load(caps / f"{c.replace('/', '_')}.npz")
            graphs.update(replay_conversation(bench.conversations[c], work[c], data, v, search))
        rows[name] = span_rows(bench, spans, graphs)
    base = next(iter(variants))
    print(f"dev subset: {len(have)} conversations, {len(spans)} spans "
          f"({', '.join(have)})")
    for metric in ("f1", "precision", "recall", "system_wrong"):
        print(f"\n{metric}: mean per span; difference from '{base}' [95% clustered interval]")
        for name, (mean, d, lo, hi) in clustered(rows, base, metric).items():
            print(f"  {mean:7.3f}  {d:+.3f} [{lo:+.3f}, {hi:+.3f}]  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
