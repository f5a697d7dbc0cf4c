"""Fixtures of the evaluator tests: real TauBench benchmarks, no Tracer left running (the
model and the sample benchmark are tests/conftest.py's)."""

from __future__ import annotations

import gc
import threading
from itertools import islice
from pathlib import Path

import pytest

from mtcabench.ingest import read_taubench


@pytest.fixture(scope="session")
def taubench_conversations(taubench_airline):
    """The first 40 real TauBench airline conversations."""
    return list(islice(read_taubench(taubench_airline), 40))


@pytest.fixture(scope="session")
def taubench_short_benchmark(taubench_conversations, tmp_path_factory) -> Path:
    """Two short real TauBench conversations, two answer spans each (trace-only gold)."""
    from tests.support.smoke import answer_span_benchmark

    by_len = sorted(taubench_conversations, key=lambda c: sum(len(t.text) for t in c.turns))
    return answer_span_benchmark(by_len[:2], tmp_path_factory.mktemp("tau-bench"))


@pytest.fixture(autouse=True)
def _empty_prefix_caches():
    """The pass service keeps prefixes and sink probes of a model across conversations, and the
    test models live for the session: a test that counts passes starts with none kept."""
    from mtcabench.evaluate.attribution._passes import clear_prefix_caches

    clear_prefix_caches()


@pytest.fixture(autouse=True)
def _no_tracer_left_running():
    """A Tracer's background worker may still be running the shared model when its test ends
    (a test need not wait for it): finish that pass and stop every worker, so that the next
    test, which may count or replace the model's passes, sees only its own."""
    yield
    if not any(t.name.startswith("mtcabench-tracer") for t in threading.enumerate()):
        return
    from mtcabench.evaluate.online._tracer import Tracer

    gc.collect()
    for obj in gc.get_objects():
        if isinstance(obj, Tracer):
            obj.close()  # waits for a pass in progress
