"""A rerun over the 200 TauBench conversations with a warm cache: requests sent and seconds.

The first (cold) run fills the response cache through an OpenAI-compatible endpoint; the
second, identical run must answer every request from the cache. Requests are counted at the
HTTP layer (the server's own log), not from our counters. The cold run uses a fast fake
endpoint (tests/annotate) that gives well-formed answers quoting the conversations, since
the real SmolLM2 server needs hours for 200 conversations on 2 cores; the warm run does not
depend on who answered (see also the 10-conversation rerun on the real server in
docs/annotate.md).

    python benchmarks/annotate_cache_rerun.py [--conversations 200]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.support

from tests.support.annotate_fakes import FakeOpenAI, phase_of
from tests.support.paths import taubench_airline_path

from mtcabench.annotate import annotate_run
from mtcabench.ingest import read_taubench
from mtcabench.io import write_records

_TURN = re.compile(r"^\[(\d+) (\w+)[^\]]*\] (.*)$")


def quoting_responder(body: dict) -> str:
    """Quotes the first word of each target turn, with the previous turn as its source."""
    text = body["messages"][1]["content"]
    turns = {int(m.group(1)): m.group(3) for m in map(_TURN.match, text.splitlines()) if m}
    if phase_of(body) == "verify":
        turn = int(re.search(r"TARGET SPAN in turn (\d+)", text).group(1))
        prev = turns.get(turn - 1, "")
        return json.dumps({"dependency_type": "direct", "primed_by": [], "confidence": 0.5,
                           "rationale": "r", "edges": [{"child": turn, "parent": turn - 1,
                                                        "evidence": prev[:12]}]})
    targets = [int(x) for x in re.search(r"TARGET TURNS: ([\d, ]+)", text).group(1).split(",")]
    spans = [{"turn": t, "quote": (turns.get(t, "x").split() or ["x"])[0],
              "dependency_type": "direct", "rationale": "r",
              "edges": [{"child": t, "parent": t - 1, "evidence": turns.get(t - 1, "")[:12]}]}
             for t in targets]
    return json.dumps({"spans": spans})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conversations", type=int, default=200)
    args = ap.parse_args()
    source = taubench_airline_path()
    if source is None:
        sys.exit("gpt-4o-airline.json not found: run `mtcabench raw fetch` first")
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI(quoting_responder) as fake:
        tmp = Path(tmp)
        convs = tmp / "conversations.jsonl"
        write_records(convs, list(read_taubench(source))[: args.conversations])
        opts = dict(base_url=fake.base_url, model="fake", concurrency=8, progress=False)
        rows = []
        for label in ("cold", "warm"):
            before = len(fake.chat_requests())
            t0 = time.perf_counter()
            s = annotate_run(convs, tmp / "out", **opts)
            rows.append({"run": label, "seconds": round(time.perf_counter() - t0, 2),
                         "http_requests": len(fake.chat_requests()) - before,
                         "cache_hits": s.accounting.cache_hits,
                         "candidates_written": s.candidates.written,
                         "candidates_already_there": s.candidates.already,
                         "proposals": s.proposals.ok + s.proposals.rejected_records})
            print(json.dumps(rows[-1]))
        assert rows[1]["http_requests"] == 0, "the warm rerun sent requests"


if __name__ == "__main__":
    main()
