"""Running a trace on Ray Data: one conversation per unit, one model per worker.

For users with many GPUs and an existing Ray cluster (``pip install 'mtcabench[ray]'``). The
benchmark's conversations become a Ray dataset of one row each; a pool of actors, each holding
the model once (none when every method is model-free), maps rows to submission entries with
:func:`trace_conversation` (the same code as the local run, so results are identical); the
driver checks the run and writes the submissions with the local runner's own check and finish
(mtcabench.evaluate.runners._run). The driver does not load the model: headers come from the workers
and must agree.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from mtcabench.benchmark import Benchmark
from mtcabench.errors import InputError
from mtcabench.evaluate.attribution._engine import load_attributor
from mtcabench.evaluate.methods._conversation import trace_conversation
from mtcabench.evaluate.attribution._loading import DEFAULT_MODEL
from mtcabench.evaluate.methods._methods import get_methods
from mtcabench.evaluate.runners._run import (
    TraceReport,
    finish_run,
    make_headers,
    plan_run,
)
from mtcabench.evaluate._settings import (
    DEFAULT_DEVICE,
    DEFAULT_DTYPE,
    DEFAULT_SCORER,
    RAY,
    TraceSettings,
)
from mtcabench.io import dump_record
from mtcabench.model import BenchmarkSpan, Conversation, SubmissionHeader


class _TraceWorker:
    """A Ray actor: loads the model once (if a method needs it), traces one conversation per row."""

    def __init__(self, model: str, scorer: str | None, settings: TraceSettings,
                 methods: list[str], device: str, dtype: str, origin: str):
        self.settings = settings
        self.methods = get_methods(methods)
        loaded = scorer_obj = self.attributor = None
        if scorer is not None:  # the driver's plan: some method reads a model
            self.attributor = load_attributor(model, scorer, settings, device, dtype)
            loaded, scorer_obj = self.attributor.loaded, self.attributor.scorer
        self.headers = {m: dump_record(h) for m, h in make_headers(
            origin, self.methods, settings, None, loaded, scorer_obj).items()}

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
    scorer: str = DEFAULT_SCORER,
    settings: TraceSettings = TraceSettings(),
    workers: int = RAY.workers,
    gpus_per_worker: float = RAY.gpus_per_worker,
    cpus_per_worker: float = RAY.cpus_per_worker,
    device: str = DEFAULT_DEVICE,
    dtype: str = DEFAULT_DTYPE,
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
    plan = plan_run(benchmark, outputs, scorer, settings)  # before any worker starts
    bench = plan.bench
    rows = [{"conversation": bench.conversations[cid].model_dump_json(),
             "spans": json.dumps([dump_record(s) for s in spans])}
            for cid, spans in plan.work]
    if not rows:
        raise InputError(f"{bench.origin}: the benchmark has no spans to trace")
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False,
                 ignore_reinit_error=True)
    ds = ray.data.from_items(rows).repartition(len(rows))
    ds = ds.map_batches(
        _TraceWorker,
        fn_constructor_kwargs=dict(model=model, scorer=plan.scorer, settings=settings,
                                   methods=list(plan.methods), device=device, dtype=dtype,
                                   origin=bench.origin),
        batch_size=1,
        concurrency=workers,
        num_gpus=(gpus_per_worker or None) if plan.uses_model else None,
        num_cpus=cpus_per_worker,
    )
    results = {r["conversation_id"]: r for r in ds.iter_rows()}
    missing = {cid for cid, _ in plan.work} - set(results)
    if missing:
        raise InputError(f"Ray returned no result for {len(missing)} conversations")
    headers = {json.dumps(json.loads(r["headers"]), sort_keys=True) for r in results.values()}
    if len(headers) != 1:
        raise InputError("Ray workers disagree on the run settings (different model versions?)")
    header_objs = {m: SubmissionHeader.model_validate(h)
                   for m, h in json.loads(next(iter(headers))).items()}
    report = TraceReport(outputs=plan.outputs, conversations=len(rows))
    report.forward_passes = int(sum(int(r["forward_passes"]) for r in results.values()))
    report.wall_s = time.perf_counter() - start
    entries = {m: [e for cid, _ in plan.work for e in json.loads(results[cid]["entries"])[m]]
               for m in plan.outputs}
    return finish_run(plan, header_objs, entries, report,
                      notes={"runner": "ray", "workers": workers})
