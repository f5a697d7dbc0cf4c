"""Running a trace on Ray Data: one conversation per unit, one model per worker.

For users with many GPUs and an existing Ray cluster (``pip install 'mtcabench[ray]'``). The
benchmark's conversations become a Ray dataset of one row each; a pool of actors, each holding
the model once, maps rows to submission entries with :func:`trace_conversation` (the same code
as the local run, so results are identical); the driver writes the submissions. The driver
does not load the model: headers come from the workers and must agree.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from mtcabench.benchmark import Benchmark, load_benchmark
from mtcabench.errors import InputError
from mtcabench.evaluate._engine import Attributor
from mtcabench.evaluate._loading import DEFAULT_MODEL, load_model
from mtcabench.evaluate._scorers import SCORERS
from mtcabench.evaluate._tokengeist import METHODS
from mtcabench.evaluate._trace import (
    TraceReport,
    TraceSettings,
    group_spans,
    make_headers,
    make_scorer,
    trace_conversation,
    write_submission,
)
from mtcabench.io import dump_record
from mtcabench.model import BenchmarkSpan, Conversation, SubmissionHeader


class _TraceWorker:
    """A Ray actor: loads the model once, traces one conversation per row."""

    def __init__(self, model: str, scorer: str, settings: dict, methods: list[str],
                 device: str, dtype: str, origin: str):
        self.settings = TraceSettings(**settings)
        self.methods = methods
        self.loaded = load_model(model, device=device, dtype=dtype)
        scorer_obj = make_scorer(scorer, self.settings, self.loaded)
        self.headers = {m: dump_record(h) for m, h in make_headers(
            origin, methods, self.loaded, scorer_obj, self.settings, None).items()}
        self.attributor = Attributor(self.loaded, scorer_obj, seed=self.settings.seed,
                                     aggregate=self.settings.turn_aggregate)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, Any]:
        out: dict[str, list] = {"conversation_id": [], "entries": [], "forward_passes": [],
                                "headers": []}
        for conv_json, spans_json in zip(batch["conversation"], batch["spans"]):
            conv = Conversation.model_validate_json(conv_json)
            spans = [BenchmarkSpan.model_validate(s) for s in json.loads(spans_json)]
            result = trace_conversation(self.attributor, conv, spans, self.methods, self.settings)
            out["conversation_id"].append(conv.id)
            out["entries"].append(json.dumps(
                {m: [dump_record(e) for e in es] for m, es in result.entries.items()}))
            out["forward_passes"].append(result.forward_passes)
            out["headers"].append(json.dumps(self.headers, default=str))
        return out


def trace_with_ray(
    benchmark: str | Path | Benchmark,
    outputs: Mapping[str, str | Path],
    *,
    model: str = DEFAULT_MODEL,
    scorer: str = "avg-attention",
    settings: TraceSettings = TraceSettings(),
    workers: int = 1,
    gpus_per_worker: float = 0,
    cpus_per_worker: float = 1,
    device: str = "auto",
    dtype: str = "auto",
    address: str | None = None,
) -> TraceReport:
    """Trace a benchmark on Ray Data (starts a local runtime unless one is running or
    ``address`` names a cluster); writes the same submissions as :func:`trace_benchmark`."""
    try:
        import ray
        import ray.data
    except ImportError:
        raise InputError("--ray needs Ray Data: pip install 'mtcabench[ray]'") from None
    start = time.perf_counter()
    bench = benchmark if isinstance(benchmark, Benchmark) else load_benchmark(benchmark)
    outs = {m: Path(p) for m, p in outputs.items()}
    for m in outs:
        if m not in METHODS:
            raise InputError(f"unknown method {m!r}; choose one of {', '.join(METHODS)}")
    if scorer not in SCORERS:
        raise InputError(f"unknown scorer {scorer!r}; choose one of {', '.join(sorted(SCORERS))}")
    try:
        _ = settings.search  # validates the search parameters before any worker starts
    except ValueError as exc:
        raise InputError(str(exc)) from None
    by_conv = group_spans(bench)
    rows = [{"conversation": bench.conversations[cid].model_dump_json(),
             "spans": json.dumps([dump_record(s) for s in spans])}
            for cid, spans in by_conv.items()]
    if not rows:
        raise InputError(f"{bench.origin}: the benchmark has no spans to trace")
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False,
                 ignore_reinit_error=True)
    ds = ray.data.from_items(rows).repartition(len(rows))
    ds = ds.map_batches(
        _TraceWorker,
        fn_constructor_kwargs=dict(model=model, scorer=scorer, settings=asdict(settings),
                                   methods=list(outs), device=device, dtype=dtype,
                                   origin=bench.origin),
        batch_size=1,
        concurrency=workers,
        num_gpus=gpus_per_worker or None,
        num_cpus=cpus_per_worker,
    )
    results = {r["conversation_id"]: r for r in ds.iter_rows()}
    missing = set(by_conv) - set(results)
    if missing:
        raise InputError(f"Ray returned no result for {len(missing)} conversations")
    headers = {json.dumps(json.loads(r["headers"]), sort_keys=True) for r in results.values()}
    if len(headers) != 1:
        raise InputError("Ray workers disagree on the run settings (different model versions?)")
    header_objs = json.loads(next(iter(headers)))
    report = TraceReport(outputs=outs, conversations=len(rows))
    report.forward_passes = int(sum(int(r["forward_passes"]) for r in results.values()))
    report.wall_s = time.perf_counter() - start
    for m, out in outs.items():
        entries = [e for cid in by_conv for e in json.loads(results[cid]["entries"])[m]]
        header = SubmissionHeader.model_validate(header_objs[m])
        header.notes.update({
            "spans": len(entries), "skipped": sum(1 for e in entries if e.get("skipped")),
            "conversations": len(rows), "forward_passes": report.forward_passes,
            "wall_s": round(report.wall_s, 2), "runner": "ray", "workers": workers,
        })
        report.spans, report.skipped = len(entries), header.notes["skipped"]
        write_submission(out, header, entries)
    return report
