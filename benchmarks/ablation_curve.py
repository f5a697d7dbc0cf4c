"""The ablation scorer's quality against its passes: Tokengeist over ``--scorer ablation`` at
K = 4, 8, 16, 32 passes per conversation (K + 1 forward passes), beside Tokengeist over
average attention, on dev conversations of TauBench airline (benchmarks/parameter_study.py's
split and lineage gold).

    python benchmarks/ablation_curve.py --conversations task-15/trial-0,task-15/trial-1 --k 4,8

Prints, per scorer: macro edge F1 over every span of the chosen conversations, its
difference from average attention with a conversation-clustered paired bootstrap interval
(benchmarks/sink_study.py's), the forward passes per conversation and the seconds. Each K
is a separate run of the model (no pass is shared between K), so a row costs K + 1 passes per
conversation.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))  # tests.support

from tests.support.paths import taubench_airline_path  # noqa: E402
from sink_study import DEFAULT_OUT, clustered  # noqa: E402

from mtcabench.benchmark import load_benchmark  # noqa: E402
from mtcabench.evaluate import (  # noqa: E402
    AblationSettings,
    Attributor,
    TraceSettings,
    make_scorer,
    trace_conversation,
)
from mtcabench.results.metrics import score_span  # noqa: E402
from mtcabench.studies import build_gold, by_conversation, split_of  # noqa: E402


def rows_of(bench, spans, entries) -> list[dict]:
    rows = []
    for s, entry in zip(spans, entries, strict=True):
        sc = score_span(s, bench.conversations[s.conversation_id], entry.edges or [])
        rows.append({"conversation": s.conversation_id, "span": s.id, "f1": sc.edge_f1,
                     "precision": sc.edge_precision, "recall": sc.edge_recall})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--conversations", required=True,
                    help="comma-separated ends of dev conversation ids (task-15/trial-0,...)")
    ap.add_argument("--k", default="4,8,16,32", help="comma-separated passes per conversation")
    args = ap.parse_args()
    gold = args.out / "gold"
    folder = gold / "release" / "study" if (gold / "release" / "study").is_dir() else build_gold(
        gold, taubench_airline_path(), None, None)
    bench = load_benchmark(folder)
    work = by_conversation(s for s in bench.spans if split_of(s.conversation_id) == "dev")
    wanted = args.conversations.split(",")
    chosen = [c for c in sorted(work) if any(c.endswith("/" + w) for w in wanted)]
    spans = [s for c in chosen for s in work[c]]
    from mtcabench.evaluate import load_model

    loaded = load_model()
    rows, cost = {}, {}
    runs = [("avg-attention", TraceSettings())] + [
        (f"ablation K={k}", TraceSettings(scorers={"ablation": AblationSettings(passes=int(k))})) for k in args.k.split(",")]
    for label, settings in runs:
        name = label.split(" ")[0]
        att = Attributor(loaded, make_scorer(name, settings, loaded), seed=settings.seed)
        t0 = time.perf_counter()
        entries = []
        for c in chosen:
            res = trace_conversation(att, bench.conversations[c], work[c], ["tokengeist"],
                                     settings)
            entries += res.entries["tokengeist"]
        cost[label] = (att.forward_passes / len(chosen), time.perf_counter() - t0)
        rows[label] = rows_of(bench, spans, entries)
        print(f"{label}: done, {cost[label][0]:.0f} passes per conversation, "
              f"{cost[label][1]:.0f} s", flush=True)
    print(f"\n{len(chosen)} dev conversations, {len(spans)} spans ({', '.join(chosen)})")
    for metric in ("f1", "precision", "recall"):
        print(f"\n{metric}: macro over spans; difference from avg-attention [95% clustered]")
        for label, (mean, d, lo, hi, _) in clustered(rows, "avg-attention", metric).items():
            print(f"  {mean:6.3f}  {d:+.3f} [{lo:+.3f}, {hi:+.3f}]  {label}"
                  f"  ({cost[label][0]:.0f} passes/conversation, {cost[label][1]:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
