"""Tracing one conversation: one set of forward passes, every span, every method.

:func:`attribute_spans` is the attribution of one conversation that ``trace`` and ``explain``
share; :func:`trace_conversation`, over it, is the unit of work of every runner (local,
shards, Ray) and writes submission entries. When a
model-based method is asked, it renders the conversation once, applies the context-length
policy, and asks the base scorer for the turn shares of every query (the target spans, and
the whole turns any of the methods may ask for, e.g. Tokengeist's intermediate nodes) in one
go; then each method builds its graph per span. Model-free methods need none of this.

Context-length policy (docs/evaluate.md, *Long conversations*). The limit is the model's
context, or ``max_tokens`` if smaller. A span whose tokens end within it is attributed against
the whole conversation before it, in the one set of passes; turns after the last such span are
never needed (the model is causal). A span that ends past it is attributed in a *context
window* (:mod:`mtcabench.evaluate.attribution._window`): the conversation up to the span's
turn with earlier turns' content shortened (tool results first, the longest first, values the
search traces kept, an explicit marker per gap), one window and one more set of passes per
such window, queried in the original turns' offsets so the methods see nothing different; the
submission entry records it as ``window``. With ``TraceSettings.window_room`` (0 by default),
a window is fitted with room and the later turns that still end within the limit in it share
it and its passes (*shared windows* in ``_window.py``). The renderings of one conversation
(its own and its windows) begin with the same turns, up to a window's first shortened one: their
passes run that start once (:mod:`~mtcabench.evaluate.attribution._shared_start`, planned
here before any pass). A span is skipped (``skipped = "too-long: ..."``)
only when no window fits: the system turn and its own turn alone pass the limit, or the text up
to it is beyond any window (:func:`~mtcabench.evaluate.attribution._window.beyond_any_window`,
decided before tokenising). Model-free methods read no tokens and attribute every span.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from mtcabench.errors import InputError
from mtcabench.evaluate.attribution._engine import Query, query_rows
from mtcabench.evaluate.methods._methods import Method, get_methods
from mtcabench.evaluate.attribution._render import RenderedConversation, render_conversation
from mtcabench.evaluate.attribution._loading import model_limits
from mtcabench.evaluate.attribution._shared_start import SharedStart, plan_shared_start
from mtcabench.evaluate.attribution._window import (
    WINDOW_FACTOR,
    NoWindow,
    Window,
    beyond_any_window,
    fewest_tokens,
    plan_windows,
    text_chars,
)
from mtcabench.evaluate._settings import TraceSettings
from mtcabench.evaluate.methods._tokengeist import (
    TARGET,
    Part,
    SharesFn,
    node_keys,
    relay_nodes,
    sentence_parts,
)
from mtcabench.graph import reachable
from mtcabench.model import (
    BenchmarkSpan,
    ContextWindow,
    Conversation,
    EdgeKind,
    PredictedEdge,
    ProvenanceGraph,
    Role,
    ScoredSentence,
    SubmissionEntry,
    TargetSpan,
)

#: ``sentences(node, parent)``: the parent turn's best sentences for a node (``TARGET``, a
#: turn index or a :class:`Part`, as in :data:`SharesFn`), best first.
SentencesFn = Callable[[Hashable, int], list[ScoredSentence]]


def with_evidence(graph: ProvenanceGraph, sentences: SentencesFn | None,
                  conversation: Conversation | None = None,
                  relayed: bool = False) -> ProvenanceGraph:
    """The graph with each content edge's evidence: its parent's best sentences for its child
    (the target's under ``TARGET``). Structural edges carry none: the call is their reason.

    A child asked about by parts (its text, its calls: see
    :func:`~mtcabench.evaluate.methods._tokengeist.node_keys`; ``conversation`` tells them)
    takes the evidence of the part whose best sentence is nearest the edge's score: the part
    that found the edge (with the ``max`` aggregate, the best sentence's score is the share).
    With ``relayed`` (the search's ``relay_sentences``), its sentences are among those parts.
    """
    if sentences is None:
        return graph

    def evidence(e) -> list[ScoredSentence]:
        if e.child == graph.target:
            return sentences(TARGET, e.parent)
        keys = [e.child] if conversation is None else node_keys(conversation, e.child)
        if relayed and conversation is not None:  # asked about its sentences instead
            keys = [*keys, *sentence_parts(conversation, e.child)]
        found = [x for x in (sentences(k, e.parent) for k in keys) if x]
        if not found:
            return []
        return min(found, key=lambda x: abs(x[0].score - (e.score or 0.0)))

    edges = [e if e.kind is not EdgeKind.CONTENT else e.model_copy(update={
        "sentences": evidence(e)}) for e in graph.edges]
    return graph.model_copy(update={"edges": edges})


def span_graph(method: Method, conversation: Conversation, target: TargetSpan,
               shares: SharesFn | None, sentences: SentencesFn | None,
               settings: TraceSettings) -> ProvenanceGraph:
    """One method's graph of one span from the base scorer's answers (``shares`` and
    ``sentences`` per node, None for a model-free method), with each content edge's evidence:
    the graph of offline ``trace`` and ``explain`` and of the online Tracer alike."""
    graph = method.graph(conversation, target, shares, settings.search)
    # Evidence is the base scorer's: a model-free method's graph stays as it is alone.
    return (with_evidence(graph, sentences, conversation, settings.search.relay_sentences)
            if method.uses_model else graph)


if TYPE_CHECKING:
    from mtcabench.evaluate.attribution._engine import Attributor


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


@dataclass(frozen=True)
class Unfit:
    """Why a span gets no model-based graph: it maps to no token of the rendered conversation,
    or it ends past the token limit (the model's context, or ``max_tokens``) and no window of
    the conversation fits (``why`` says so)."""

    end_token: int
    limit: int
    model: str
    why: str | None = None

    @property
    def no_tokens(self) -> bool:
        return self.end_token == 0

    def reason(self) -> str:
        """The submission's ``skipped`` text."""
        if self.no_tokens:
            return "no-tokens: the span maps to no token of the rendered conversation"
        return self.why or (f"too-long: the span ends at token {self.end_token} of the "
                            f"rendered conversation, beyond the {self.limit}-token limit")

    def error(self, conversation: Conversation, span: TargetSpan) -> InputError:
        """The one line of a caller that refuses such a span (``explain``)."""
        where = f"conversation {conversation.id}, turn {span.turn}"
        if self.no_tokens:
            return InputError(f"{where}: the span {span.text!r} maps to no token of the "
                              "rendered conversation")
        return InputError(f"{where}: {self.reason()} ({self.model}); choose an earlier turn "
                          "or a model with a longer context")


@dataclass
class SpanShares:
    """The base scorer's turn shares of a conversation's spans, from one set of passes (and
    one more per turn holding spans that needed a context window)."""

    #: Per attributed span (by the caller's key), its shares function.
    shares: dict[Hashable, SharesFn]
    #: Per span that does not fit, why.
    unfit: dict[Hashable, Unfit]
    #: Tokens of the rendered conversation up to the last span's turn.
    tokens: int = 0
    #: The rendered conversation (None when no span fits unwindowed).
    rendered: RenderedConversation | None = None
    #: Per attributed span, its evidence function (the same passes' sentence scores).
    sentences: dict[Hashable, SentencesFn] = field(default_factory=dict)
    #: Per span attributed in a context window, the window (see _window.py).
    windows: dict[Hashable, Window] = field(default_factory=dict)
    #: Each rendering attributed and the spans read from it (edge verification's).
    groups: list[tuple[RenderedConversation, list[Hashable]]] = field(default_factory=list)


def model_shares(
    attributor: Attributor, conversation: Conversation, targets: Mapping[Hashable, TargetSpan],
    methods: Iterable[Method], settings: TraceSettings, *, naive: bool = False,
    strict: bool = False,
) -> SpanShares:
    """Per span (``targets``, by any key but an int: whole turns are queried under their
    index), its shares function; or why it does not fit.

    The context-length policy of the module docstring; with ``strict``, a span that no window
    fits is an InputError raised before any forward pass. The queries are the spans and every
    whole turn one of ``methods`` may ask for, all computed in one go (``naive``: lazily, one
    forward pass set per recursion step, for the performance scripts); the spans of one
    target turn past the limit share one window and one more set of passes.
    """
    loaded = attributor.loaded
    limit = min(settings.max_tokens or loaded.context_length, loaded.context_length)
    out = SpanShares({}, {})
    chars = {k: text_chars(conversation, t.turn, t.end) for k, t in targets.items()}
    if max(chars.values(), default=0) >= WINDOW_FACTOR * limit:  # else no need to look
        longest = model_limits(loaded)[1]
        for key, t in targets.items():
            if (why := beyond_any_window(chars[key], longest, limit)) is not None:
                out.unfit[key] = Unfit(fewest_tokens(chars[key], longest), limit, loaded.name, why)
                if strict:
                    raise out.unfit[key].error(conversation, t)
        targets = {k: t for k, t in targets.items() if k not in out.unfit}
        if not targets:
            return out
    rendered = render_conversation(conversation, loaded.tokenizer,
                                   upto=max(t.turn for t in targets.values()))
    full = rendered.full
    fitting: dict[Hashable, TargetSpan] = {}
    past: dict[int, dict[Hashable, TargetSpan]] = {}  # by target turn
    ends: dict[int, int] = {}
    out.tokens = full.num_tokens
    for key, t in targets.items():
        a, b = full.span_tokens(t.turn, t.start, t.end)
        if b <= a:
            out.unfit[key] = Unfit(0, limit, loaded.name)
            if strict:
                raise out.unfit[key].error(conversation, t)
        elif b > limit:
            past.setdefault(t.turn, {})[key] = t
            ends[t.turn] = full.turn_tokens(t.turn)[1]
        else:
            fitting[key] = t
    room = settings.window_room_tokens(limit)
    # With room, every assistant turn past the limit up to the last one asked about takes part
    # in the chain of shared windows, asked about or not: a turn's window is then the same
    # whichever turns are asked (the online Tracer asks one at a time).
    chain = ({i: e for i in range(max(past, default=-1) + 1)
              if conversation.turns[i].role is Role.ASSISTANT
              and (e := full.turn_tokens(i)[1]) > limit} if room else ends)
    planned = plan_windows(conversation, chain, loaded.tokenizer, limit, room)
    groups: dict[int, list[int]] = {}  # by the turn each window was fitted for
    for turn, spans in sorted(past.items()):
        got = planned[turn]
        if isinstance(got, NoWindow):
            for key, t in spans.items():
                out.unfit[key] = Unfit(ends[turn], limit, loaded.name, got.reason(limit))
                if strict:
                    raise out.unfit[key].error(conversation, t)
        else:
            groups.setdefault(got.anchor, []).append(turn)
    methods = list(methods)
    # The renderings to attribute: the conversation (its spans that fit), then each window.
    readings: list[_Reading] = []
    if fitting:
        out.rendered = rendered
        readings.append(_reading(rendered, None, fitting, methods, settings))
    for turns in groups.values():
        # One rendering and one set of passes for every turn sharing the window: the last
        # turn's (its prefix is each earlier turn's own window).
        window = planned[turns[-1]]
        spans = {k: t for turn in turns for k, t in past[turn].items()}
        windowed = render_conversation(window.conversation, loaded.tokenizer, upto=turns[-1])
        readings.append(_reading(windowed, window, spans, methods, settings))
        for turn in turns:
            out.windows.update(dict.fromkeys(past[turn], planned[turn]))
    # Several renderings begin with the same turns: their passes share that start (planned
    # before any pass, so the steps are the same whatever runs first). Not in the per-step
    # ``naive`` mode, which shows what a pass per step costs.
    shared = plan_shared_start([(r.rendered.full.input_ids, r.rows()) for r in readings],
                               store=readings[0].rendered.shared_prefix
                               ) if len(readings) > 1 and not naive else None
    for r in readings:
        _group_shares(out, attributor, r, settings, naive, shared)
    return out


@dataclass
class _Reading:
    """One rendering to attribute (the conversation, or a window of it) and its queries: the
    spans' and the whole turns' (or parts) a method may ask for, in the rendering's offsets."""

    rendered: RenderedConversation
    window: Window | None
    span_queries: dict[Hashable, Query]
    turn_queries: dict[Hashable, Query]

    def rows(self) -> np.ndarray:
        """The token positions its pass reads (sorted)."""
        rows = query_rows(self.rendered.full, [*self.span_queries.values(),
                                               *self.turn_queries.values()])
        return np.unique(np.concatenate([np.zeros(0, np.int64), *rows]))


def _reading(rendered: RenderedConversation, window: Window | None,
             spans: Mapping[Hashable, TargetSpan], methods: list[Method],
             settings: TraceSettings) -> _Reading:
    """The queries of ``spans`` read in ``rendered`` (the conversation, or ``window`` of it),
    keyed as in the original conversation; a window maps their ranges in."""
    conversation = rendered.conversation if window is None else window.original
    span_queries = {k: Query(k, t.turn, t.start, t.end) for k, t in spans.items()}
    last = max(t.turn for t in spans.values())
    wanted = {i for m in methods for i in m.query_turns(conversation, last)}
    if settings.search.relay_sentences and wanted:  # a search that may enter turns
        wanted.update(relay_nodes(conversation, last))

    def turn_query(i: Hashable) -> Query:
        turn, start, end = i if isinstance(i, Part) else (i, 0, len(conversation.turns[i].text))
        if window is not None:
            start, end = window.to_window(turn, start, end)
        return Query(i, turn, start, end)

    return _Reading(rendered, window, span_queries,
                    {i: turn_query(i) for i in sorted(wanted, key=_order)})


def _group_shares(out: SpanShares, attributor: Attributor, reading: _Reading,
                  settings: TraceSettings, naive: bool, shared: SharedStart | None) -> None:
    """The shares and evidence functions of one reading's spans (:class:`_Reading`), added to
    ``out``; a window maps the evidence's ranges back."""
    rendered, window = reading.rendered, reading.window
    span_queries, turn_queries = reading.span_queries, reading.turn_queries
    k_best = settings.evidence_sentences

    def attribute(queries: list[Query]):
        got = attributor.attribute(rendered, queries, k_best, shared)
        if window is None:
            return got
        return {key: (shares, _evidence_back(window, best)) for key, (shares, best) in got.items()}

    if naive:
        steps: dict[tuple[Hashable, Hashable], tuple] = {}

        def lookup(k: Hashable, key: Hashable):
            query = span_queries[k] if key == TARGET else turn_queries.get(key)
            if query is None:
                return {}, {}
            # One forward pass (set) per step, as a per-step implementation would do; the
            # evidence of an edge reads the step that found it.
            if (k, key) not in steps:
                steps[(k, key)] = attribute([query])[query.key]
            return steps[(k, key)]
    else:
        cache = attribute([*span_queries.values(), *turn_queries.values()])

        def lookup(k: Hashable, key: Hashable):
            return cache.get(k if key == TARGET else key, ({}, {}))

    def shares_of(k: Hashable) -> SharesFn:
        return lambda key: lookup(k, key)[0]

    def sentences_of(k: Hashable) -> SentencesFn:
        return lambda key, parent: list(lookup(k, key)[1].get(parent, []))

    out.shares.update({k: shares_of(k) for k in span_queries})
    out.sentences.update({k: sentences_of(k) for k in span_queries})
    out.groups.append((rendered, list(span_queries)))


def _evidence_back(window: Window, best: dict[int, list[ScoredSentence]]
                   ) -> dict[int, list[ScoredSentence]]:
    """Evidence ranges of a windowed rendering in the original turns' text (a range inside an
    elision marker has none and is dropped)."""
    out = {}
    for turn, items in best.items():
        mapped = []
        for x in items:
            r = window.from_window(turn, x.start, x.end)
            if r is not None:
                mapped.append(x.model_copy(update={"start": r[0], "end": r[1]}))
        if mapped:
            out[turn] = mapped
    return out


def _order(key: Hashable) -> tuple:
    """Queries in conversation order: whole turns and parts of turns mixed."""
    return (key.turn, key.start, key.end) if isinstance(key, Part) else (key, -1, -1)


def verify_edges(
    attributor: Attributor, rendered: RenderedConversation, targets: Mapping[Hashable, TargetSpan],
    graphs: dict[Hashable, ProvenanceGraph],
) -> dict[Hashable, ProvenanceGraph]:
    """Each content edge kept only when leaving its parent turn out lowers its child's
    log-probability (the child: the span for edges out of the target turn, else the whole
    turn); one pass per distinct parent turn of the conversation, on a cached prefix. Nodes
    no longer reachable from the target go with their edges."""
    from mtcabench.evaluate.attribution._ablation import edge_drops  # torch: with the model

    def child_query(key, t: TargetSpan, child: int) -> Query:
        if child == t.turn:
            return Query(("span", key), t.turn, t.start, t.end)
        return Query(child, child, 0, len(rendered.conversation.turns[child].text))

    checks = {(child_query(k, targets[k], e.child), e.parent) for k, g in graphs.items()
              for e in g.edges if e.score is not None}
    with attributor.counting():
        drops, _ = edge_drops(attributor.loaded, rendered, sorted(checks, key=str))
    out = {}
    for k, g in graphs.items():
        kept = [e for e in g.edges if e.score is None
                or drops[child_query(k, targets[k], e.child).key, e.parent] > 0]
        alive = reachable(ProvenanceGraph(target=g.target, nodes=g.nodes, edges=kept))
        out[k] = ProvenanceGraph(target=g.target, nodes=[n for n in g.nodes if n in alive],
                                 edges=[e for e in kept if e.child in alive and e.parent in alive])
    return out


@dataclass
class Attribution:
    """Every method's graph of every span of one conversation, and what it cost."""

    #: Per method, per span key, its graph (spans that do not fit a model-based method: none).
    graphs: dict[str, dict[Hashable, ProvenanceGraph]]
    #: Spans that did not fit the model's context, even windowed (model-based methods only).
    unfit: dict[Hashable, Unfit]
    forward_passes: int = 0
    tokens: int = 0
    #: Spans attributed in a context window (model-based methods), with their window.
    windows: dict[Hashable, Window] = field(default_factory=dict)


def attribute_spans(
    attributor: Attributor | None,
    conversation: Conversation,
    targets: Mapping[Hashable, TargetSpan],
    methods: Mapping[str, Method],
    settings: TraceSettings,
    *,
    naive: bool = False,
    strict: bool = False,
) -> Attribution:
    """The per-conversation attribution that ``trace`` and ``explain`` share: one set of
    forward passes for every span and method (``attributor`` may be None when every method is
    model-free), then each method's graph per span. Spans are keyed by any key but an int."""
    if any(isinstance(k, (int, Part)) for k in targets):
        raise ValueError("span keys must not be ints or Parts (whole turns and parts of turns "
                         "are queried under those)")
    model_methods = [m for m in methods.values() if m.uses_model]
    if model_methods and attributor is None:
        raise ValueError(f"methods {[m.name for m in model_methods]} need an attributor (a model)")
    before = attributor.forward_passes if attributor is not None else 0
    shares = SpanShares({}, {})
    if model_methods and targets:
        shares = model_shares(attributor, conversation, targets, model_methods, settings,
                              naive=naive, strict=strict)
    graphs: dict[str, dict[Hashable, ProvenanceGraph]] = {name: {} for name in methods}
    for key, t in targets.items():
        for name, method in methods.items():
            if method.uses_model and key in shares.unfit:
                continue
            graphs[name][key] = span_graph(method, conversation, t, shares.shares.get(key),
                                           shares.sentences.get(key), settings)
    if settings.verify_edges:
        for name, method in methods.items():
            if method.uses_model:
                # Each span's edges are checked on the rendering it was attributed on.
                for rendered, keys in shares.groups:
                    graphs[name].update(verify_edges(
                        attributor, rendered, {k: targets[k] for k in keys},
                        {k: graphs[name][k] for k in keys}))
    passes = attributor.forward_passes - before if attributor is not None else 0
    return Attribution(graphs, shares.unfit, passes, shares.tokens, shares.windows)


@dataclass
class ConversationResult:
    """Entries per method for one conversation, and what it cost."""

    entries: dict[str, list[SubmissionEntry]]
    forward_passes: int
    skipped: int
    #: Spans attributed in a context window (model-based methods).
    windowed: int = 0


def trace_conversation(
    attributor: Attributor | None,
    conversation: Conversation,
    spans: list[BenchmarkSpan],
    methods: Iterable[str] | Mapping[str, Method],
    settings: TraceSettings,
    *,
    naive: bool = False,
) -> ConversationResult:
    """Attribute every span of one conversation with each method: the runners' unit of work.

    ``attributor`` may be None when every method is model-free. With ``naive``, shares are
    computed lazily with one forward pass (set) per recursion step, the way a per-step
    implementation would; results are the same, only slower (the performance scripts
    compare the two).
    """
    chosen = dict(methods) if isinstance(methods, Mapping) else get_methods(methods)
    entries: dict[str, list[SubmissionEntry]] = {name: [] for name in chosen}
    if not spans:
        return ConversationResult(entries, 0, 0)
    for s in spans:
        check_span(conversation, s)
    result = attribute_spans(attributor, conversation, {s.id: s.span for s in spans}, chosen,
                             settings, naive=naive)
    for s in spans:
        for name, method in chosen.items():
            if method.uses_model and s.id in result.unfit:
                entries[name].append(SubmissionEntry(span_id=s.id,
                                                     skipped=result.unfit[s.id].reason()))
                continue
            graph = result.graphs[name][s.id]
            edges = [PredictedEdge(child=e.child, parent=e.parent,
                                   score=e.score,
                                   sentences=e.sentences or None)
                     for e in sorted(graph.edges, key=lambda e: (-e.child, e.parent))]
            window = result.windows.get(s.id) if method.uses_model else None
            entries[name].append(SubmissionEntry(
                span_id=s.id, edges=edges,
                window=None if window is None else ContextWindow(**window.report())))
    return ConversationResult(entries, result.forward_passes, len(result.unfit),
                              len(result.windows))
