"""Annotation throughput with 8 requests in flight versus 1, measured side by side in one run.

Two servers, each measured at concurrency 1 then 8 on the same requests (a different sampling
seed per setting, so neither setting answers from the other's cache):

* the embedded llama.cpp server with SmolLM2 (the real local server). llama-cpp-python's
  server evaluates one request at a time, so the ratio there shows what the client gains from
  overlapping HTTP and parsing with generation, not parallel decoding;
* a fake OpenAI-compatible server with a fixed latency per request (tests/annotate), standing
  in for a hosted API that serves requests in parallel: the ratio there is the client's
  concurrency at work.

    python benchmarks/annotate_throughput.py [--conversations 3] [--latency 0.25] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.support

from tests.support.annotate_fakes import FakeOpenAI

from mtcabench.annotate import annotate_propose
from mtcabench.ingest import read_taubench
from mtcabench.io import write_records
from mtcabench.services.llm_server import LocalLLMServer

SAMPLE = ROOT / "raw" / "sample" / "sample-airline.json"


def measure(conversations: Path, out: Path, concurrency: int, seed: int, **endpoint) -> dict:
    t0 = time.perf_counter()
    s = annotate_propose(conversations, out / f"c{concurrency}-s{seed}.jsonl",
                         concurrency=concurrency, seed=seed, progress=False,
                         cache=out / f"cache-c{concurrency}-s{seed}.sqlite", **endpoint)
    return {"requests": s.accounting.requests, "seconds": time.perf_counter() - t0,
            "tokens": s.accounting.spent_tokens}


def side_by_side(name: str, conversations: Path, out: Path, rounds: int, **endpoint) -> dict:
    """Alternate 1 and 8 in flight (``rounds`` times each, a fresh seed and cache each time),
    so that a warm-up or a busy moment of the machine does not favour one setting."""
    totals = {1: {"requests": 0, "seconds": 0.0, "tokens": 0},
              8: {"requests": 0, "seconds": 0.0, "tokens": 0}}
    seed = 100
    for r in range(rounds):
        for c in ((1, 8) if r % 2 == 0 else (8, 1)):
            seed += 1
            for k, v in measure(conversations, out, c, seed, **endpoint).items():
                totals[c][k] += v
    rows = {c: {"requests": t["requests"], "seconds": round(t["seconds"], 2),
                "requests_per_s": round(t["requests"] / t["seconds"], 3),
                "tokens_per_s": round(t["tokens"] / t["seconds"], 1)} for c, t in totals.items()}
    ratio = round(rows[8]["requests_per_s"] / rows[1]["requests_per_s"], 2)
    row = {"server": name, "in_flight_1": rows[1], "in_flight_8": rows[8],
           "ratio_8_vs_1": ratio}
    print(json.dumps(row))
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conversations", type=int, default=3, help="sample conversations used")
    ap.add_argument("--latency", type=float, default=0.25, help="fake server seconds/request")
    ap.add_argument("--fake-copies", type=int, default=20,
                    help="copies of the sample for the fake server (more requests)")
    ap.add_argument("--rounds", type=int, default=2, help="alternations of 1 and 8")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        convs = list(read_taubench(SAMPLE))[: args.conversations]
        small = tmp / "sample.jsonl"
        write_records(small, convs)
        # Copies with a tag in their first turn, so that no two requests are the same.
        many = tmp / "many.jsonl"
        copies = []
        for i in range(args.fake_copies):
            for c in convs:
                turns = [t.model_copy(deep=True) for t in c.turns]
                turns[0].content = f"[copy {i}] {turns[0].content}"
                copies.append(c.model_copy(update={"id": f"{c.id}/copy-{i}", "turns": turns}))
        write_records(many, copies)
        with LocalLLMServer() as server:
            side_by_side("llama.cpp SmolLM2 (embedded)", small, tmp, args.rounds,
                         base_url=server.base_url, model=server.model,
                         response_format="json_object", targets_per_request=1,
                         max_turn_chars=400, max_prompt_chars=2000, propose_max_tokens=64)
        with FakeOpenAI(latency_s=args.latency) as fake:
            side_by_side(f"fake API, {args.latency}s per request", many, tmp, args.rounds,
                         base_url=fake.base_url, model="fake")


if __name__ == "__main__":
    main()
