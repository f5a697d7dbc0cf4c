"""Loading a benchmark (conversations and gold spans) for the evaluator and the scorer.

A benchmark is given as a path or a Hub id:
- a folder holding ``conversations.jsonl`` and ``spans.jsonl`` (our record files);
- a release folder built by ``mtcabench release build`` (Parquet; see mtcabench.release);
- a Hub dataset id ``ORG/NAME`` (see mtcabench.release).
"""

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


def load_benchmark(path_or_id: str | Path) -> Benchmark:
    """Load a benchmark from a JSONL folder, a release folder or a Hub id."""
    path = Path(path_or_id)
    if path.is_dir() and (path / "spans.jsonl").is_file():
        return load_jsonl_benchmark(path)
    # Releases need `datasets` and huggingface_hub: imported only when one is asked for.
    if path.is_dir() and (path / "release.json").is_file():
        from mtcabench.release import load_release

        return load_release(path)
    if not path.exists():
        from mtcabench.release import load_release, parse_hub_id

        if parse_hub_id(str(path_or_id)) is not None:
            return load_release(str(path_or_id))
    raise InputError(f"{path_or_id}: not a benchmark folder (expected conversations.jsonl and "
                     "spans.jsonl, or a release folder) or a Hub dataset id")
