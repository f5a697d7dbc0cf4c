"""The claim proposer's recall against the annotated claims set, per claim kind, with Wilson
intervals; and how often the kind it gives is the annotators' (no model; seconds).

    python benchmarks/claims_proposer.py CONVERSATIONS [ANNOTATIONS_DIR]

CONVERSATIONS: the ingested runs (scripts/build_benchmark.sh OUT writes
OUT/work/conversations.jsonl); ANNOTATIONS_DIR: annotations/claims (its pass-1 files).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from mtcabench.annotate.claims import proposer_recall, read_annotations  # noqa: E402
from mtcabench.io import load_conversations  # noqa: E402
from mtcabench.release import wilson  # noqa: E402


def main(argv: list[str]) -> int:
    if not 1 <= len(argv) <= 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    convs = load_conversations(argv[0])
    folder = Path(argv[1]) if len(argv) > 1 else ROOT / "annotations" / "claims"
    claims = [(c.conversation_id, c.span, c.claim_kind)
              for f in sorted(folder.glob("pass1-*.jsonl")) for c in read_annotations(f, convs)]
    r = proposer_recall(convs, claims)
    lo, hi = wilson(r.found, r.claims)
    print(f"recall {r.found}/{r.claims} = {r.found / r.claims:.3f} [{lo:.3f}, {hi:.3f}] "
          f"(Wilson 95%) over {len({c for c, _, _ in claims})} conversations; "
          f"{r.proposed} targets proposed; the annotated kind on {r.same_kind} of {r.found} "
          "found")
    print("| claim kind | found / claims | recall [95% Wilson] |\n|---|---:|---:|")
    for kind, (found, n) in r.by_kind.items():
        lo, hi = wilson(found, n)
        print(f"| {kind} | {found} / {n} | {found / n:.2f} [{lo:.2f}, {hi:.2f}] |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
