"""The domains study (mtcabench.studies._domains): its sample covers every (domain, agent
model) group round robin, shortest first, and its table has a row per domain and per agent
model from the result files (tiny model: the mechanics, not the figures)."""

from __future__ import annotations

from dataclasses import replace

from mtcabench.benchmark import Benchmark, load_benchmark
from mtcabench.studies import Models, ResultStore, domain_table, domain_units, run_units

#: (domain, agent model, task, trial) given to each copy of the sample's conversations.
GROUPS = [("airline", "a-model", 0, 0), ("airline", "a-model", 5, 1), ("retail", "b-model", 10, 0),
          ("retail", "b-model", 1, 0)]  # task 1: the test split


def _bench(sample_benchmark) -> Benchmark:
    bench = load_benchmark(sample_benchmark)
    by_conv = bench.spans_by_conversation()
    sources = sorted(by_conv, key=lambda c: sum(len(t.text) for t in bench.conversations[c].turns))
    convs, spans = {}, []
    for i, (domain, agent, task, trial) in enumerate(GROUPS):
        src = sources[min(i, len(sources) - 1)]
        cid = f"tau2/{domain}/{agent}/llm_agent/task-{task}/trial-{trial}"
        convs[cid] = bench.conversations[src].model_copy(
            update={"id": cid, "domain": domain, "agent_model": agent})
        spans += [s.model_copy(update={"id": f"{cid}#{s.id}", "conversation_id": cid,
                                       "domain": domain}) for s in by_conv[src]]
    return Benchmark(convs, spans, "test")


def test_the_sample_takes_each_group_round_robin_shortest_first(sample_benchmark):
    bench = _bench(sample_benchmark)
    one = domain_units(bench, "dev", 1)
    assert [u.conversation.id for u in one] == [
        "tau2/airline/a-model/llm_agent/task-0/trial-0",
        "tau2/retail/b-model/llm_agent/task-10/trial-0"]
    two = domain_units(bench, "dev", 2)
    assert [u.conversation.id for u in two] == [u.conversation.id for u in one] + [
        "tau2/airline/a-model/llm_agent/task-5/trial-1"]
    assert all(u.spans and u.split == "dev" for u in two)
    assert [u.conversation.id for u in domain_units(bench, "test", 5)] == [
        "tau2/retail/b-model/llm_agent/task-1/trial-0"]


def test_the_table_has_a_row_per_domain_and_agent(sample_benchmark, tiny_loaded, tmp_path):
    bench = _bench(sample_benchmark)
    units = [replace(u, model=tiny_loaded.name) for u in domain_units(bench, "dev", 2)]
    store = ResultStore(tmp_path / "units")
    run_units(units, store, models=Models(loaded=tiny_loaded), log=lambda _: None, commit="x")
    table = domain_table([r for _, r in store.results()], bench, "dev", 2)
    rows = {line.split("|")[1].strip(): line for line in table.splitlines()
            if line.startswith("| ") and line.split("|")[1].strip() not in ("", "group")}
    n_spans = {u.conversation.domain: 0 for u in units}
    for u in units:
        n_spans[u.conversation.domain] += len(u.spans)
    assert f"| 3 / {sum(n_spans.values())} |" in rows["all"]
    assert f"| 2 / {n_spans['airline']} |" in rows["domain: airline"]
    assert f"| 1 / {n_spans['retail']} |" in rows["domain: retail"]
    assert {"agent: a-model", "agent: b-model"} <= set(rows)
    # A row of several conversations has its interval (conversation-clustered bootstrap)
    # beside the value; a row of one conversation has none (resampling it gives no interval).
    assert " [" in rows["all"] and " [" in rows["domain: airline"]
    assert " [" not in rows["domain: retail"] and " [" not in rows["agent: b-model"]
    # The string-match floor sits beside the methods, on the same spans, from the gold alone:
    # its "all" cell is the macro edge F1 of the lineage rules' graphs over the units' spans.
    from mtcabench.baselines import FLOORS
    from mtcabench.results.metrics import columns, score_span, span_matrix

    header = next(line for line in table.splitlines() if line.startswith("| group |"))
    names = [c.strip() for c in header.strip("|").split("|")]
    at = names.index("string-match edge F1")
    assert "string-match original R" in names
    f1 = [span_matrix([score_span(s, u.conversation, FLOORS["string-match"].graph(
        u.conversation, s.span).edges)])[0][columns().index("edge_f1")]
          for u in units for s in u.spans]
    cell = [c.strip() for c in rows["all"].strip().strip("|").split("|")][at]
    assert cell.startswith(f"{sum(f1) / len(f1):.3f} [")
    assert domain_table([r for _, r in store.results()], bench, "test", 2) == ""
