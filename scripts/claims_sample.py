"""Draw the conversations of the annotated claims set and write their annotation sheets.

    python scripts/claims_sample.py CONVERSATIONS_DIR OUT_DIR [--round 1] [--seed 0]

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

#: Conversations drawn per conversations file (its stem), per round of annotation. A later
#: round draws among the conversations no earlier round drew (--exclude).
PLAN_1 = {
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
#: Round 2: the medical domains (tau2's later layouts) and more of every agent.
PLAN_2 = {
    "t2-medical-claude-opus-4-6-adaptive": 4, "t2-medical_triage-claude-opus-4-6-cascata": 4,
    "tb-airline": 3, "tb-retail-grok": 2, "tb-retail-mini": 2,
    "t2-airline-claude-opus-4-6-cascata": 2, "t2-airline-claude-opus-4-6-adaptive": 2,
    "t2-airline-gpt-4.1": 2, "t2-airline-ft-gpt-4.1": 1, "t2-airline-qwen2.5-7b": 3,
    "t2-airline-gpt-4o-2024-11-20": 2, "t2-airline-gpt-oss-120b-langchain": 2,
    "t2-airline-claude-sonnet-4-6-ironforge": 1, "t2-airline-gpt-5.4-ironforge": 1,
    "t2-retail-gpt-4.1-mini-toolorchestra": 2, "t2-retail-ft-gpt-4.1": 1, "t2-retail-gpt-4.1": 1,
    "t2-telecom-gpt-4.1": 1, "t2-telecom-gpt-4o": 1, "t2-telecom-ft-gpt-4.1": 1,
    "t2-telecom-solo-gpt-4.1": 1, "t2-telecom-solo-ft-gpt-4.1": 1,
}
PLANS = {1: PLAN_1, 2: PLAN_2}
MAX_CHARS = 40_000
BATCHES = 5


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("conversations", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--round", type=int, default=1, choices=sorted(PLANS))
    ap.add_argument("--exclude", type=Path, help="ids drawn before (one a line)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    # Round 1 was drawn with the plain seed; later rounds with the round beside it.
    rng = random.Random(args.seed if args.round == 1 else f"{args.seed}:{args.round}")
    done = set(args.exclude.read_text().split()) if args.exclude else set()
    drawn = []
    for stem, n in PLANS[args.round].items():
        convs = list(load_conversations(args.conversations / f"{stem}.jsonl").values())
        # A solo run (no user) answers once or twice, at its end.
        least = 1 if "-solo-" in stem else 3
        ok = [c for c in convs if c.id not in done
              and sum(len(t.text) for t in c.turns[1:]) <= MAX_CHARS
              and sum(t.role is Role.ASSISTANT and bool(t.content.strip())
                      for t in c.turns) >= least]
        failed = [c for c in ok if (c.metadata or {}).get("reward", 0) < 1]
        passed = [c for c in ok if (c.metadata or {}).get("reward", 0) >= 1]
        rng.shuffle(failed)
        rng.shuffle(passed)
        for i in range(n):
            pool = (failed or passed) if i % 2 == 0 else (passed or failed)
            drawn.append(pool.pop())
    out = args.out
    (out / "policies").mkdir(parents=True, exist_ok=True)
    write_records(out / f"sample-{args.round}.jsonl", drawn)
    for i, conv in enumerate(drawn):
        policy = conv.turns[0].text
        digest = hashlib.sha256(policy.encode()).hexdigest()[:8]
        pfile = out / "policies" / f"{conv.domain}-{digest}.md"
        if not pfile.exists():
            pfile.write_text(policy)
        note = (f"(the system prompt: {len(policy)} characters, in {pfile}; read it once per "
                "policy file)")
        batch = out / "sheets" / f"batch-{(args.round - 1) * BATCHES + i % BATCHES + 1}"
        batch.mkdir(parents=True, exist_ok=True)
        (batch / f"{i // BATCHES + 1:02d}.md").write_text(annotation_sheet(conv, note))
        print(conv.id)


if __name__ == "__main__":
    main()
