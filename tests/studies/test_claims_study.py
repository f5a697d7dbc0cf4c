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
from mtcabench.evaluate import SearchSettings, relay_nodes
from mtcabench.studies import (
    Models,
    SearchPoint,
    ResultStore,
    claim_bounds,
    claim_errors,
    claim_peer_units,
    claim_peers_table,
    claim_table,
    claim_units,
    claims_of,
    first_hop_shares,
    model_root,
    model_table,
    model_units,
    ShareTables,
    relay_table,
    relay_units,
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
    assert changed.split("|")[6].strip().startswith(("+", "-"))  # source R's, too
    # The first hop's shares: every earlier turn of every claim counted once, gold or not.
    shares = first_hop_shares(results, bench, "dev")
    rows = [line.split("|") for line in shares.splitlines()
            if "| gold parent |" in line or "| not a parent |" in line]
    assert sum(int(r[3]) for r in rows) == sum(s.span.turn for s in bench.spans)
    gold_first_hop = sum(1 for s in bench.spans for c, _ in s.graph.pairs() if c == s.span.turn)
    assert sum(int(r[3]) for r in rows if r[2].strip() == "gold parent") == gold_first_hop
    # How far from the bar, and what bounds it: every first-hop gold parent is within the
    # search's reach or out of it under its role; the kinds add up to all.
    bounds = claim_bounds(results, bench, "dev")
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.strip("|").split("|")]
            for line in bounds.splitlines() if line.startswith(("| kind:", "| domain:", "| all"))}
    whole = rows["all"]
    assert int(whole[6]) == gold_first_hop
    assert int(whole[7].split()[0]) + sum(int(c) for c in whole[9:13]) == gold_first_hop
    assert int(whole[8]) <= int(whole[7].split()[0])  # found among the reachable only
    kinds = [r for label, r in rows.items() if label.startswith("kind:")]
    assert sum(int(r[6]) for r in kinds) == gold_first_hop
    assert float(whole[3]) == round(float(whole[2].split()[0]) - 0.70, 3)


def test_the_peers_on_claims_seed_major_and_their_table(sample_path, tiny_loaded, tmp_path):
    # The peers on claims (issue 47, item 4): every row at seed 0 before a second seed, the
    # package rows on fewer conversations, labels apart from the values' units; the table
    # from the result files, against Tokengeist over average attention on the same claims,
    # with the floors of the claims study's units beside them.
    bench = claims_of(_bench(sample_path, tmp_path))
    units = claim_peer_units(bench, "dev", 2, None)
    seeds = [u.seed for u in units]
    assert seeds == sorted(seeds) and set(seeds) == {0, 1, 2}
    assert units[0].scorer == "avg-attention" and all(u.setting.startswith("claims-")
                                                      for u in units)
    firsts = [u.scorer for u in units if u.seed == 0]
    assert firsts.index("ablation") < firsts.index("peer-flashtrace")  # cheapest first
    assert len([u for u in units if u.scorer == "peer-contextcite"]) == min(
        2, len(claim_units(bench, "dev")))
    ours = [replace(u, model=tiny_loaded.name) for u in units
            if u.scorer in ("avg-attention", "ablation")
            and (u.seed == 0 or u.conversation.id == units[0].conversation.id)]
    claims = [replace(u, model=tiny_loaded.name) for u in claim_units(bench, "dev")]
    store = ResultStore(tmp_path / "units")
    run_units(ours + claims, store, models=Models(loaded=tiny_loaded), log=lambda _: None,
              commit="x")
    table = claim_peers_table([r for _, r in store.results()], bench, "dev", 2)
    rows = {tuple(c.strip() for c in line.strip("|").split("|")[:2]): line.split("|")
            for line in table.splitlines() if line.startswith("| ") and "---" not in line}
    ref = rows[("tokengeist", "avg-attention")]
    assert ref[7].strip() == "" and ref[12].strip() == "3 / 5"  # the reference: no difference
    ablation = rows[("tokengeist", "ablation")]
    # Seed 1 covers one conversation of three: the row is shown over seed 0, on every claim.
    assert ablation[5].strip() == "1" and ablation[12].strip() == "3 / 5"
    assert ablation[7].strip().startswith(("+", "-"))  # a paired difference
    assert int(ablation[10].strip()) == 3  # K + 1 passes per conversation, measured
    for floor in FLOORS:
        assert rows[(floor, "-")][10].strip() == "0"
    assert claim_peers_table([r for _, r in store.results()], bench, "test", 2) == ""


def test_the_base_models_side_by_side_each_in_a_store_of_its_own(sample_path, tiny_loaded,
                                                                 tmp_path):
    # Issue 47, item 3: a model's units live apart (a unit's file is not named by model, so a
    # second model in the same store would replace the first's), the first model is the
    # reference, and claims and values are rows of their own with their costs.
    bench = claims_of(_bench(sample_path, tmp_path))
    assert model_root(tmp_path, "a/b.gguf") == tmp_path / "models" / "a_b.gguf"
    assert model_root(tmp_path, "m1") != model_root(tmp_path, "m2")
    units = model_units(bench, bench, "dev", tiny_loaded.name)
    assert {u.model for u in units} == {tiny_loaded.name}
    # Claims and values in turn: a larger model's run stopped early holds both.
    assert [u.study for u in units[:4]] == ["claims", "domains", "claims", "domains"]
    store = ResultStore(model_root(tmp_path, tiny_loaded.name) / "units")
    run_units(units, store, models=Models(loaded=tiny_loaded), log=lambda _: None,
              commit="x")
    got = [r for _, r in store.results()]
    table = model_table({"first": got, "second": got}, bench, bench, "dev")
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()
            if line.startswith(("| first", "| second"))]
    assert [r[:2] for r in rows] == [["first", "claims"], ["first", "values"],
                                     ["second", "claims"], ["second", "values"]]
    assert rows[0][4] == "" and rows[2][4].startswith("+0.000")  # paired on the same spans
    assert rows[0][2] == "3 / 5" and float(rows[0][8]) >= 0 and float(rows[0][10]) >= 1
    assert rows[2][9] in ("1.0x", "")  # the same units: the reference's time (none if 0 s)
    # A model whose run stopped early says how far it got.
    part = model_table({"first": got, "second": [r for r in got if r.setting == "claims"][:1]},
                       bench, bench, "dev")
    assert "| second | claims | 1 of 3 / " in part


def test_the_sentence_relayed_against_the_whole_turn_from_the_same_passes(sample_path,
                                                                          tiny_loaded, tmp_path):
    # Issue 47, item 2: the units are computed again with every assistant sentence among the
    # queries; their "default" point is today's search (the extra queries change no other
    # query's shares), their "relay" point asks an entered turn about the sentence relayed.
    bench = claims_of(_bench(sample_path, tmp_path))
    units = relay_units(bench, bench, "dev")
    assert {u.setting for u in units} == {"claims-relay", "default-relay"}
    assert all(u.settings.search.relay_sentences for u in units)
    store = ResultStore(tmp_path / "units")
    run_units([*claim_units(bench, "dev"), *units], store, models=Models(loaded=tiny_loaded),
              log=lambda _: None, commit="x")
    got = [r for _, r in store.results()]
    today = {s.span_id: s.edges for r in got if r.setting == "claims"
             for s in r.points["default"].methods["tokengeist"]}
    again = {s.span_id: s.edges for r in got if r.setting == "claims-relay"
             for s in r.points["default"].methods["tokengeist"]}
    assert today and again == today
    # The sentences were asked and kept with the shares (the replay's queries).
    sentences = 0
    for u in units:
        (kept,) = [r for r in got if r.setting == u.setting
                   and r.conversation_id == u.conversation.id]
        wanted = set(relay_nodes(u.conversation, max(s.span.turn for s in u.spans)))
        assert wanted <= set(ShareTables.from_json(kept.shares).turns)
        sentences += len(wanted)
    assert sentences  # the sample's answers hold turns of several sentences
    table = relay_table(got, bench, bench, "dev")
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()
            if line.startswith(("| claims", "| values"))]
    assert [r[:2] for r in rows] == [["claims", "as a whole"], ["claims", "the sentence relayed"],
                                     ["values", "as a whole"], ["values", "the sentence relayed"]]
    assert rows[0][4] == "" and rows[1][4].startswith(("+", "-"))  # paired on the same spans
    assert rows[0][2] == rows[1][2] == "3 / 5"
