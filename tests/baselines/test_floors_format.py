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
                assert via_trace.nodes == FLOORS[name].graph(conv, span).nodes
                compared += 1
    assert compared > 1000
    # What the submission header records is the floor's own parameters.
    for name, floor in FLOORS.items():
        assert METHODS.get(name)().parameters(TraceSettings()) == floor.parameters
    assert list(FLOORS) == ["recency", "first-user", "string-match"]


@pytest.mark.slow  # a few seconds: a fresh interpreter or a whole run
def test_baselines_import_neither_a_stage_nor_torch():
    code = ("import sys, mtcabench.baselines; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('torch', 'numpy') "
            "or m.startswith(('mtcabench.evaluate', 'mtcabench.scoring', 'mtcabench.release'))]; "
            "print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_string_match_traces_the_values_inside_the_span_and_nothing_else(sample_path):
    """The lineage rules as a method: a span that copies a value gets the lineage chain of
    that value (what the lineage annotator proposes for it), a claim that copies nothing
    gets no edge, and trace's method gives the same graph."""
    from mtcabench.graph import check_graph
    from mtcabench.lineage import propose_lineage

    convs = {c.id: c for c in read_taubench(sample_path)}
    # The copied values (a derived amount or a contradiction is not a copy: string matching
    # finds no chain for those).
    candidates = [c for c in propose_lineage(convs.values())
                  if (c.rationale or "").startswith("copied")]
    assert len(candidates) > 10
    method = METHODS.get("string-match")()
    assert not method.uses_model
    for cand in candidates:
        conv = convs[cand.conversation_id]
        graph = FLOORS["string-match"].graph(conv, cand.span)
        assert graph.pairs() >= cand.graph.pairs()  # a value's own chain, at least
        assert check_graph(graph, conv, cand.span) == []
        assert edges(method.graph(conv, cand.span, None, SearchSettings())) == edges(graph)
    # A clause with no value of the conversation in it copies nothing: no edge.
    conv = next(iter(convs.values()))
    answer = next(t for t in conv.turns if t.role is Role.ASSISTANT and t.content.strip())
    words = "I am sorry about that"
    assert words not in answer.content
    fake = conv.model_copy(deep=True)
    fake.turns[answer.index].content = words
    graph = FLOORS["string-match"].graph(fake, TargetSpan(turn=answer.index, start=0,
                                                            end=len(words), text=words))
    assert graph.edges == []
