"""`score` on a benchmark of several domains and agents: rows per domain and per agent model,
each with its interval, and none where the benchmark holds one domain and one agent."""

from __future__ import annotations

from mtcabench.lineage import propose_lineage
from mtcabench.benchmark import Benchmark
from mtcabench.scoring.scorer import floor_reports, groups
from tests.scoring.test_origin_rows import _span, search_conv


def _conv(cid: str, domain: str, agent: str | None):
    return search_conv().model_copy(update={"id": cid, "domain": domain, "agent_model": agent})


def _bench(convs) -> Benchmark:
    spans = []
    for conv in convs:
        spans += [_span(c, conv).model_copy(update={"domain": conv.domain})
                  for c in propose_lineage([conv])]
    return Benchmark({c.id: c for c in convs}, spans, "test")


def test_rows_per_domain_and_agent_model_only_where_there_are_several():
    one = _bench([_conv("t/a", "airline", "gpt-4o"), _conv("t/b", "airline", "gpt-4o")])
    agents = [one.conversation_of(s).agent_model for s in one.spans]
    assert {g.breakdown for g in groups(one.spans, agents)} == {
        "overall", "dependency_type", "source", "depth"}

    many = _bench([_conv("t/a", "airline", "gpt-4o"), _conv("t/b", "retail", "gpt-4o"),
                   _conv("t/c", "retail", "o3"), _conv("t/d", "telecom", None)])
    per_conv = len(many.spans) // 4
    agents = [many.conversation_of(s).agent_model for s in many.spans]
    rows = {(g.breakdown, g.group): len(g.indices) for g in groups(many.spans, agents)}
    assert {k: v for k, v in rows.items() if k[0] == "domain"} == {
        ("domain", "airline"): per_conv, ("domain", "retail"): 2 * per_conv,
        ("domain", "telecom"): per_conv}
    assert {k: v for k, v in rows.items() if k[0] == "agent_model"} == {
        ("agent_model", "gpt-4o"): 2 * per_conv, ("agent_model", "o3"): per_conv,
        ("agent_model", "unknown"): per_conv}


def test_the_report_gives_each_domain_and_agent_its_interval():
    b = _bench([_conv("t/a", "airline", "gpt-4o"), _conv("t/b", "retail", "o3")])
    report = floor_reports(b, resamples=50, seed=1)[0]
    for breakdown, group in (("domain", "retail"), ("agent_model", "o3")):
        row = report.row(breakdown, group)
        assert row.spans == len(b.spans) // 2
        est = row.metrics["edge_f1"].macro
        assert est.low is not None and est.low <= est.value <= est.high
    assert report.row("domain", "retail").title == "domain: retail"
