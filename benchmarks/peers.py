"""The methods researchers would pick instead, side by side with Tokengeist, in one run.

Run in the peers' virtual environment (their packages live there):

    scripts/setup_peers.sh
    nice $(scripts/setup_peers.sh --python) benchmarks/peers.py                   # the table
    nice $(scripts/setup_peers.sh --python) benchmarks/peers.py --write-docs      # + docs/evaluate.md
    # a GPU and a larger model (a transformers folder of a Llama-style model, and its AT2 weights):
    $(scripts/setup_peers.sh --python) benchmarks/peers.py --device cuda --model MODEL_DIR \
        --at2-weights MODEL-at2.json --conversations 20 --spans-per-conversation 0 --passes 32

**Data.** The real TauBench airline runs (gpt-4o-airline.json) with the lineage gold (the
default rules, lineage-v2, accepted automatically), restricted to what two CPU cores afford in
about an hour for methods that cost a pass set per span: the ``--conversations`` (12)
shortest conversations of the parameter study's *test* split (tasks with id mod 5 = 1, trials
0 and 1: never used to choose a setting; shortest, because a per-span method's cost grows with
length) and, in each, ``--spans-per-conversation`` (3) gold spans spread evenly over its spans
in benchmark order (first, middle, last; 0 = all): 27 spans. The same spans for every method; the release
built from exactly them is under ``--out``/gold, so ``release build --scores`` takes the score
reports written under ``--out``/score (the run checks that it does).

**Methods.** Tokengeist and flat over every base scorer of ours (average attention, AT2,
AttnTrace with ``--attntrace-subsamples``, ablation with ``--passes``), and the peers
through their own packages: ``peer-contextcite`` (context-cite, ``--passes`` ablations per
attributed text) flat, ``peer-at2`` (at2, the same weights) flat and under Tokengeist, one
package call per span and per recursion step (``naive``, as a researcher would run it), and
``peer-flashtrace`` flat. Tokengeist
over context-cite fits too (``--scorer peer-contextcite``) but costs ``--passes`` per recursion
step: ``--with-contextcite-tokengeist`` adds it. The model-free floors (recency, first-user)
close the table.

**Figures.** Edge F1 and source recall (macro, ``mtcabench score``), original-source recall
(per span: the share of the gold's *original* sources, those at the end of its longest chains,
that the predicted graph reaches as sources: the ones flat attribution is said to miss),
forward passes and seconds per span, peak resident memory above the loaded model, each with its
ratio to Tokengeist over average attention.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
from collections import deque
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from _memory import PeakRss, rss_mib
from tests.support.paths import taubench_airline_path

from mtcabench.benchmark import load_benchmark
from mtcabench.evaluate import (
    AblationSettings,
    AT2Settings,
    AttnTraceSettings,
    TraceSettings,
    load_model,
    trace_benchmark,
)
from mtcabench.io import write_records
from mtcabench.results.metrics import edge_sources
from mtcabench.studies import split_of, write_docs

#: (label, methods, scorer, naive): every run of the table, in its order.
RUNS = [
    ("ours", ["tokengeist", "flat"], "avg-attention", False),
    ("ours", ["tokengeist", "flat"], "at2", False),
    ("ours", ["tokengeist", "flat"], "attntrace", False),
    ("ours", ["tokengeist", "flat"], "ablation", False),
    ("package", ["flat"], "peer-contextcite", False),
    ("package", ["tokengeist", "flat"], "peer-at2", True),
    ("package", ["flat"], "peer-flashtrace", False),
    ("floor", ["recency", "first-user"], None, False),
]
BEGIN, END = "<!-- peers:begin -->", "<!-- peers:end -->"


def build_gold(raw: Path, out: Path, n_conv: int, per_conv: int) -> Path:
    """The release of the chosen spans (see the module docstring)."""
    from mtcabench.annotate.lineage import propose_lineage
    from mtcabench.ingest import read_taubench, write_conversations
    from mtcabench.release import build_release
    from mtcabench.review import auto_accept

    convs = [c for c in read_taubench(raw) if split_of(c.id) == "test"]
    convs.sort(key=lambda c: (sum(len(t.text) for t in c.turns), c.id))
    chosen, decisions = [], []
    for conv in convs:
        cands = list(propose_lineage([conv]))
        accepted = [d for d in auto_accept(cands, {conv.id: conv}).decisions
                    if d.verdict.value != "reject"]
        if not accepted:
            continue
        if per_conv and len(accepted) > per_conv:
            idx = sorted({round(i * (len(accepted) - 1) / (per_conv - 1)) for i in range(per_conv)}
                         if per_conv > 1 else {len(accepted) - 1})
            accepted = [accepted[i] for i in idx]
        chosen.append(conv)
        decisions += accepted
        if len(chosen) == n_conv:
            break
    out.mkdir(parents=True, exist_ok=True)
    write_conversations(out / "conversations.jsonl", chosen)
    write_records(out / "reviewed.jsonl", decisions)
    return build_release("peers", out / "reviewed.jsonl", out / "conversations.jsonl",
                         out=out / "release", force=True).folder


def original_sources(span, conv) -> set[int]:
    """The gold sources at the end of the longest chains from the target (edges to parents)."""
    parents: dict[int, list[int]] = {}
    for e in span.graph.edges:
        parents.setdefault(e.child, []).append(e.parent)
    depth = {span.span.turn: 0}
    queue = deque([span.span.turn])
    while queue:
        node = queue.popleft()
        for p in parents.get(node, []):
            if p not in depth:
                depth[p] = depth[node] + 1
                queue.append(p)
    srcs = [s for s in span.sources if s in depth]
    if not srcs:
        return set(span.sources)
    deepest = max(depth[s] for s in srcs)
    return {s for s in srcs if depth[s] == deepest}


def original_recall(bench, path: Path) -> float:
    entries = {e["span_id"]: e for e in map(json.loads, path.read_text().splitlines()[1:])}
    total = 0.0
    for s in bench.spans:
        conv = bench.conversations[s.conversation_id]
        gold = original_sources(s, conv)
        pairs = [(e["child"], e["parent"]) for e in entries[s.id].get("edges") or []]
        got = edge_sources(set(pairs), conv) if pairs else set()
        total += len(gold & got) / len(gold) if gold else 1.0
    return total / len(bench.spans)


def run(args) -> dict:
    raw = Path(args.raw) if args.raw else taubench_airline_path()
    if raw is None:
        raise SystemExit("gpt-4o-airline.json not found: pass --raw or set MTCABENCH_TAUBENCH_AIRLINE")
    out = Path(args.out)
    gold = build_gold(raw, out / "gold", args.conversations, args.spans_per_conversation)
    bench = load_benchmark(gold)
    n_spans = len(bench.spans)
    print(f"gold: {len(bench.conversations)} conversations, {n_spans} spans -> {gold}", flush=True)
    loaded = None if args.rescore else load_model(args.model, device=args.device)
    base_rss = rss_mib()
    settings = TraceSettings(scorers={
        "attntrace": AttnTraceSettings(subsamples=args.attntrace_subsamples),
        "ablation": AblationSettings(passes=args.passes), "at2": AT2Settings(weights=args.at2_weights)})
    runs = list(RUNS)
    if args.with_contextcite_tokengeist:
        runs.insert(5, ("package", ["tokengeist"], "peer-contextcite", True))
    rows = []
    (out / "runs").mkdir(parents=True, exist_ok=True)
    done = out / "runs" / "rows.json"  # --rescore reads it back
    if args.rescore:
        rows = [{**r, "path": Path(r["path"])} for r in json.loads(done.read_text())]
        runs = []
    for kind, methods, scorer, naive in runs:
        tag = scorer or "model-free"
        paths = {m: out / "runs" / f"{m}-{tag}{'-naive' if naive else ''}.jsonl" for m in methods}
        for p in paths.values():
            p.unlink(missing_ok=True)
            (p.parent / f".{p.name}.partial").unlink(missing_ok=True)
        t0 = time.perf_counter()
        with PeakRss() as mem:
            report = trace_benchmark(gold, paths, model=loaded, scorer=scorer or "avg-attention",
                                     settings=settings, naive=naive, progress=False)
        wall = time.perf_counter() - t0
        print(f"{tag} {methods}: {report.forward_passes} passes, {wall:.1f} s", flush=True)
        for m, p in paths.items():
            rows.append({"kind": kind, "method": m, "scorer": scorer, "naive": naive, "path": p,
                         "passes": report.forward_passes / n_spans,
                         "seconds": wall / n_spans, "run_methods": len(methods),
                         "peak_mib": max(mem.peak - base_rss, 0.0)})
        done.write_text(json.dumps([{**r, "path": str(r["path"])} for r in rows]))
    score(rows, gold, bench, out)
    return {"rows": rows, "gold": gold, "bench": bench, "raw": raw}


def score(rows: list[dict], gold: Path, bench, out: Path) -> None:
    """``mtcabench score`` on every submission; the card's check that it takes the reports."""
    from rich.console import Console

    from mtcabench.release import build_release
    from mtcabench.scoring import run_scoring

    paths = [r["path"] for r in rows]
    result = run_scoring(paths, gold, out=out / "score", plot=False,
                         console=Console(file=io.StringIO()))
    for r, rep in zip(rows, result.reports):
        overall = next(x for x in rep.rows if x.breakdown == "overall")
        r["edge_f1"] = overall.metrics["edge_f1"].macro.value
        r["source_recall"] = overall.metrics["source_recall"].macro.value
        r["original_recall"] = original_recall(bench, r["path"])
    reports = sorted((out / "score").glob("*.score.json"))
    built = build_release("peers-card", out / "gold" / "reviewed.jsonl",
                          out / "gold" / "conversations.jsonl", out=out / "card", force=True,
                          scores=reports)
    card = (built.folder / "README.md").read_text(encoding="utf-8")
    missing = [r["scorer"] for r in rows if r["scorer"] and f"`{r['scorer']}`" not in card]
    print(f"release build --scores took {len(reports)} reports; card at {built.folder}"
          + (f"; rows missing for {sorted(set(missing))}" if missing else ""), flush=True)


def table(ctx: dict, args) -> str:
    rows = ctx["rows"]
    ref = next(r for r in rows if r["method"] == "tokengeist" and r["scorer"] == "avg-attention")

    def ratio(v, base):
        return f"{v / base:.2f}x" if base else ""

    lines = [
        f"{len(ctx['bench'].conversations)} real TauBench airline conversations (the shortest of "
        f"the parameter study's test split), {len(ctx['bench'].spans)} lineage-v2 gold spans; "
        f"SmolLM2-135M-Instruct on {args.device}; ablation and context-cite with "
        f"{args.passes} ablations, AttnTrace with {args.attntrace_subsamples} subsamples. "
        "Passes, seconds and memory are per run (every method of a run shares them) and per span; "
        "ratios against Tokengeist over average attention.",
        "",
        "| method | base scorer | via | edge F1 | source R | original-source R | passes/span | "
        "s/span | peak MiB | edge F1 ratio | source R ratio | passes ratio | time ratio |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        via = {"ours": "mtcabench", "package": "its package" + (", per step" if r["naive"] else ""),
               "floor": "model-free"}[r["kind"]]
        model_free = r["kind"] == "floor"
        lines.append(
            f"| {r['method']} | {r['scorer'] or '-'} | {via} | {r['edge_f1']:.3f} | "
            f"{r['source_recall']:.3f} | {r['original_recall']:.3f} | "
            + ("0 | - | - | " if model_free else
               f"{r['passes']:.2f} | {r['seconds']:.1f} | {r['peak_mib']:.0f} | ")
            + f"{ratio(r['edge_f1'], ref['edge_f1'])} | {ratio(r['source_recall'], ref['source_recall'])} | "
            + ("- | - |" if model_free else
               f"{ratio(r['passes'], ref['passes'])} | {ratio(r['seconds'], ref['seconds'])} |"))
    cmd = " ".join(["benchmarks/peers.py", *sys.argv[1:]])
    lines += ["", f"Command: `nice $(scripts/setup_peers.sh --python) {cmd}`."]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--raw", help="gpt-4o-airline.json (default: found as the tests find it)")
    ap.add_argument("--out", default="runs/peers")
    ap.add_argument("--conversations", type=int, default=12)
    ap.add_argument("--spans-per-conversation", type=int, default=3)
    ap.add_argument("--passes", type=int, default=8, help="ablations of ablation and context-cite")
    ap.add_argument("--attntrace-subsamples", type=int, default=2)
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--at2-weights", default=None)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--with-contextcite-tokengeist", action="store_true")
    ap.add_argument("--rescore", action="store_true",
                    help="score the submissions of an earlier run again (no trace)")
    ap.add_argument("--write-docs", action="store_true",
                    help="write the table into docs/evaluate.md (its one place)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    ctx = run(args)
    text = table(ctx, args) + f" The run took {(time.perf_counter() - t0) / 60:.1f} min."
    print(text)
    (Path(args.out) / "table.md").write_text(text + "\n", encoding="utf-8")
    if args.write_docs:
        for doc in (ROOT / "docs" / "evaluate.md",):
            write_docs(doc, text, BEGIN, END)


if __name__ == "__main__":
    main()
