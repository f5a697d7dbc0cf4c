"""`score` on a benchmark holding counterfactual spans: every metric by origin, and
hallucinated-source recall of each origin's hallucinations with intervals, floors beside."""

from __future__ import annotations

import json

from mtcabench.lineage import conversation_counterfactuals, propose_lineage
from mtcabench.benchmark import Benchmark
from mtcabench.graph import depth, path_hops, sources
from mtcabench.model import BenchmarkSpan, DecisionSource, EdgeKind, SpanOrigin, Verdict
from mtcabench.scoring.scorer import floor_reports, groups
from mtcabench.model import Conversation, Role, ToolCall, Turn

FLIGHTS = [
    {"flight_number": "HAT069", "origin": "JFK", "destination": "SEA",
     "scheduled_departure_time_est": "06:00:00", "prices": {"economy": 121, "business": 239}},
    {"flight_number": "HAT083", "origin": "JFK", "destination": "SEA",
     "scheduled_departure_time_est": "19:00:00", "prices": {"economy": 1348, "business": 400}},
]


def search_conv() -> Conversation:
    """A search for flights and an answer copying one flight's number, time and price (the
    conversation of tests/annotate/lineage/test_counterfactual.py)."""
    call = ToolCall(id="c1", name="search_direct_flight",
                    arguments={"origin": "JFK", "destination": "SEA", "date": "2024-05-20"})
    texts = [(Role.SYSTEM, "Policy. The current time is 2024-05-15 15:00:00 EST."),
             (Role.USER, "Flights from JFK to SEA on 2024-05-20, please.")]
    turns = [Turn(index=i, role=r, content=t) for i, (r, t) in enumerate(texts)]
    turns += [Turn(index=2, role=Role.ASSISTANT, tool_calls=[call]),
              Turn(index=3, role=Role.TOOL, content=json.dumps(FLIGHTS), tool_call_id="c1"),
              Turn(index=4, role=Role.ASSISTANT, content="The cheapest is flight HAT069, "
                   "departing at 06:00 AM, economy $121.")]
    return Conversation(id="t/cf", source="taubench", domain="airline", turns=turns)


def _span(cand, conv) -> BenchmarkSpan:
    return BenchmarkSpan(
        id=cand.id, conversation_id=conv.id, source="taubench", domain="airline",
        span=cand.span, dependency_type=cand.dependency_type, graph=cand.graph,
        depth=depth(cand.graph), sources=sources(cand.graph, conv),
        decision_source=DecisionSource.AUTO, verdict=Verdict.ACCEPT,
        annotator=cand.annotator, origin=cand.origin, counterfactual=cand.counterfactual)


def bench(with_counterfactuals: bool) -> Benchmark:
    conv = search_conv()
    convs = {conv.id: conv}
    spans = [_span(c, conv) for c in propose_lineage([conv])]
    if with_counterfactuals:
        for edited, c in conversation_counterfactuals(conv, per_conversation=5):
            convs[edited.id] = edited
            spans.append(_span(c, edited))
    return Benchmark(convs, spans, "test")


def test_rows_by_origin_only_where_there_are_counterfactual_spans():
    real = bench(False)
    assert {g.breakdown for g in groups(real.spans)} == {"overall", "dependency_type", "source",
                                                         "depth"}
    both = bench(True)
    rows = {(g.breakdown, g.group): len(g.indices) for g in groups(both.spans)}
    n_real = len(real.spans)
    assert rows["origin", "real"] == n_real and rows["origin", "counterfactual"] == 3
    assert rows["origin_hallucination", "counterfactual hallucination"] == 3
    assert rows["origin_hallucination", "real other"] == n_real


def test_hallucinated_source_recall_by_origin_with_intervals_beside_the_floors():
    b = bench(True)
    for floor in floor_reports(b, resamples=50, seed=1):
        cf = floor.row("origin", "counterfactual")
        real = floor.row("origin", "real")
        hal = cf.metrics["hallucinated_source_recall"].macro
        assert cf.hallucination_spans == 3 and hal.value is not None
        assert hal.low is not None and hal.low <= hal.value <= hal.high
        # the real spans hold no hallucination: undefined there, not zero
        assert real.metrics["hallucinated_source_recall"].macro.value is None
        assert real.metrics["edge_f1"].macro.value is not None
    # recency links the answer to the search result it read: every gold source recovered
    recency = next(f for f in floor_reports(b, resamples=0) if f.method == "recency")
    assert recency.row("origin", "counterfactual").metrics[
        "hallucinated_source_recall"].macro.value == 1.0


def test_path_hops_split_the_depth_into_content_and_call_structure():
    b = bench(True)
    made = [s for s in b.spans if s.origin is SpanOrigin.COUNTERFACTUAL][0]
    # answer -> search result (content) -> its call (structure) -> the user (content)
    assert depth(made.graph) == 3 and path_hops(made.graph) == (2, 1)
    assert sum(e.kind is EdgeKind.STRUCTURAL for e in made.graph.edges) == 1
