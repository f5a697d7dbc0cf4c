"""Learn AT2 weights for the default model on TauBench conversations; print the fit figures.

This is how the shipped file mtcabench/evaluate/attribution/at2_weights/smollm2-135m-instruct.json was
made (conversations from index 40 of gpt-4o-airline.json on, so that the first 40, used by the
tests and the other performance scripts, stay unseen):

    python benchmarks/evaluate_at2_weights.py --out mtcabench/evaluate/attribution/at2_weights/smollm2-135m-instruct.json

It prints the mean Pearson correlation between AT2's predicted and the actual effect of random
sentence ablations, with uniform weights (= average attention) and with the learned weights,
on the training conversations and on held-out ones.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.support

from tests.support.paths import taubench_airline_path
from tests.support.smoke import answer_span_benchmark

from mtcabench.benchmark import load_benchmark
from mtcabench.evaluate import learn_at2_weights, load_model, render_conversation
from mtcabench.ingest import read_taubench


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--conversations", type=int, default=10)
    ap.add_argument("--skip", type=int, default=40, help="first conversations left out")
    ap.add_argument("--max-tokens", type=int, default=3000, help="only conversations this short")
    ap.add_argument("--masks", type=int, default=32)
    ap.add_argument("--iterations", type=int, default=1000)
    args = ap.parse_args()

    path = taubench_airline_path()
    if path is None:
        sys.exit("gpt-4o-airline.json not found (see tests/conftest.py)")
    loaded = load_model()
    convs = []
    for conv in islice(read_taubench(path), args.skip, None):
        if render_conversation(conv, loaded.tokenizer).full.num_tokens <= args.max_tokens:
            convs.append(conv)
        if len(convs) == args.conversations:
            break
    with tempfile.TemporaryDirectory() as tmp:
        bench = load_benchmark(answer_span_benchmark(convs, tmp))
        start = time.perf_counter()
        result = learn_at2_weights(loaded, convs, bench.spans_by_conversation(), args.out, masks=args.masks,
                                   iterations=args.iterations)
    wall = time.perf_counter() - start
    t = result.training
    print(f"conversations: {len(convs)} (train {t['conversations']}, held out "
          f"{t['heldout_conversations']}), queries {t['queries']}, masks {t['masks']}")
    print(f"forward passes: {len(convs) * (args.masks + 1)}, wall {wall:.0f} s")
    for split in ("train", "heldout"):
        print(f"{split:8s} mean correlation: uniform {t[f'{split}_correlation_uniform']:.3f} "
              f"-> learned {t[f'{split}_correlation_learned']:.3f}")
    print(json.dumps(t))


if __name__ == "__main__":
    main()
