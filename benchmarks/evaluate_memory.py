"""Peak memory and time of attention-row recomputation against conversation length.

For each length T, a fresh process loads the default model and runs one forward pass over the
first T tokens of a long TauBench conversation, recomputing the attention rows of the last
``--rows`` tokens (512 by default: the order of a conversation's spans plus assistant turns)
with per-head features (AT2's, the largest). It reports the peak resident memory above the loaded model, and beside it what the
model's own ``output_attentions`` would hold (layers x heads x T x T float32), measured for
the lengths where that still fits.

    python benchmarks/evaluate_memory.py --lengths 1024,2048,4096,8192 --eager-lengths 512,1024,2048
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from _memory import PeakRss

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.support


def one(length: int, eager: bool, n_rows: int, plain: bool = False) -> dict:
    import numpy as np
    import torch
    from tests.support.paths import taubench_airline_path

    from mtcabench.evaluate import load_model, render_conversation
    from mtcabench.evaluate import forward, query_features
    from mtcabench.ingest import read_taubench

    loaded = load_model(attn_implementation="eager" if eager else "sdpa")
    convs = list(read_taubench(taubench_airline_path()))
    rendered = None
    for conv in convs:  # the first conversation long enough
        r = render_conversation(conv, loaded.tokenizer)
        if r.full.num_tokens >= length:
            rendered = r
            break
    if rendered is None:
        raise SystemExit(f"no conversation of {length} tokens")
    lay = rendered.full
    ids = lay.input_ids[:length]
    rows = np.arange(max(0, length - n_rows), length)
    with PeakRss() as mem:
        start = time.perf_counter()
        if plain:
            forward(loaded.model, ids)
            held = None
        elif eager:
            with torch.inference_mode():
                out = loaded.model(torch.tensor([ids]), output_attentions=True, logits_to_keep=1)
            held = sum(a.numel() * a.element_size() for a in out.attentions) / 2**20
        else:
            query_features(loaded.model, ids, [rows], lay.token_sentence,
                           len(rendered.sentences), with_heads=True)
            held = None
        seconds = time.perf_counter() - start
    return {"tokens": length, "rows": len(rows), "seconds": seconds,
            "peak_above_model_mib": mem.peak - mem.base, "attentions_mib": held}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lengths", default="1024,2048,4096,8192")
    ap.add_argument("--eager-lengths", default="512,1024")
    ap.add_argument("--rows", type=int, default=512)
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--eager", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--plain", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.eager, args.rows, args.plain)))
        return
    L, H = 30, 9
    print(f"{'T':>6s} {'method':>26s} {'rows':>6s} {'seconds':>8s} {'peak MiB':>9s} "
          f"{'LxHxTxT MiB':>12s}")
    lengths = [int(t) for t in args.lengths.split(",") if t]
    jobs = [(t, "plain") for t in lengths] + [(t, "rows") for t in lengths]
    jobs += [(int(t), "eager") for t in args.eager_lengths.split(",") if t]
    for t, mode in jobs:
        cmd = [sys.executable, __file__, "--one", str(t), "--rows", str(args.rows)]
        cmd += {"eager": ["--eager"], "plain": ["--plain"], "rows": []}[mode]
        res = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True)
                         .stdout.strip().splitlines()[-1])
        full = L * H * t * t * 4 / 2**20
        name = {"eager": "eager output_attentions", "plain": "forward pass only (sdpa)",
                "rows": "forward + recomputed rows"}[mode]
        rows = {"eager": "all", "plain": "-", "rows": str(res["rows"])}[mode]
        print(f"{t:6d} {name:>26s} {rows:>6s} {res['seconds']:8.1f} "
              f"{res['peak_above_model_mib']:9.0f} {full:12.0f}")


if __name__ == "__main__":
    main()
