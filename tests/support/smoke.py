"""Trace-only benchmarks built from raw conversations, for timing and smoke runs.

The performance scripts and tests need spans on real conversations (TauBench) that have no
gold graphs yet. :func:`answer_span_benchmark` picks the first sentence of assistant answers
as target spans and gives each a placeholder gold graph (the target linked to the nearest
earlier user turn) that satisfies the graph rules. Such a benchmark is good for tracing and
timing, and meaningless for scoring.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from mtcabench.evaluate.attribution._sentences import split_sentences
from mtcabench.graph import depth, sources
from mtcabench.io import write_records
from mtcabench.model import (
    BenchmarkSpan,
    Conversation,
    DecisionSource,
    DependencyType,
    Edge,
    ProvenanceGraph,
    Role,
    TargetSpan,
    Verdict,
    span_id,
)


def answer_spans(conv: Conversation, per_conversation: int) -> list[BenchmarkSpan]:
    """Up to ``per_conversation`` spans: first sentence of the last answers (with content)."""
    out: list[BenchmarkSpan] = []
    for turn in reversed(conv.turns):
        if len(out) >= per_conversation:
            break
        if turn.role is not Role.ASSISTANT or not turn.content.strip():
            continue
        user = next((t.index for t in reversed(conv.turns[: turn.index]) if t.role is Role.USER), None)
        sents = split_sentences(turn.content)
        if user is None or not sents:
            continue
        a, b = sents[0]
        text = turn.content[a:b]
        a += len(text) - len(text.lstrip())
        b -= len(text) - len(text.rstrip())
        span = TargetSpan(turn=turn.index, start=a, end=b, text=turn.text[a:b])
        graph = ProvenanceGraph(target=turn.index, nodes=[user, turn.index],
                                edges=[Edge(child=turn.index, parent=user)])
        out.append(BenchmarkSpan(
            id=span_id(conv.id, span), conversation_id=conv.id, source=conv.source,
            domain=conv.domain, span=span, dependency_type=DependencyType.DIRECT, graph=graph,
            depth=depth(graph), sources=sources(graph, conv),
            decision_source=DecisionSource.AUTO, verdict=Verdict.ACCEPT,
        ))
    return list(reversed(out))


def answer_span_benchmark(
    conversations: Iterable[Conversation], folder: str | Path, *, per_conversation: int = 2
) -> Path:
    """Write ``conversations.jsonl`` and ``spans.jsonl`` of a trace-only benchmark to ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    convs = list(conversations)
    spans = [s for c in convs for s in answer_spans(c, per_conversation)]
    write_records(folder / "conversations.jsonl", convs)
    write_records(folder / "spans.jsonl", spans)
    return folder
