"""A benchmark in memory (conversations and gold spans), and the JSON Lines folder form of it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mtcabench.errors import InputError
from mtcabench.io import load_conversations, read_records
from mtcabench.model import BenchmarkSpan, Conversation


@dataclass
class Benchmark:
    """Conversations by id and the gold spans that refer to them."""

    conversations: dict[str, Conversation]
    spans: list[BenchmarkSpan]
    origin: str

    def span_index(self) -> dict[str, BenchmarkSpan]:
        return {s.id: s for s in self.spans}


def load_jsonl_benchmark(folder: Path) -> Benchmark:
    convs = load_conversations(folder / "conversations.jsonl")
    spans = list(read_records(folder / "spans.jsonl", BenchmarkSpan))
    seen: set[str] = set()
    for s in spans:
        if s.id in seen:
            raise InputError(f"{folder / 'spans.jsonl'}: duplicate span id {s.id}")
        seen.add(s.id)
        if s.conversation_id not in convs:
            raise InputError(f"{folder / 'spans.jsonl'}: span {s.id} refers to conversation "
                             f"{s.conversation_id}, which is not in conversations.jsonl")
    return Benchmark(convs, spans, str(folder))
