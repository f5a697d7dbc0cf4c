"""The format layer's model-free baselines (mtcabench.baselines): identical to trace's methods,
and importable where scores are shown without the evaluator."""

from __future__ import annotations

import subprocess
import sys
from itertools import islice

import pytest

from mtcabench.baselines import FLOORS, first_user, recency
from mtcabench.evaluate import METHODS, SearchSettings, TraceSettings
from mtcabench.ingest import read_taubench
from mtcabench.model import Role, TargetSpan


def edges(graph) -> list[tuple]:
    return [(e.child, e.parent, e.kind, e.score) for e in graph.edges]


def test_the_trace_methods_build_the_format_layer_graphs(sample_path, taubench_airline):
    convs = [*read_taubench(sample_path), *islice(read_taubench(taubench_airline), 60)]
    compared = 0
    for conv in convs:
        for turn in conv.turns:
            if turn.role is not Role.ASSISTANT:
                continue
            span = TargetSpan(turn=turn.index, start=0, end=1, text=turn.text[:1])
            for name, fn in (("recency", recency), ("first-user", first_user)):
                method = METHODS.get(name)()
                assert not method.uses_model
                via_trace = method.graph(conv, span, None, SearchSettings())
                assert edges(via_trace) == edges(fn(conv, turn.index))
                assert via_trace.nodes == FLOORS[name].graph(conv, turn.index).nodes
                compared += 1
    assert compared > 1000
    # What the submission header records is the floor's own parameters.
    for name, floor in FLOORS.items():
        assert METHODS.get(name)().parameters(TraceSettings()) == floor.parameters
    assert list(FLOORS) == ["recency", "first-user"]


@pytest.mark.slow  # a few seconds: a fresh interpreter or a whole run
def test_baselines_import_neither_a_stage_nor_torch():
    code = ("import sys, mtcabench.baselines; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('torch', 'numpy') "
            "or m.startswith(('mtcabench.evaluate', 'mtcabench.scoring', 'mtcabench.release'))]; "
            "print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"
