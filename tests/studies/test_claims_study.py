"""The claims study (mtcabench.studies._claims): its sample is every claim of a split, its
table has rows by claim kind with the floors beside the methods, its error table counts edges
by the parent's role (tiny model: the mechanics, not the figures)."""

from __future__ import annotations

from dataclasses import replace

from mtcabench.annotate.claims import read_annotations
from mtcabench.baselines import FLOORS
from mtcabench.benchmark import Benchmark
from mtcabench.ingest import read_taubench
from mtcabench.model import BenchmarkSpan, DecisionSource, Verdict
from mtcabench.evaluate import SearchSettings
from mtcabench.studies import (
    Models,
    SearchPoint,
    ResultStore,
    claim_errors,
    claim_table,
    claim_units,
    claims_of,
    first_hop_shares,
    run_units,
    search_table,
)
from mtcabench.graph import depth, sources

from tests.support.sample_claims import write_sample_claims

#: The sample's tasks renamed into the dev split (task id 0 and 5 mod 5 = 0).
DEV_TASK = {"s1": "0", "s2": "5", "s3": "10"}


def _bench(sample_path, tmp_path) -> Benchmark:
    convs = {c.id: c for c in read_taubench(sample_path)}
    p1, _ = write_sample_claims(tmp_path)
    out_convs, spans = {}, []
    for cand in read_annotations(p1, convs):
        conv = convs[cand.conversation_id]
        task = conv.id.split("/task-")[1].split("/")[0]
        cid = conv.id.replace(f"task-{task}", f"task-{DEV_TASK[task]}")
        out_convs[cid] = conv.model_copy(update={"id": cid})
        spans.append(BenchmarkSpan(
            id=f"{cid}#{cand.span.turn}:{cand.span.start}-{cand.span.end}", conversation_id=cid,
            source=conv.source, domain=conv.domain, span=cand.span,
            dependency_type=cand.dependency_type, graph=cand.graph, depth=depth(cand.graph),
            sources=sources(cand.graph, conv), decision_source=DecisionSource.HUMAN,
            verdict=Verdict.ACCEPT, reviewers=["p2"], annotator=cand.annotator,
            span_kind=cand.span_kind, claim_kind=cand.claim_kind))
    return Benchmark(out_convs, spans, "test")


def test_the_table_and_the_errors_from_the_result_files(sample_path, tiny_loaded, tmp_path):
    bench = claims_of(_bench(sample_path, tmp_path))
    units = [replace(u, model=tiny_loaded.name) for u in claim_units(bench, "dev")]
    assert len(units) == 3 and sum(len(u.spans) for u in units) == 5
    assert claim_units(bench, "test") == []
    store = ResultStore(tmp_path / "units")
    run_units(units, store, models=Models(loaded=tiny_loaded), log=lambda _: None, commit="x")
    results = [r for _, r in store.results()]
    table = claim_table(results, bench, "dev")
    rows = {line.split("|")[1].strip(): line for line in table.splitlines()
            if line.startswith("| ") and line.split("|")[1].strip() not in ("", "claims")}
    assert "| 3 / 5 |" in rows["all"] and " [" in rows["all"]
    assert {"kind: computation", "kind: status", "kind: summary"} <= set(rows)
    assert "| 1 / 1 |" in rows["kind: computation"] and " [" not in rows["kind: computation"]
    # A column for every floor of the registry, string-match first, and a cell in every row.
    header = next(line for line in table.splitlines() if line.startswith("| claims |"))
    cells = [c.strip() for c in header.strip("|").split("|")]
    assert cells[5:5 + len(FLOORS)] == ["string-match", "recency", "first-user"]
    assert set(FLOORS) <= set(cells)
    assert all(len(line.strip("|").split("|")) == len(cells) for line in rows.values())
    errors = claim_errors(results, bench, "dev")
    lines = [line for line in errors.splitlines() if line.startswith("| tokengeist")]
    gold = sum(len(s.graph.edges) for s in bench.spans)
    assert sum(int(line.split("|")[4]) for line in lines) == gold  # every gold edge counted
    assert claim_table(results, bench, "test") == ""
    # The search settings replayed from the stored shares: the default row, then each change
    # with its paired difference (the same results stand in for values: the mechanics).
    point = SearchPoint("top_k=1", SearchSettings(top_k=1), ("tokengeist",))
    grid = search_table(results, bench, results, bench, points=(point,))
    default, changed = [line for line in grid.splitlines() if line.startswith(("| default",
                                                                               "| top_k=1"))]
    assert default.count("| 3 / 5 |") == 2 and changed.count("| 3 / 5 |") == 2
    assert changed.split("|")[4].strip().startswith(("+", "-"))  # a paired difference
    # The first hop's shares: every earlier turn of every claim counted once, gold or not.
    shares = first_hop_shares(results, bench, "dev")
    rows = [line.split("|") for line in shares.splitlines()
            if "| gold parent |" in line or "| not a parent |" in line]
    assert sum(int(r[3]) for r in rows) == sum(s.span.turn for s in bench.spans)
    gold_first_hop = sum(1 for s in bench.spans for c, _ in s.graph.pairs() if c == s.span.turn)
    assert sum(int(r[3]) for r in rows if r[2].strip() == "gold parent") == gold_first_hop
