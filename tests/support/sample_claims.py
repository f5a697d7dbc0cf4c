"""Claims annotated on the bundled sample's three conversations (raw/sample), both passes:
what the claims tests build a release, a score and a view from without any upstream file."""

from __future__ import annotations

import json
from pathlib import Path

S1 = "taubench/airline/sample/task-s1/trial-0"
S2 = "taubench/airline/sample/task-s2/trial-0"
S3 = "taubench/airline/sample/task-s3/trial-0"

#: Pass 1 (annotator p1): (conversation, turn, text, edges, type, kind).
PASS_1 = [
    (S1, 4, "I see two reservations on your profile", [[4, 3], [3, 2], [2, 1]], "direct",
     "count"),
    (S1, 8, "Reservation 4WQ150 is a one-way economy trip from JFK to SEA",
     [[8, 7], [7, 6], [6, 5], [6, 4], [4, 3], [3, 2], [2, 1]], "direct", "summary"),
    (S2, 6, "so $72 would remain to pay", [[6, 5], [6, 3], [5, 4], [4, 1], [3, 2], [2, 1]],
     "multi-source", "computation"),
    (S3, 4, "Flight HAT045 is delayed", [[4, 3], [3, 2], [2, 1]], "direct", "status"),
    (S3, 8, "You are being transferred to a human agent", [[8, 7], [7, 6], [6, 5]], "direct",
     "confirmation"),
]
#: Pass 2 (checker p2): (conversation, turn, verdict, edges after the check or None).
PASS_2 = [
    (S1, 4, "accept", None),
    (S1, 8, "accept", None),
    (S2, 6, "accept", None),
    (S3, 4, "accept", None),
    (S3, 8, "accept_with_edits", [[8, 7], [7, 6], [6, 5], [6, 1]]),
]


def write_sample_claims(folder: Path) -> tuple[Path, Path]:
    """The two passes as annotation files in ``folder``: (pass 1, pass 2)."""
    folder.mkdir(parents=True, exist_ok=True)
    text = {(c, t): x for c, t, x, *_ in PASS_1}
    p1, p2 = folder / "pass1-sample.jsonl", folder / "check-sample.jsonl"
    p1.write_text("".join(json.dumps({
        "conversation_id": c, "turn": t, "text": x, "edges": e, "type": ty, "claim_kind": k,
        "rationale": "sample", "annotator": "p1"}) + "\n" for c, t, x, e, ty, k in PASS_1))
    p2.write_text("".join(json.dumps({
        "conversation_id": c, "turn": t, "text": text[(c, t)], "checker": "p2", "verdict": v,
        **({"edges": e, "notes": "added 6->1: the flight the summary names"} if e else {})})
        + "\n" for c, t, v, e in PASS_2))
    return p1, p2
