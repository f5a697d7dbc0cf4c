"""What every runner (local, shards, Ray) shares: the run check, the headers, the finish.

- :func:`plan_run` checks a run before any work and before any model is loaded: the
  benchmark, one output per known method (none of them an input), the scorer when a method
  reads a model, the shard; it also picks the conversations of the shard.
- the runners load the model and the base scorer
  (:func:`~mtcabench.evaluate.attribution.load_attributor`) only when :func:`plan_run` found a
  model-based method (a run of model-free methods never imports torch);
- :func:`make_headers` writes each method's submission header (what shapes its result).
- :func:`finish_run` writes each method's submission (header with the run's costs, then one
  entry per span in benchmark order) and removes the partial file of an interrupted run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mtcabench._version import __version__
from mtcabench.benchmark import Benchmark, load_benchmark
from mtcabench.errors import InputError
from mtcabench.evaluate.attribution._loading import LoadedModel
from mtcabench.evaluate.attribution._base import scorer_names
from mtcabench.evaluate.methods._methods import Method, get_methods
from mtcabench.evaluate._settings import TraceSettings
from mtcabench.io import check_outputs_are_not_inputs
from mtcabench.model import BenchmarkSpan, SubmissionHeader
from mtcabench.results import write_submission

if TYPE_CHECKING:
    from mtcabench.evaluate.attribution._base import BaseScorer


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


def shard_conversations(ids: Iterable[str], shard: tuple[int, int] | None) -> set[str]:
    """Conversations of shard K/N: round robin over the sorted ids (all when no shard)."""
    ids = sorted(ids)
    if shard is None:
        return set(ids)
    k, n = shard
    return {cid for i, cid in enumerate(ids) if i % n == k - 1}


def partial_path(out: Path) -> Path:
    """Where an unfinished run keeps its finished conversations, beside the output."""
    return out.with_name(f".{out.name}.partial")


def input_files(bench: Benchmark, *files: str | Path | None) -> list[Path]:
    """The files a run reads: the benchmark's (:meth:`Benchmark.input_paths`) and any other
    given ``files`` (e.g. the AT2 weights)."""
    return bench.input_paths() + [Path(f) for f in files if f is not None]


@dataclass
class RunPlan:
    """A checked run: what to trace, with which methods, into which files."""

    bench: Benchmark
    outputs: dict[str, Path]
    methods: dict[str, Method]
    #: The base scorer's name; None when every method is model-free.
    scorer: str | None
    settings: TraceSettings
    shard: tuple[int, int] | None
    #: ``(conversation id, spans)`` to trace, in benchmark order.
    work: list[tuple[str, list[BenchmarkSpan]]]

    @property
    def uses_model(self) -> bool:
        return self.scorer is not None


def plan_run(
    benchmark: str | Path | Benchmark,
    outputs: Mapping[str, str | Path],
    scorer: str,
    settings: TraceSettings,
    shard: tuple[int, int] | str | None = None,
) -> RunPlan:
    """Check a run before any work (see the module docstring); nothing is loaded but the
    benchmark, and the scorer module only when a method reads a model."""
    shard = parse_shard(shard) if isinstance(shard, str) else shard
    if not isinstance(settings, TraceSettings):
        raise InputError(f"settings must be TraceSettings, got {type(settings).__name__}")
    bench = benchmark if isinstance(benchmark, Benchmark) else load_benchmark(benchmark)
    outs = {m: Path(p) for m, p in outputs.items()}
    if not outs:
        raise InputError("no output: give at least one method and its output path")
    methods = get_methods(outs)
    if len(set(outs.values())) != len(outs):
        raise InputError("each method needs its own output file")
    check_outputs_are_not_inputs(input_files(bench, *settings.input_paths()),
                                 [*outs.values(), *map(partial_path, outs.values())])
    uses_model = any(m.uses_model for m in methods.values())
    if uses_model and scorer not in scorer_names():
        raise InputError(f"unknown scorer {scorer!r}; choose one of {', '.join(scorer_names())}")
    by_conv = bench.spans_by_conversation()
    chosen = shard_conversations(by_conv, shard)
    work = [(cid, spans) for cid, spans in by_conv.items() if cid in chosen]
    return RunPlan(bench, outs, methods, scorer if uses_model else None, settings, shard, work)


def model_parameters(settings: TraceSettings, scorer: BaseScorer, loaded: LoadedModel) -> dict[str, Any]:
    """The settings that shape a model-based method's result besides its own."""
    return {
        "turn_aggregate": settings.turn_aggregate,
        "max_tokens": min(settings.max_tokens or loaded.context_length, loaded.context_length),
        "window_room": settings.window_room,
        "seed": settings.seed,
        "scorer_parameters": scorer.parameters(),
        "tool_calls": "text",
        "dtype": str(next(loaded.model.parameters()).dtype).removeprefix("torch."),
        **({"verify_edges": True} if settings.verify_edges else {}),
    }


def header_parameters(name: str, method: Method, settings: TraceSettings,
                      loaded: LoadedModel | None, scorer: BaseScorer | None) -> dict[str, Any]:
    """What a submission header (and ``explain.json``) records as a method's ``parameters``:
    its own settings, and for a model-based method the model's and the scorer's."""
    params = method.parameters(settings)
    if method.uses_model:
        if loaded is None or scorer is None:
            raise ValueError(f"method {name} needs the loaded model and the scorer")
        params.update(model_parameters(settings, scorer, loaded))
    return params


def make_headers(origin: str, methods: Mapping[str, Method], settings: TraceSettings,
                 shard: tuple[int, int] | None, loaded: LoadedModel | None = None,
                 scorer: BaseScorer | None = None) -> dict[str, SubmissionHeader]:
    """One submission header per method (costs are added to ``notes`` at the end). A
    model-free method's header names no scorer and no model."""
    now = datetime.now(timezone.utc)
    notes: dict[str, Any] = {"mtcabench_version": __version__}
    if shard:
        notes["shard"] = {"index": shard[0], "count": shard[1]}
    headers = {}
    for name, method in methods.items():
        params = header_parameters(name, method, settings, loaded, scorer)
        headers[name] = SubmissionHeader(
            method=name, scorer=scorer.name if method.uses_model else None,
            model=loaded.name if method.uses_model else None, parameters=params,
            benchmark=origin, created_at=now, notes=dict(notes))
    return headers


@dataclass
class TraceReport:
    """What a trace run wrote and what it cost."""

    outputs: dict[str, Path]
    spans: int = 0
    #: Spans some method skipped (the model-based ones skip the same spans, others none).
    skipped: int = 0
    conversations: int = 0
    #: Forward passes of the run, shared by every model-based method.
    forward_passes: int = 0
    resumed_conversations: int = 0
    wall_s: float = 0.0
    notes: dict[str, Any] = field(default_factory=dict)
    skipped_by_method: dict[str, int] = field(default_factory=dict)
    #: Spans past the model's context attributed in a window (model-based methods; the
    #: context-length policy of mtcabench.evaluate.methods._conversation).
    windowed: int = 0
    windowed_by_method: dict[str, int] = field(default_factory=dict)
    #: Per ``source/domain``: ``[spans in a context window, spans]`` (model-based methods).
    windowed_by_domain: dict[str, list[int]] = field(default_factory=dict)


def windowed_by_domain(plan: RunPlan, entries: list[dict]) -> dict[str, list[int]]:
    """Per ``source/domain`` of the run's spans: ``[spans in a context window, spans]``."""
    windowed = {e["span_id"] for e in entries if e.get("window")}
    out: dict[str, list[int]] = {}
    for cid, spans in plan.work:
        conv = plan.bench.conversations[cid]
        row = out.setdefault(f"{conv.source}/{conv.domain}", [0, 0])
        row[0] += sum(s.id in windowed for s in spans)
        row[1] += len(spans)
    return dict(sorted(out.items()))


def finish_run(plan: RunPlan, headers: Mapping[str, SubmissionHeader],
               entries: Mapping[str, list[dict]], report: TraceReport, *,
               notes: Mapping[str, Any] = (), model_notes: Mapping[str, Any] = ()) -> TraceReport:
    """Write every method's submission with the run's costs in its header's notes (``notes``
    for all, ``model_notes`` for model-based methods only); remove the partial files."""
    for name, out in plan.outputs.items():
        es = entries[name]
        uses_model = plan.methods[name].uses_model
        report.skipped_by_method[name] = sum(1 for e in es if e.get("skipped"))
        report.windowed_by_method[name] = sum(1 for e in es if e.get("window"))
        if uses_model:
            report.windowed_by_domain = windowed_by_domain(plan, es)
        header = headers[name]
        header.notes.update({
            "spans": len(es),
            "skipped": report.skipped_by_method[name],
            "windowed": report.windowed_by_method[name],
            **({"windowed_by_domain": report.windowed_by_domain}
               if uses_model and report.windowed_by_method[name] else {}),
            "conversations": report.conversations,
            "forward_passes": report.forward_passes if uses_model else 0,
            "wall_s": round(report.wall_s, 2),
            **dict(notes), **(dict(model_notes) if uses_model else {}),
        })
        write_submission(out, header, es)
        partial_path(out).unlink(missing_ok=True)
    report.spans = sum(len(spans) for _, spans in plan.work)
    report.skipped = max(report.skipped_by_method.values(), default=0)
    report.windowed = max(report.windowed_by_method.values(), default=0)
    return report
