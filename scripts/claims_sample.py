"""Draw the conversations of the annotated claims set and write their annotation sheets.

    python scripts/claims_sample.py CONVERSATIONS_DIR OUT_DIR [--seed 0]

CONVERSATIONS_DIR holds the ingested runs (one conversations file per upstream file, named
tb-* for TauBench, t2-* for tau2-bench, as `mtcabench ingest` wrote them). The draw is seeded
and stratified: per file the count of PLAN, failed runs (reward < 1) and passed ones
alternating, among conversations a person can read in one sitting (at most MAX_CHARS of text
besides the policy, at least 3 answers with text). Writes OUT_DIR/sample.jsonl (the drawn
conversations), OUT_DIR/policies/ (each distinct policy once), OUT_DIR/sheets/<batch>/ (one
sheet per conversation, dealt round robin to BATCHES batches) and prints the ids, which
annotations/claims/sample.txt keeps.
"""

from __future__ import annotations

import argparse
import hashlib
import random
from pathlib import Path

from mtcabench.annotate.claims import annotation_sheet
from mtcabench.io import load_conversations, write_records
from mtcabench.model import Role

#: Conversations drawn per conversations file (its stem).
PLAN = {
    "tb-airline": 7, "tb-retail-grok": 4, "tb-retail-mini": 4,
    "t2-airline-claude-opus-4-6-distyl": 2, "t2-airline-claude-sonnet-4-5": 2,
    "t2-airline-deepseek-chat-ironforge": 2, "t2-airline-gpt-5.4-ironshell": 2,
    "t2-airline-o3-ironforge": 1, "t2-airline-qwen2.5-7b": 4,
    "t2-airline-gpt-4o-2024-11-20": 2, "t2-airline-gpt-oss-120b-langchain": 2,
    "t2-airline-grok-3-ironforge": 1,
    "t2-retail-ft-gpt-4.1": 2, "t2-retail-gpt-4.1": 3, "t2-retail-gpt-4.1-mini-toolorchestra": 2,
    "t2-telecom-gpt-4.1": 4, "t2-telecom-gpt-4o": 2, "t2-telecom-ft-gpt-4.1": 3,
    "t2-airline-whissle": 1,
}
MAX_CHARS = 40_000
BATCHES = 5


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("conversations", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    drawn = []
    for stem, n in PLAN.items():
        convs = list(load_conversations(args.conversations / f"{stem}.jsonl").values())
        ok = [c for c in convs
              if sum(len(t.text) for t in c.turns[1:]) <= MAX_CHARS
              and sum(t.role is Role.ASSISTANT and bool(t.content.strip()) for t in c.turns) >= 3]
        failed = [c for c in ok if (c.metadata or {}).get("reward", 0) < 1]
        passed = [c for c in ok if (c.metadata or {}).get("reward", 0) >= 1]
        rng.shuffle(failed)
        rng.shuffle(passed)
        for i in range(n):
            pool = (failed or passed) if i % 2 == 0 else (passed or failed)
            drawn.append(pool.pop())
    out = args.out
    (out / "policies").mkdir(parents=True, exist_ok=True)
    write_records(out / "sample.jsonl", drawn)
    for i, conv in enumerate(drawn):
        policy = conv.turns[0].text
        digest = hashlib.sha256(policy.encode()).hexdigest()[:8]
        pfile = out / "policies" / f"{conv.domain}-{digest}.md"
        if not pfile.exists():
            pfile.write_text(policy)
        note = (f"(the system prompt: {len(policy)} characters, in {pfile}; read it once per "
                "policy file)")
        batch = out / "sheets" / f"batch-{i % BATCHES + 1}"
        batch.mkdir(parents=True, exist_ok=True)
        (batch / f"{i // BATCHES + 1:02d}.md").write_text(annotation_sheet(conv, note))
        print(conv.id)


if __name__ == "__main__":
    main()
