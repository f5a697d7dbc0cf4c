"""`--verify-edges`: every content edge checked by leaving its parent turn out (real model)."""

from __future__ import annotations

import pytest

from mtcabench.benchmark import load_benchmark
from mtcabench.evaluate import Query, TraceSettings, load_attributor, render_conversation
from mtcabench.evaluate.attribution._ablation import edge_drops
from mtcabench.evaluate.methods._conversation import attribute_spans
from mtcabench.evaluate.methods._methods import get_methods
from mtcabench.graph import check_graph

pytestmark = pytest.mark.model


def test_verified_graphs_keep_only_edges_whose_parent_helps(loaded, sample_benchmark):
    bench = load_benchmark(sample_benchmark)
    conv_id = bench.spans[0].conversation_id
    conv = bench.conversations[conv_id]
    targets = {s.id: s.span for s in bench.spans if s.conversation_id == conv_id}
    methods = get_methods(["tokengeist"])
    att = load_attributor(loaded, "avg-attention", TraceSettings())
    plain = attribute_spans(att, conv, targets, methods, TraceSettings())
    checked = attribute_spans(att, conv, targets, methods, TraceSettings(verify_edges=True))
    parents = {e.parent for g in plain.graphs["tokengeist"].values() for e in g.edges
               if e.score is not None}
    # the attention pass, then the whole pass and one per distinct parent turn
    assert checked.forward_passes == 1 + 1 + len(parents)
    rendered = render_conversation(conv, loaded.tokenizer)

    def query(key, child):
        t = targets[key]
        if child == t.turn:
            return Query(("span", key), t.turn, t.start, t.end)
        return Query(child, child, 0, len(conv.turns[child].text))

    checks = {(query(k, e.child), e.parent) for k, g in plain.graphs["tokengeist"].items()
              for e in g.edges if e.score is not None}
    drops, passes = edge_drops(loaded, rendered, sorted(checks, key=str))
    assert passes == 1 + len(parents)
    removed = 0
    for key, g in checked.graphs["tokengeist"].items():
        before = plain.graphs["tokengeist"][key]
        kept = {e.pair for e in g.edges}
        assert kept <= {e.pair for e in before.edges}
        assert check_graph(g, conv) == []
        removed += len(before.edges) - len(g.edges)
        for e in before.edges:
            if e.score is not None:
                drop = drops[query(key, e.child).key, e.parent]
                assert e.pair not in kept or drop > 0  # kept: leaving the parent out hurts
    print(f"verification removed {removed} of "
          f"{sum(len(g.edges) for g in plain.graphs['tokengeist'].values())} edges")
