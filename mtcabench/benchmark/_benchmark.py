"""A benchmark in memory (conversations and gold spans), and the JSON Lines folder form of it."""

from __future__ import annotations

import os
from collections.abc import Container
from dataclasses import dataclass
from pathlib import Path

from mtcabench.benchmark.hub import parse_hub_id
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


#: How a benchmark read from the Hub names its origin (``hf://datasets/ORG/NAME@REV``).
HUB_ORIGIN = "hf://datasets/"


def _hub_origin(origin: str) -> tuple[str, str | None] | None:
    """(repo, revision) of an origin that names a Hub dataset, ``ORG/NAME@REV`` with or
    without the ``hf://datasets/`` of a benchmark read from the Hub, else None."""
    return parse_hub_id(origin.removeprefix(HUB_ORIGIN))


def same_origin(a: str, b: str) -> bool:
    """Whether two benchmark origins (a submission header's ``benchmark``, what a benchmark
    was read from) name the same benchmark: the same Hub repository (a revision given on
    both sides must agree), or the same folder. A relative path that does not exist here (a
    header written where trace ran, elsewhere) matches a folder whose path ends with it."""
    # A relative path (``release/1.0.0``) reads like ``ORG/NAME`` too: a side is taken for a
    # Hub id only when one of the two says hf://.
    ha, hb = _hub_origin(a), _hub_origin(b)
    if a.startswith(HUB_ORIGIN) or b.startswith(HUB_ORIGIN):
        if ha is None or hb is None or ha[0] != hb[0]:
            return False
        return ha[1] is None or hb[1] is None or ha[1] == hb[1]
    try:
        pa, pb = Path(os.path.realpath(a)), Path(os.path.realpath(b))
    except ValueError:  # a NUL character: no path (a header's text is the user's)
        return a == b
    if pa == pb:
        return True
    for rel, full in ((Path(a), pb), (Path(b), pa)):
        parts = [p for p in rel.parts if p not in (".", "")]
        if not rel.is_absolute() and not os.path.lexists(rel) and parts and \
                list(full.parts[-len(parts):]) == parts:
            return True
    return False


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
        if (why := span_disagrees(s, convs[s.conversation_id])) is not None:
            raise InputError(f"{folder / 'spans.jsonl'}: {why}")
    return Benchmark(convs, spans, str(folder))


def span_disagrees(span: BenchmarkSpan, conversation: Conversation) -> str | None:
    """Why a span's own source or domain is not its conversation's, else None. Both are kept
    on the span (a row of the spans table stands alone), so both must agree: score's rows
    read the span's domain, view's facets the conversation's."""
    for field in ("source", "domain"):
        mine, theirs = getattr(span, field), getattr(conversation, field)
        if mine != theirs:
            return (f"span {span.id}: {field} {mine!r}, but its conversation "
                    f"{conversation.id} is of {field} {theirs!r}; a span is in its "
                    f"conversation's {field}: fix the span's (or rebuild the release)")
    return None
