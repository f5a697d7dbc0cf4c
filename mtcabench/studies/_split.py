"""The studies' gold and split: a release built from the real runs (or review decisions), and
the train/dev/test split by task (so that no task's trials straddle it), which is the benchmark
format's rule (:func:`mtcabench.benchmark.split_of`), re-exported by mtcabench.studies."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from mtcabench.io import write_records
from mtcabench.model import BenchmarkSpan

#: Review decisions of the default gold carry this time, so that the gold is reproducible.
GOLD_DECIDED_AT = datetime(2026, 1, 1, tzinfo=UTC)


def build_gold(out: Path, raw: Path | None, conversations: Path | None,
               reviewed: Path | None) -> Path:
    """A release folder of gold spans: from review decisions, or the pipeline on ``raw``."""
    from mtcabench.release import build_release

    out.mkdir(parents=True, exist_ok=True)
    if conversations is None:
        from mtcabench.lineage import propose_lineage
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
