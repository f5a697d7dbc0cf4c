"""The parameter study (mtcabench.studies): shares stored once per conversation, the search
replayed on them gives trace's graphs (real model, the sample)."""

from __future__ import annotations

import dataclasses

import pytest

from mtcabench import studies
from mtcabench.benchmark import load_benchmark
from mtcabench.evaluate import Attributor, TraceSettings, make_scorer, trace_conversation

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def study():
    return studies


def test_split_is_by_task_and_trial(study):
    assert study.split_of("taubench/airline/gpt-4o/task-0/trial-0") == "dev"
    assert study.split_of("taubench/airline/gpt-4o/task-45/trial-1") == "dev"
    assert study.split_of("taubench/airline/gpt-4o/task-45/trial-2") is None
    assert study.split_of("taubench/airline/gpt-4o/task-16/trial-0") == "test"
    assert study.split_of("taubench/airline/gpt-4o/task-16/trial-2") is None
    # The other tasks (2, 3, 4 mod 5) are the training split, every trial: weights only.
    assert study.split_of("taubench/airline/gpt-4o/task-17/trial-0") == "train"
    assert study.split_of("taubench/airline/gpt-4o/task-49/trial-3") == "train"
    # Without a task id: by the id's CRC-32, the same every time.
    other = [study.split_of(f"confetti/x/{i}") for i in range(50)]
    assert other == [study.split_of(f"confetti/x/{i}") for i in range(50)]
    assert {"train", "dev", "test"} == set(other)
    # A task named otherwise (tau2's telecom): every agent's and trial's run in one split.
    for n in range(20):
        task = f"task-[mobile_data_issue]bad_vpn_{n}[PERSONA:Easy]"
        runs = {study.split_of(f"tau2/telecom/{agent}/llm_agent/{task}/trial-{trial}")
                for agent in ("gpt-4o", "gpt-4.1") for trial in (0, 1)}
        assert len(runs) == 1
    telecom = {study.split_of(f"tau2/telecom/gpt-4o/llm_agent/task-[t]{n}/trial-0")
               for n in range(50)}
    assert telecom == {"train", "dev", "test"}


def test_replayed_search_gives_traces_graphs(study, loaded, sample_benchmark, tmp_path):
    bench = load_benchmark(sample_benchmark)
    work = study.by_conversation(bench.spans)
    attributor = Attributor(loaded, make_scorer("avg-attention", TraceSettings(), loaded))
    cache = tmp_path / "shares.jsonl"
    shares, cost = study.all_shares(bench, work, cache, "smollm2-135m-instruct",
                                    "avg-attention", attributor=attributor)
    # One forward pass per conversation serves both turn aggregates.
    # (and the attention-sink probe, once per process for the sample's one policy)
    assert cost["computed"] == len(work) == 3 and cost["forward_passes"] in (3, 4)
    # A rerun reads the stored shares (through JSON) and loads no model.
    again, cost = study.all_shares(bench, work, cache, "smollm2-135m-instruct", "avg-attention")
    assert cost["computed"] == 0 and cost["cached"] == 3
    for cid in work:
        for agg in study.AGGREGATES:
            assert again[cid][agg] == shares[cid][agg]
    assert shares[next(iter(work))]["max"] != shares[next(iter(work))]["sum"]
    # A crash mid-line: the torn tail is cut before the next record goes in (appended after
    # it, the two would make one line the reader refuses).
    lines = cache.read_bytes().splitlines(keepends=True)
    cache.write_bytes(b"".join(lines[:-1]) + lines[-1][:40])
    _, cost = study.all_shares(bench, work, cache, "smollm2-135m-instruct", "avg-attention",
                               attributor=attributor)
    assert cost["computed"] == 1 and len(study.load_cache(cache)) == 3

    points = [study.default_point(), study.Point(2, 0.1, 0.25, 2, "sum")]
    for p in points:
        # The study replays turn shares, so its graphs carry no evidence sentences: compare
        # with a trace that keeps none (evidence never changes which edges are chosen).
        settings = TraceSettings(search=p.search, turn_aggregate=p.turn_aggregate,
                                 evidence_sentences=0)
        trace = Attributor(loaded, make_scorer("avg-attention", settings, loaded),
                           aggregate=p.turn_aggregate)
        for cid, spans in work.items():
            traced = trace_conversation(trace, bench.conversations[cid], spans,
                                        ["tokengeist", "flat"], settings).entries
            for method in ("tokengeist", "flat"):
                replayed = [study.to_entry(s, study.replay(
                    method, bench.conversations[cid], s, again[cid][p.turn_aggregate],
                    p.search)) for s in spans]
                assert replayed == traced[method], (p, cid, method)
            # With evidence kept (the default), the same edges, now each with its sentences.
            shown = trace_conversation(trace, bench.conversations[cid], spans,
                                       ["tokengeist"], dataclasses.replace(
                                           settings, evidence_sentences=3)).entries
            assert [[(e.child, e.parent, e.score) for e in x.edges or []]
                    for x in shown["tokengeist"]] == \
                   [[(e.child, e.parent, e.score) for e in x.edges or []]
                    for x in traced["tokengeist"]]
    # The two points give different graphs somewhere (the comparison is not vacuous).
    a, b = (study.evaluate_point("tokengeist", p, bench, bench.spans, again) for p in points)
    assert (a.edge_f1, a.source_recall) != (b.edge_f1, b.source_recall)
    assert a.spans == 5 and a.empty == 0


def test_choice_takes_the_plateau_point_nearest_the_previous_defaults(study):
    base = study.default_point()
    near = study.Point(base.top_k, base.threshold, base.alpha, 8, base.turn_aggregate)
    far = study.Point(1, 0.2, 1.0, 8, "sum")
    s = study.Scores
    # far is best by the mean (0.6), near is within the plateau (0.598): near, one change.
    scores = {far: s(0.5, 0.7, 10, 0), near: s(0.496, 0.7, 10, 0), base: s(0.4, 0.7, 10, 0)}
    assert study.choose(scores, base) == near
    # Off the plateau, the defaults lose whatever their distance.
    assert study.choose({far: s(0.5, 0.7, 10, 0), base: s(0.48, 0.7, 10, 0)}, base) == far
    # Edge F1 alone ignores source recall.
    assert study.best_edge_f1({far: s(0.5, 0.1, 10, 0), base: s(0.49, 0.9, 10, 0)}, base) == far
    assert study.choose({far: s(0.5, 0.1, 10, 0), base: s(0.49, 0.9, 10, 0)}, base) == base
