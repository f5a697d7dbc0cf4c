"""Tracing a benchmark on this machine: every conversation (or one shard), resumable.

:func:`trace_benchmark` checks the run (mtcabench.evaluate.runners._run), loads the model and the base
scorer only when a model-based method is asked, traces each conversation once for all
methods (:func:`~mtcabench.evaluate.methods._conversation.trace_conversation`), and writes each
method's submission. It resumes after a crash: finished conversations are appended to a
``.<name>.partial`` file beside each output; a rerun with the same settings skips them, and the
final file (header, then one entry per span in benchmark order) replaces the partial at the end.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

from mtcabench.benchmark import Benchmark
from mtcabench.errors import InputError
from mtcabench.evaluate.attribution._engine import load_attributor
from mtcabench.evaluate.methods._conversation import trace_conversation
from mtcabench.evaluate.attribution._loading import DEFAULT_MODEL, LoadedModel
from mtcabench.evaluate.runners._run import (
    TraceReport,
    finish_run,
    make_headers,
    partial_path,
    plan_run,
)
from mtcabench.evaluate._settings import (
    DEFAULT_DEVICE,
    DEFAULT_DTYPE,
    DEFAULT_SCORER,
    TraceSettings,
)
from mtcabench.io import RecordAppender, dump_record, iter_json_lines
from mtcabench.model import SubmissionEntry, SubmissionHeader
from mtcabench.progress import progress_bar


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


def trace_benchmark(
    benchmark: str | Path | Benchmark,
    outputs: Mapping[str, str | Path],
    *,
    model: str | LoadedModel = DEFAULT_MODEL,
    scorer: str = DEFAULT_SCORER,
    settings: TraceSettings = TraceSettings(),
    shard: tuple[int, int] | str | None = None,
    naive: bool = False,
    progress: bool = True,
    device: str = DEFAULT_DEVICE,
    dtype: str = DEFAULT_DTYPE,
) -> TraceReport:
    """Trace a benchmark with one or more methods (``{"tokengeist": path, "flat": path}``).

    ``model`` is a name (loaded here, on ``device`` in ``dtype``) or an already loaded model;
    it and ``scorer`` are used only by model-based methods (no model is loaded when every
    method is model-free). All methods share the forward passes of each conversation.
    Resumes an interrupted run with the same settings; see the module docstring.
    """
    start = time.perf_counter()
    plan = plan_run(benchmark, outputs, scorer, settings, shard)
    loaded = scorer_obj = attributor = None
    if plan.uses_model:
        attributor = load_attributor(model, plan.scorer, settings, device, dtype)
        loaded, scorer_obj = attributor.loaded, attributor.scorer
    headers = make_headers(plan.bench.origin, plan.methods, settings, plan.shard, loaded,
                           scorer_obj)
    outs = plan.outputs
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

    report = TraceReport(outputs=outs, conversations=len(plan.work))
    label = f"trace {'+'.join(outs)}" + (f" / {scorer_obj.name}" if scorer_obj else "")
    try:
        with progress_bar(label, sum(len(s) for _, s in plan.work), enabled=progress) as bar:
            for cid, spans in plan.work:
                if all(s.id in done[m] for m in outs for s in spans):
                    report.resumed_conversations += 1
                    bar.advance(len(spans))
                    continue
                result = trace_conversation(attributor, plan.bench.conversations[cid], spans,
                                            plan.methods, settings, naive=naive)
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
    order = [s.id for _, spans in plan.work for s in spans]
    entries = {m: [done[m][sid] for sid in order] for m in outs}
    return finish_run(plan, headers, entries, report,
                      notes={"resumed_conversations": report.resumed_conversations},
                      model_notes={"device": str(loaded.device)} if loaded else {})
