"""Tracing one conversation: one set of forward passes, every span, every method.

:func:`trace_conversation` is the unit of work of every runner (local, shards, Ray). When a
model-based method is asked, it renders the conversation once, applies the context-length
policy, and asks the base scorer for the turn shares of every query (the target spans, and
the whole turns any of the methods may ask for, e.g. Tokengeist's intermediate nodes) in one
go; then each method builds its graph per span. Model-free methods need none of this.

Context-length policy: a span is attributed by a model-based method only when every token up
to its end fits in the limit (the model's context, or ``max_tokens`` if smaller). Turns after
the last span that fits are never needed (the model is causal). A span that does not fit gets
an entry with ``skipped = "too-long: ..."``, never a silently shortened context. Model-free
methods read no tokens and attribute every span.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mtcabench.errors import InputError
from mtcabench.evaluate._engine import Query
from mtcabench.evaluate._methods import Method, get_methods
from mtcabench.evaluate._render import render_conversation
from mtcabench.evaluate._settings import TraceSettings
from mtcabench.evaluate._tokengeist import TARGET, SharesFn
from mtcabench.model import BenchmarkSpan, Conversation, PredictedEdge, Role, SubmissionEntry

if TYPE_CHECKING:
    from mtcabench.evaluate._engine import Attributor


def check_span(conv: Conversation, span: BenchmarkSpan) -> None:
    """A span must sit in an assistant turn of its conversation with matching text."""
    s = span.span
    if not 0 <= s.turn < len(conv.turns):
        raise InputError(f"span {span.id}: turn {s.turn} is not a turn of {conv.id}")
    turn = conv.turns[s.turn]
    if turn.role is not Role.ASSISTANT:
        raise InputError(f"span {span.id}: turn {s.turn} is a {turn.role.value} turn, "
                         "targets are in assistant turns")
    if turn.text[s.start : s.end] != s.text:
        raise InputError(f"span {span.id}: text {s.text!r} is not at {s.start}:{s.end} of turn "
                         f"{s.turn} ({turn.text[s.start:s.end]!r}); is the benchmark consistent?")


@dataclass
class ConversationResult:
    """Entries per method for one conversation, and what it cost."""

    entries: dict[str, list[SubmissionEntry]]
    forward_passes: int
    skipped: int


def _model_shares(
    attributor: Attributor, conversation: Conversation, spans: list[BenchmarkSpan],
    methods: list[Method], settings: TraceSettings, naive: bool,
) -> tuple[dict[str, SharesFn], dict[str, str]]:
    """Per span, its shares function (fitting spans) or why it was skipped (the others)."""
    loaded = attributor.loaded
    limit = min(settings.max_tokens or loaded.context_length, loaded.context_length)
    rendered = render_conversation(conversation, loaded.tokenizer,
                                   upto=max(s.span.turn for s in spans))
    full = rendered.full
    fitting: list[BenchmarkSpan] = []
    skip: dict[str, str] = {}
    for s in spans:
        a, b = full.span_tokens(s.span.turn, s.span.start, s.span.end)
        if b <= a:
            skip[s.id] = "no-tokens: the span maps to no token of the rendered conversation"
        elif b > limit:
            skip[s.id] = (f"too-long: the span ends at token {b} of the rendered conversation, "
                          f"beyond the {limit}-token limit")
        else:
            fitting.append(s)
    if not fitting:
        return {}, skip
    span_queries = {s.id: Query(s.id, s.span.turn, s.span.start, s.span.end) for s in fitting}
    last = max(s.span.turn for s in fitting)
    wanted = sorted({i for m in methods for i in m.query_turns(conversation, last)})
    turn_queries = {i: Query(i, i, 0, len(conversation.turns[i].text)) for i in wanted}

    if naive:
        def shares_of(span_id: str) -> SharesFn:
            def shares(key):
                query = span_queries[span_id] if key == TARGET else turn_queries.get(key)
                if query is None:
                    return {}
                # One forward pass (set) per step, as a per-step implementation would do.
                return attributor.shares(rendered, [query])[query.key]
            return shares
    else:
        cache = attributor.shares(rendered, [*span_queries.values(), *turn_queries.values()])

        def shares_of(span_id: str) -> SharesFn:
            def shares(key):
                return cache.get(span_id if key == TARGET else key, {})
            return shares
    return {sid: shares_of(sid) for sid in span_queries}, skip


def trace_conversation(
    attributor: Attributor | None,
    conversation: Conversation,
    spans: list[BenchmarkSpan],
    methods: Iterable[str] | Mapping[str, Method],
    settings: TraceSettings,
    *,
    naive: bool = False,
) -> ConversationResult:
    """Attribute every span of one conversation with each method.

    ``attributor`` may be None when every method is model-free. With ``naive``, shares are
    computed lazily with one forward pass (set) per recursion step, the way a per-step
    implementation would; results are the same, only slower (the performance scripts
    compare the two).
    """
    chosen = dict(methods) if isinstance(methods, Mapping) else get_methods(methods)
    model_methods = [m for m in chosen.values() if m.uses_model]
    if model_methods and attributor is None:
        raise ValueError(f"methods {[m.name for m in model_methods]} need an attributor (a model)")
    before = attributor.forward_passes if attributor is not None else 0
    entries: dict[str, list[SubmissionEntry]] = {name: [] for name in chosen}
    if not spans:
        return ConversationResult(entries, 0, 0)
    for s in spans:
        check_span(conversation, s)
    shares: dict[str, SharesFn] = {}
    skip: dict[str, str] = {}
    if model_methods:
        shares, skip = _model_shares(attributor, conversation, spans, model_methods, settings,
                                     naive)
    search = settings.search
    for s in spans:
        for name, method in chosen.items():
            if method.uses_model and s.id in skip:
                entries[name].append(SubmissionEntry(span_id=s.id, skipped=skip[s.id]))
                continue
            graph = method.graph(conversation, s.span, shares.get(s.id), search)
            edges = [PredictedEdge(child=e.child, parent=e.parent,
                                   score=None if e.score is None else round(float(e.score), 6))
                     for e in sorted(graph.edges, key=lambda e: (-e.child, e.parent))]
            entries[name].append(SubmissionEntry(span_id=s.id, edges=edges))
    passes = attributor.forward_passes - before if attributor is not None else 0
    return ConversationResult(entries, passes, len(skip))
