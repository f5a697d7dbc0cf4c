"""A benchmark in memory (conversations and gold spans), and the JSON Lines folder form of it."""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass
from pathlib import Path

from mtcabench.errors import InputError
from mtcabench.io import load_conversations, read_records
from mtcabench.model import BenchmarkSpan, Conversation


@dataclass
class Benchmark:
    """Conversations by id and the gold spans that refer to them.

    Its methods are the questions every stage asks of a benchmark, answered once here: the
    files it was read from, its spans by id and by conversation, a span's conversation.
    """

    conversations: dict[str, Conversation]
    spans: list[BenchmarkSpan]
    origin: str

    def span_index(self) -> dict[str, BenchmarkSpan]:
        """Every span by its id."""
        return {s.id: s for s in self.spans}

    def conversation_of(self, span: BenchmarkSpan) -> Conversation:
        """The conversation a span is in (every span's conversation is in the benchmark)."""
        return self.conversations[span.conversation_id]

    def spans_by_conversation(self) -> dict[str, list[BenchmarkSpan]]:
        """Spans by conversation id, conversations in order of their first span, spans in
        benchmark order; a conversation with no span is left out."""
        out: dict[str, list[BenchmarkSpan]] = {}
        for s in self.spans:
            out.setdefault(s.conversation_id, []).append(s)
        return out

    def missing_from(self, span_ids: Container[str]) -> list[str]:
        """The ids of the spans not in ``span_ids``, in benchmark order."""
        return [s.id for s in self.spans if s.id not in span_ids]

    def input_paths(self) -> list[Path]:
        """What the benchmark was read from, as inputs that no output may overwrite: the
        folder or file of its origin and every file under the folder; none for a Hub id."""
        return origin_paths(self.origin)


def origin_paths(origin: str | Path) -> list[Path]:
    """The folder or file a benchmark is read from and every file under the folder (a
    release keeps its tables in subfolders); [] when nothing is there (a Hub id)."""
    path = Path(origin)
    if path.is_dir():
        return [path, *sorted(p for p in path.rglob("*") if p.is_file())]
    return [path] if path.exists() else []


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
