"""The studies' gold and split: a release built from the real runs (or review decisions), and
the train/dev/test split by TauBench task (so that no task's trials straddle it)."""

from __future__ import annotations

import re
import zlib
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from mtcabench.io import write_records
from mtcabench.model import BenchmarkSpan

#: The split: task id mod 5 of each split, and the trials of dev and test used (every trial of
#: a training task is a training conversation: only weights are learned there).
DEV_BUCKETS, TEST_BUCKETS, TRIALS = frozenset({0}), frozenset({1}), frozenset({0, 1})
TRAIN_BUCKETS = frozenset({2, 3, 4})
SPLITS = ("train", "dev", "test")
_TASK = re.compile(r"/task-([^/]+)/trial-(\d+)$")
_NUMBER = re.compile(r"[0-9]+")
#: Review decisions of the default gold carry this time, so that the gold is reproducible.
GOLD_DECIDED_AT = datetime(2026, 1, 1, tzinfo=UTC)


def split_of(conversation_id: str) -> str | None:
    """``train``, ``dev``, ``test`` or None (unused), by task (see mtcabench.studies).

    A numeric task id goes by its value mod 5; a task named otherwise (tau2-bench's telecom
    tasks) by the CRC-32 of its name, so that every agent's and trial's run of one task lands
    in one split; an id without a task by its own CRC-32.
    """
    m = _TASK.search(conversation_id)
    if m is None:
        bucket = zlib.crc32(conversation_id.encode()) % 5
    elif _NUMBER.fullmatch(m[1]):
        bucket = int(m[1]) % 5
    else:
        bucket = zlib.crc32(m[1].encode()) % 5
    if bucket in TRAIN_BUCKETS:
        return "train"
    if m and int(m[2]) not in TRIALS:
        return None
    if bucket in DEV_BUCKETS:
        return "dev"
    if bucket in TEST_BUCKETS:
        return "test"
    return None


def build_gold(out: Path, raw: Path | None, conversations: Path | None,
               reviewed: Path | None) -> Path:
    """A release folder of gold spans: from review decisions, or the pipeline on ``raw``."""
    from mtcabench.release import build_release

    out.mkdir(parents=True, exist_ok=True)
    if conversations is None:
        from mtcabench.annotate.lineage import propose_lineage
        from mtcabench.ingest import read_taubench, write_conversations
        from mtcabench.review import auto_accept

        if raw is None:
            raise SystemExit("gpt-4o-airline.json not found: pass --raw, --benchmark or "
                             "--conversations/--reviewed, or set MTCABENCH_TAUBENCH_AIRLINE")
        convs = {c.id: c for c in read_taubench(raw)}
        conversations, reviewed = out / "conversations.jsonl", out / "reviewed.jsonl"
        write_conversations(conversations, convs.values())
        candidates = list(propose_lineage(convs.values()))
        write_records(out / "candidates.jsonl", candidates)
        write_records(reviewed, auto_accept(candidates, convs, decided_at=GOLD_DECIDED_AT)
                      .decisions)
    if reviewed is None:
        raise SystemExit("--conversations needs --reviewed")
    built = build_release("study", reviewed, conversations, out=out / "release", force=True)
    return built.folder


def by_conversation(spans: Iterable[BenchmarkSpan]) -> dict[str, list[BenchmarkSpan]]:
    out: dict[str, list[BenchmarkSpan]] = {}
    for s in spans:
        out.setdefault(s.conversation_id, []).append(s)
    return out


def describe(spans: list[BenchmarkSpan], empty: int = 0) -> dict:
    types = Counter(s.dependency_type.value for s in spans)
    return {"conversations": len({s.conversation_id for s in spans}), "spans": len(spans),
            "empty": empty, "types": ", ".join(f"{k} {v}" for k, v in sorted(types.items()))}
