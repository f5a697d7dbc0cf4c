"""Tracing a benchmark: per conversation, one set of forward passes, every span, every method.

:func:`trace_conversation` is the unit of work (used by the local loop, shards and Ray): it
renders the conversation once, applies the context-length policy, asks the base scorer for
the turn shares of every query (target spans and, for Tokengeist, the assistant turns that
may become intermediate nodes) in one go, then builds each method's graph per span.

Context-length policy: a span is attributed only when every token up to its end fits in the
limit (the model's context, or ``max_tokens`` if smaller). Turns after the last span that fits
are never needed (the model is causal). A span that does not fit gets an entry with
``skipped = "too-long: ..."``, never a silently shortened context.

:func:`trace_benchmark` runs every conversation (or one shard), writes each method's
submission, and resumes after a crash: finished conversations are appended to a
``.<name>.partial`` file beside each output; a rerun with the same settings skips them, and the
final file (header, then one entry per span in benchmark order) replaces the partial at the end.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mtcabench import __version__
from mtcabench.benchmark import Benchmark, load_benchmark
from mtcabench.errors import InputError
from mtcabench.evaluate._engine import Attributor, Query
from mtcabench.evaluate._loading import DEFAULT_MODEL, LoadedModel, load_model
from mtcabench.evaluate._render import render_conversation
from mtcabench.evaluate._scorers import AT2, SCORERS, AttnTrace, BaseScorer
from mtcabench.evaluate._tokengeist import METHODS, TARGET, SearchSettings, flat, tokengeist
from mtcabench.io import RecordAppender, atomic_write, dump_record, iter_json_lines
from mtcabench.model import (
    BenchmarkSpan,
    Conversation,
    PredictedEdge,
    Role,
    SubmissionEntry,
    SubmissionHeader,
)
from mtcabench.progress import progress_bar


@dataclass(frozen=True)
class TraceSettings:
    """Everything that shapes a trace's result besides model, scorer and method (see docs)."""

    top_k: int = 3
    threshold: float = 0.05
    d_max: int = 6
    alpha: float = 0.5
    turn_aggregate: str = "max"
    max_tokens: int | None = None
    seed: int = 0
    attntrace_top_tokens: int = 5
    attntrace_subsamples: int = 30
    attntrace_keep: float = 0.4
    at2_weights: str | None = None

    @property
    def search(self) -> SearchSettings:
        return SearchSettings(self.top_k, self.threshold, self.d_max, self.alpha)


def make_scorer(name: str, settings: TraceSettings, loaded: LoadedModel) -> BaseScorer:
    """The base scorer called ``name`` configured from ``settings``."""
    if name not in SCORERS:
        raise InputError(f"unknown scorer {name!r}; choose one of {', '.join(sorted(SCORERS))}")
    cls = SCORERS[name]
    if cls is AttnTrace:
        return AttnTrace(settings.attntrace_top_tokens, settings.attntrace_subsamples,
                         settings.attntrace_keep)
    if cls is AT2:
        from mtcabench.evaluate._at2 import weights_for

        weights, label = weights_for(loaded, settings.at2_weights)
        return AT2(weights, label)
    return cls()


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


def trace_conversation(
    attributor: Attributor,
    conversation: Conversation,
    spans: list[BenchmarkSpan],
    methods: Iterable[str],
    settings: TraceSettings,
    *,
    naive: bool = False,
) -> ConversationResult:
    """Attribute every span of one conversation with each method.

    With ``naive``, shares are computed lazily with one forward pass (set) per recursion
    step, the way a per-step implementation would; results are the same, only slower (the
    performance scripts compare the two).
    """
    methods = list(methods)
    for m in methods:
        if m not in METHODS:
            raise InputError(f"unknown method {m!r}; choose one of {', '.join(METHODS)}")
    before = attributor.forward_passes
    entries: dict[str, list[SubmissionEntry]] = {m: [] for m in methods}
    if not spans:
        return ConversationResult(entries, 0, 0)
    for s in spans:
        check_span(conversation, s)
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
    span_queries = {s.id: Query(s.id, s.span.turn, s.span.start, s.span.end) for s in fitting}
    turn_queries: dict[int, Query] = {}
    if "tokengeist" in methods and fitting:
        last = max(s.span.turn for s in fitting)
        turn_queries = {
            t.index: Query(t.index, t.index, 0, len(t.text))
            for t in conversation.turns[:last]
            if t.role is Role.ASSISTANT and t.text
        }

    if naive:
        cache: dict[object, dict[int, float]] = {}

        def shares_of(span_id: str):
            def shares(key):
                query = span_queries[span_id] if key == TARGET else turn_queries.get(key)
                if query is None:
                    return {}
                # One forward pass (set) per step, as a per-step implementation would do.
                return attributor.shares(rendered, [query])[query.key]
            return shares
    else:
        cache = attributor.shares(rendered, [*span_queries.values(), *turn_queries.values()])

        def shares_of(span_id: str):
            def shares(key):
                return cache.get(span_id if key == TARGET else key, {})
            return shares

    search = settings.search
    for s in spans:
        for m in methods:
            if s.id in skip:
                entries[m].append(SubmissionEntry(span_id=s.id, skipped=skip[s.id]))
                continue
            fn = shares_of(s.id)
            graph = (tokengeist(conversation, s.span.turn, fn, search) if m == "tokengeist"
                     else flat(s.span.turn, fn, search))
            edges = [PredictedEdge(child=e.child, parent=e.parent,
                                   score=None if e.score is None else round(float(e.score), 6))
                     for e in sorted(graph.edges, key=lambda e: (-e.child, e.parent))]
            entries[m].append(SubmissionEntry(span_id=s.id, edges=edges))
    return ConversationResult(entries, attributor.forward_passes - before, len(skip))


# --------------------------------------------------------------------------- benchmark runs


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """``"K/N"`` (1 <= K <= N) to ``(K, N)``; None stays None."""
    if text is None:
        return None
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise InputError(f"--shard {text!r}: expected K/N, e.g. 1/4 (shards are numbered from 1)") from None
    if not 1 <= k <= n:
        raise InputError(f"--shard {text}: K must be between 1 and N")
    return k, n


def group_spans(bench: Benchmark) -> dict[str, list[BenchmarkSpan]]:
    """Spans by conversation, conversations in order of first appearance."""
    out: dict[str, list[BenchmarkSpan]] = {}
    for s in bench.spans:
        out.setdefault(s.conversation_id, []).append(s)
    return out


def shard_conversations(ids: Iterable[str], shard: tuple[int, int] | None) -> set[str]:
    """Conversations of shard K/N: round robin over the sorted ids (all when no shard)."""
    ids = sorted(ids)
    if shard is None:
        return set(ids)
    k, n = shard
    return {cid for i, cid in enumerate(ids) if i % n == k - 1}


def method_parameters(method: str, settings: TraceSettings, scorer: BaseScorer,
                      loaded: LoadedModel) -> dict[str, Any]:
    """The settings that shape a method's result, as recorded in the header."""
    params: dict[str, Any] = {"top_k": settings.top_k, "threshold": settings.threshold}
    if method == "tokengeist":
        params["d_max"] = settings.d_max
    params.update({
        "alpha": settings.alpha,
        "turn_aggregate": settings.turn_aggregate,
        "max_tokens": min(settings.max_tokens or loaded.context_length, loaded.context_length),
        "seed": settings.seed,
        "scorer_parameters": scorer.parameters(),
        "tool_calls": "text",
        "dtype": str(next(loaded.model.parameters()).dtype).removeprefix("torch."),
    })
    return params


@dataclass
class TraceReport:
    """What a trace run wrote and what it cost."""

    outputs: dict[str, Path]
    spans: int = 0
    skipped: int = 0
    conversations: int = 0
    forward_passes: int = 0
    resumed_conversations: int = 0
    wall_s: float = 0.0
    notes: dict[str, Any] = field(default_factory=dict)


def partial_path(out: Path) -> Path:
    return out.with_name(f".{out.name}.partial")


def _header_key(h: dict) -> dict:
    return {k: h.get(k) for k in ("method", "scorer", "model", "parameters", "benchmark")} | {
        "shard": (h.get("notes") or {}).get("shard")}


def _read_partial(path: Path, header: SubmissionHeader) -> dict[str, dict]:
    """Entries already in a partial file written with the same settings."""
    lines = list(iter_json_lines(path))
    if not lines:
        return {}
    first = lines[0][1]
    if _header_key(first) != _header_key(dump_record(header)):
        raise InputError(f"{path}: an unfinished run with other settings; rerun with the same "
                         "settings to resume it, or delete the file to start over")
    return {obj["span_id"]: obj for _, obj in lines[1:] if obj.get("kind") == SubmissionEntry.KIND}


def write_submission(path: Path, header: SubmissionHeader, entries: Iterable[SubmissionEntry | dict]) -> int:
    """Write a submission file atomically: the header line, then one line per entry."""
    n = 0
    with atomic_write(path) as fh:
        fh.write(json.dumps(dump_record(header), ensure_ascii=False) + "\n")
        for e in entries:
            obj = dump_record(e) if isinstance(e, SubmissionEntry) else e
            fh.write(json.dumps(obj, ensure_ascii=False) + "\n")
            n += 1
    return n


def prepare_run(
    benchmark: str | Path | Benchmark,
    outputs: Mapping[str, str | Path],
    model: str | LoadedModel,
    scorer: str,
    settings: TraceSettings,
    device: str = "auto",
    dtype: str = "auto",
):
    """Load what a run needs: benchmark, model, scorer, output paths (checked, model last)."""
    bench = benchmark if isinstance(benchmark, Benchmark) else load_benchmark(benchmark)
    outs = {m: Path(p) for m, p in outputs.items()}
    if not outs:
        raise InputError("no output: give at least one method and its output path")
    for m in outs:
        if m not in METHODS:
            raise InputError(f"unknown method {m!r}; choose one of {', '.join(METHODS)}")
    if len(set(outs.values())) != len(outs):
        raise InputError("each method needs its own output file")
    if scorer not in SCORERS:
        raise InputError(f"unknown scorer {scorer!r}; choose one of {', '.join(sorted(SCORERS))}")
    try:
        _ = settings.search  # validates the search parameters
    except ValueError as exc:
        raise InputError(str(exc)) from None
    if settings.turn_aggregate not in ("max", "sum"):
        raise InputError(f"turn aggregate must be max or sum, got {settings.turn_aggregate!r}")
    loaded = model if isinstance(model, LoadedModel) else load_model(model, device=device,
                                                                     dtype=dtype)
    scorer_obj = make_scorer(scorer, settings, loaded)
    return bench, outs, loaded, scorer_obj


def make_headers(origin: str, methods: Iterable[str], loaded: LoadedModel, scorer_obj: BaseScorer,
                 settings: TraceSettings, shard: tuple[int, int] | None) -> dict[str, SubmissionHeader]:
    """One submission header per method (costs are added to ``notes`` at the end)."""
    now = datetime.now(UTC)
    notes: dict[str, Any] = {"mtcabench_version": __version__}
    if shard:
        notes["shard"] = {"index": shard[0], "count": shard[1]}
    return {
        m: SubmissionHeader(method=m, scorer=scorer_obj.name, model=loaded.name,
                            parameters=method_parameters(m, settings, scorer_obj, loaded),
                            benchmark=origin, created_at=now, notes=dict(notes))
        for m in methods
    }


def trace_benchmark(
    benchmark: str | Path | Benchmark,
    outputs: Mapping[str, str | Path],
    *,
    model: str | LoadedModel = DEFAULT_MODEL,
    scorer: str = "avg-attention",
    settings: TraceSettings = TraceSettings(),
    shard: tuple[int, int] | str | None = None,
    naive: bool = False,
    progress: bool = True,
    device: str = "auto",
    dtype: str = "auto",
) -> TraceReport:
    """Trace a benchmark with one or more methods (``{"tokengeist": path, "flat": path}``).

    ``model`` is a name (loaded here, on ``device`` in ``dtype``) or an already loaded model.
    All methods share the forward passes of each conversation. Resumes an interrupted run
    with the same settings; see the module docstring.
    """
    start = time.perf_counter()
    shard = parse_shard(shard) if isinstance(shard, str) else shard
    bench, outs, loaded, scorer_obj = prepare_run(benchmark, outputs, model, scorer, settings,
                                                  device, dtype)
    headers = make_headers(bench.origin, outs, loaded, scorer_obj, settings, shard)
    by_conv = group_spans(bench)
    chosen = shard_conversations(by_conv, shard)
    work = [(cid, spans) for cid, spans in by_conv.items() if cid in chosen]
    n_spans = sum(len(s) for _, s in work)

    done: dict[str, dict[str, dict]] = {}
    appenders: dict[str, RecordAppender] = {}
    try:
        for m, out in outs.items():
            p = partial_path(out)
            appenders[m] = RecordAppender(p)  # cuts a line torn by a crash
            if p.stat().st_size:
                done[m] = _read_partial(p, headers[m])
            else:
                done[m] = {}
                appenders[m].write(headers[m])
    except BaseException:
        for a in appenders.values():
            a.close()
        raise

    attributor = Attributor(loaded, scorer_obj, aggregate=settings.turn_aggregate, seed=settings.seed)
    report = TraceReport(outputs=outs, conversations=len(work))
    label = f"trace {'+'.join(outs)} / {scorer_obj.name}"
    try:
        with progress_bar(label, n_spans, enabled=progress) as bar:
            for cid, spans in work:
                if all(s.id in done[m] for m in outs for s in spans):
                    report.resumed_conversations += 1
                    bar.advance(len(spans))
                    continue
                result = trace_conversation(attributor, bench.conversations[cid], spans, outs,
                                            settings, naive=naive)
                for m in outs:
                    for e in result.entries[m]:
                        if e.span_id not in done[m]:
                            appenders[m].write(e)
                            done[m][e.span_id] = dump_record(e)
                report.forward_passes += result.forward_passes
                bar.advance(len(spans))
    finally:
        for a in appenders.values():
            a.close()

    report.wall_s = time.perf_counter() - start
    order = [s.id for _, spans in work for s in spans]
    for m, out in outs.items():
        entries = [done[m][sid] for sid in order]
        report.skipped = sum(1 for e in entries if e.get("skipped"))
        header = headers[m]
        header.notes.update({
            "spans": len(entries),
            "skipped": report.skipped,
            "conversations": len(work),
            "forward_passes": report.forward_passes,
            "resumed_conversations": report.resumed_conversations,
            "wall_s": round(report.wall_s, 2),
            "device": str(loaded.device),
        })
        write_submission(out, header, entries)
        partial_path(out).unlink(missing_ok=True)
    report.spans = n_spans
    return report
