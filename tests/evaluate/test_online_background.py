"""The Tracer never makes the agent wait (real model): `add` returns while the model is still
running over earlier turns in the background worker, `explain` after the worker is done runs
no forward pass and gives the graphs of a tracer that ran the model in the calling thread, and
a failure of the worker is raised in the agent's thread."""

from __future__ import annotations

import threading

import pytest

from mtcabench.evaluate import Tracer
from mtcabench.ingest import read_taubench
from mtcabench.model import Role

pytestmark = pytest.mark.model


def test_add_returns_while_the_model_runs_in_the_background(loaded, sample_path, monkeypatch):
    conv = next(read_taubench(sample_path))
    real = type(loaded.model).forward
    release, running = threading.Event(), threading.Event()
    threads = []

    def held(self, *a, **k):  # a model that takes as long as the test wants
        threads.append(threading.current_thread().name)
        running.set()
        assert release.wait(60), "the test never released the model"
        return real(self, *a, **k)

    tracer = Tracer(loaded)
    monkeypatch.setattr(type(loaded.model), "forward", held)
    tracer.add(conv.turns[0])
    assert running.wait(60)  # the worker is inside the model ...
    for turn in conv.turns[1:]:
        tracer.add(turn)  # ... and every add still returns (it would hang if it waited)
    assert tracer.pending_tokens > 0 and not release.is_set()
    release.set()
    graph = tracer.explain()  # waits for the pass in progress, then catches up
    assert tracer.pending_tokens == 0 and graph.edges
    # The first pass ran in the worker (explain may run what was still waiting itself).
    assert threads[0].startswith("mtcabench-tracer")

    # The same graphs as a tracer that runs the model in the calling thread.
    monkeypatch.setattr(type(loaded.model), "forward", real)
    inline = Tracer(loaded, background=False)
    inline.extend(conv.turns)
    want = inline.explain()  # passes split differently: scores equal up to float error
    assert [e.pair for e in want.edges] == [e.pair for e in graph.edges]
    assert [e.score for e in graph.edges] == pytest.approx([e.score for e in want.edges],
                                                           abs=1e-4)
    tracer.close()


def test_explain_after_the_wait_runs_no_forward_pass(loaded, sample_path, monkeypatch):
    conv = next(read_taubench(sample_path))
    tracer = Tracer(loaded)
    for turn in conv.turns:
        tracer.add(turn)
    calls = []
    real = type(loaded.model).forward
    monkeypatch.setattr(type(loaded.model), "forward",
                        lambda self, *a, **k: calls.append(1) or real(self, *a, **k))
    tracer.flush()  # what the agent's LLM wait gives the worker: time to finish
    calls.clear()
    last = max(t.index for t in conv.turns if t.role is Role.ASSISTANT and t.content.strip())
    graph = tracer.explain(last)
    assert graph.target == last and not calls
    tracer.close()


def test_a_failure_in_the_worker_is_raised_in_the_agents_thread(loaded, sample_path,
                                                                monkeypatch):
    conv = next(read_taubench(sample_path))

    def broken(self, *a, **k):
        raise RuntimeError("out of memory in the background")

    tracer = Tracer(loaded)
    monkeypatch.setattr(type(loaded.model), "forward", broken)
    tracer.add(conv.turns[0])  # returns: the failure happens in the worker
    with pytest.raises(RuntimeError, match="out of memory in the background"):
        tracer.flush()
    tracer.close()
