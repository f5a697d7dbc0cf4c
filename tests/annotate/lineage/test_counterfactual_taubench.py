"""The counterfactual split on the 200 real TauBench airline runs: how many, of which fields
and depths, and every graph valid and quoted."""

from __future__ import annotations

from collections import Counter

import pytest

from mtcabench.lineage import propose_counterfactuals
from mtcabench.graph import check_graph, depth
from mtcabench.ingest import read_taubench


@pytest.fixture(scope="module")
def made(taubench_airline):
    convs = {c.id: c for c in read_taubench(taubench_airline)}
    return convs, list(propose_counterfactuals(convs.values()))


def test_several_hundred_spans_spread_over_fields_and_depths(made):
    _, pairs = made
    assert len(pairs) == 328  # pinned: a change of the edit rules is a new version
    fields = Counter(c.counterfactual.field for _, c in pairs)
    assert len(fields) >= 12 and max(fields.values()) < len(pairs) / 3
    depths = Counter(depth(c.graph) for _, c in pairs)
    assert len(depths) >= 10 and max(depths) >= 12
    assert len({c.counterfactual.conversation_id for _, c in pairs}) >= 100


def test_every_edit_is_exact(made):
    convs, pairs = made
    assert len({c.id for _, c in pairs}) == len(pairs)
    for edited, c in pairs:
        e = c.counterfactual
        real = convs[e.conversation_id]
        assert c.span.text == e.replacement != e.original
        answer = real.turns[c.span.turn].content
        assert answer[c.span.start:c.span.start + len(e.original)] == e.original
        assert edited.turns[:c.span.turn] == real.turns[:c.span.turn]
        assert check_graph(c.graph, edited, c.span, record=c.id) == []
        assert edited.turns[e.source_turn].text[e.source_start:e.source_end] == e.source_quote
        assert any(x.pair == (c.span.turn, e.source_turn) for x in c.graph.edges)
        for x in c.graph.edges:
            assert edited.turns[x.parent].text[x.evidence.start:x.evidence.end] == \
                x.evidence.quote
