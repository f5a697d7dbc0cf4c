"""The metric functions and averages on hand-computed cases, and the bootstrap against a loop."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mtcabench.graph import edge_prf
from mtcabench.model import Conversation, DependencyType, Role, ToolCall, Turn
from mtcabench.results import metrics as m
from mtcabench.scoring.bootstrap import interval, paired_p_value, resampled_averages, row_rng


def conv() -> Conversation:
    """0 system, 1 user, 2 assistant (call), 3 tool, 4 assistant, 5 user, 6 assistant."""
    return Conversation(id="c", source="test", domain="d", turns=[
        Turn(index=0, role=Role.SYSTEM, content="policy"),
        Turn(index=1, role=Role.USER, content="my id is u1"),
        Turn(index=2, role=Role.ASSISTANT, tool_calls=[ToolCall(id="k", name="get")]),
        Turn(index=3, role=Role.TOOL, content="{}", tool_call_id="k"),
        Turn(index=4, role=Role.ASSISTANT, content="found it"),
        Turn(index=5, role=Role.USER, content="and?"),
        Turn(index=6, role=Role.ASSISTANT, content="answer"),
    ])


GOLD = [(6, 4), (4, 3), (3, 2), (6, 1)]  # sources {1, 3}


# --------------------------------------------------------------------------- set metrics


def test_partial_prediction_by_hand():
    pred = [(6, 4), (6, 5), (4, 3)]  # 2 of 3 right, 2 of 4 gold found
    assert m.edge_precision(pred, GOLD) == pytest.approx(2 / 3)
    assert m.edge_recall(pred, GOLD) == pytest.approx(2 / 4)
    # F1 = 2 * (2/3) * (1/2) / (2/3 + 1/2) = 4/7
    assert m.edge_f1(pred, GOLD) == pytest.approx(4 / 7)
    # Sources: nodes {6, 5, 4, 3} -> exogenous {5, 3}; gold {1, 3}.
    p_src = m.edge_sources(pred, conv())
    assert p_src == {3, 5}
    assert m.source_precision(p_src, {1, 3}) == pytest.approx(1 / 2)
    assert m.source_recall(p_src, {1, 3}) == pytest.approx(1 / 2)


def test_empty_prediction_earns_nothing():
    assert (m.edge_precision([], GOLD), m.edge_recall([], GOLD), m.edge_f1([], GOLD)) == (0, 0, 0)
    assert m.source_precision(set(), {1, 3}) == 0 and m.source_recall(set(), {1, 3}) == 0


def test_empty_gold():
    # Nothing due and nothing claimed: exactly right.
    assert (m.edge_precision([], []), m.edge_recall([], []), m.edge_f1([], [])) == (1, 1, 1)
    # Something claimed where nothing was due: no credit on either side.
    assert (m.edge_precision([(6, 1)], []), m.edge_recall([(6, 1)], []),
            m.edge_f1([(6, 1)], [])) == (0, 0, 0)


def test_duplicate_edges_count_once():
    pred = [(6, 4), (6, 4), (6, 4), (6, 1)]
    assert m.edge_precision(pred, GOLD) == 1.0  # 2 distinct edges, both gold
    assert m.edge_recall(pred, GOLD) == pytest.approx(2 / 4)
    assert m.edge_precision(pred, GOLD + GOLD) == 1.0  # duplicated gold too


def test_extra_nodes_lower_precision_only():
    # Every gold edge plus an edge between two turns the gold graph does not hold.
    pred = GOLD + [(5, 0)]
    assert m.edge_recall(pred, GOLD) == 1.0
    assert m.edge_precision(pred, GOLD) == pytest.approx(4 / 5)
    src = m.edge_sources(pred, conv())
    assert src == {0, 1, 3, 5}  # system 0 and user 5 come in as extra sources
    assert m.source_recall(src, {1, 3}) == 1.0
    assert m.source_precision(src, {1, 3}) == pytest.approx(2 / 4)


def test_sources_are_exogenous_nodes_only():
    assert m.edge_sources([(6, 4), (4, 2)], conv()) == set()  # assistant turns only
    with pytest.raises(IndexError):  # never silently dropped
        m.edge_sources([(9, 1)], conv())


def test_hallucinated_source_recall_only_on_hallucination_spans():
    assert m.hallucinated_source_recall({3}, {1, 3}, DependencyType.HALLUCINATION) == 0.5
    assert m.hallucinated_source_recall({3}, {1, 3}, DependencyType.DIRECT) is None


def test_agrees_with_graph_edge_prf():
    for pred in ([], [(6, 4)], GOLD, GOLD + [(5, 1)], [(5, 1)]):
        for gold in ([], GOLD):
            ours = (m.edge_precision(pred, gold), m.edge_recall(pred, gold), m.edge_f1(pred, gold))
            assert ours == pytest.approx(edge_prf(pred, gold))


# --------------------------------------------------------------------------- averages


def score(pred, gold, gold_sources, dtype=DependencyType.DIRECT, sid="s"):
    return m.SpanScore.of(m.SpanCase.of_sets(sid, pred, gold, gold_sources, conv(), dtype))


def test_span_score_matches_set_functions():
    s = score([(6, 4), (6, 5), (4, 3)], GOLD, [1, 3])
    assert (s.edge_hits, s.edge_predicted, s.edge_gold) == (2, 3, 4)
    assert (s.source_hits, s.source_predicted, s.source_gold) == (1, 2, 2)
    assert s.edge_f1 == pytest.approx(4 / 7) and s.hallucinated_source_recall is None


def test_macro_and_micro_by_hand():
    spans = [
        score([(6, 4)], GOLD, [1, 3]),  # edges 1/1 right, 1/4 found; sources none predicted
        score([], [(6, 1)], [1], DependencyType.HALLUCINATION),  # empty prediction
        score([(6, 1), (6, 5)], [(6, 1)], [1], DependencyType.HALLUCINATION),
    ]
    mat = m.span_matrix(spans)
    out = m.aggregate(mat.sum(axis=0), np.array(3.0))
    # Macro: mean of per-span values.
    assert out["edge_precision"]["macro"] == pytest.approx((1 + 0 + 1 / 2) / 3)
    assert out["edge_recall"]["macro"] == pytest.approx((1 / 4 + 0 + 1) / 3)
    f1s = [2 * 1 * 0.25 / 1.25, 0, 2 * 0.5 * 1 / 1.5]
    assert out["edge_f1"]["macro"] == pytest.approx(sum(f1s) / 3)
    # Micro: hits 1+0+1 = 2 over predicted 1+0+2 = 3 and gold 4+1+1 = 6.
    assert out["edge_precision"]["micro"] == pytest.approx(2 / 3)
    assert out["edge_recall"]["micro"] == pytest.approx(2 / 6)
    assert out["edge_f1"]["micro"] == pytest.approx(2 * (2 / 3) * (1 / 3) / (2 / 3 + 1 / 3))
    # Sources: span 1 predicts {} (6, 4 are assistant turns), gold {1, 3}; span 3 {1, 5} vs {1}.
    assert out["source_precision"]["micro"] == pytest.approx(1 / 2)
    assert out["source_recall"]["micro"] == pytest.approx(1 / 4)
    # Hallucinated sources: spans 2 and 3 only; recall 0 and 1.
    assert out["hallucinated_source_recall"]["macro"] == pytest.approx(0.5)
    assert out["hallucinated_source_recall"]["micro"] == pytest.approx(1 / 2)


def test_hallucination_metric_undefined_without_hallucination_spans():
    mat = m.span_matrix([score([(6, 4)], GOLD, [1, 3])])
    out = m.aggregate(mat.sum(axis=0), np.array(1.0))
    assert math.isnan(out["hallucinated_source_recall"]["macro"])
    assert math.isnan(out["hallucinated_source_recall"]["micro"])


def test_micro_conventions_on_all_empty_groups():
    both_empty = m.span_matrix([score([], [], [])] * 2)
    out = m.aggregate(both_empty.sum(axis=0), np.array(2.0))
    assert out["edge_precision"]["micro"] == 1 and out["edge_recall"]["micro"] == 1
    nothing_predicted = m.span_matrix([score([], GOLD, [1, 3])])
    out = m.aggregate(nothing_predicted.sum(axis=0), np.array(1.0))
    assert out["edge_precision"]["micro"] == 0 and out["edge_f1"]["micro"] == 0


# --------------------------------------------------------------------------- bootstrap


def random_scores(n: int, seed: int = 1) -> list[m.SpanScore]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        gold = [(6, 4), (4, 3), (3, 2), (6, 1)][: rng.integers(0, 5)]
        pred = [p for p in [(6, 4), (6, 5), (4, 3), (6, 1), (5, 0)] if rng.random() < 0.5]
        src = sorted(m.edge_sources(gold, conv()))
        dtype = DependencyType.HALLUCINATION if rng.random() < 0.3 else DependencyType.DIRECT
        out.append(score(pred, gold, src, dtype, sid=str(i)))
    return out


def test_bootstrap_matches_a_plain_loop():
    scores = random_scores(57)
    mat = m.span_matrix(scores)
    fast = resampled_averages([mat], 200, row_rng(0, "k"))[0]
    # The same draws, made the plain way: resample, average with Python, per resample.
    idx = row_rng(0, "k").integers(0, len(scores), size=(200, len(scores)))
    for r in (0, 17, 199):
        drawn = [scores[i] for i in idx[r]]
        assert fast["edge_f1"]["macro"][r] == pytest.approx(
            sum(s.edge_f1 for s in drawn) / len(drawn))
        hits = sum(s.edge_hits for s in drawn)
        assert fast["edge_precision"]["micro"][r] == pytest.approx(
            hits / sum(s.edge_predicted for s in drawn))
        hal = [s.source_recall for s in drawn if s.hallucination]
        assert fast["hallucinated_source_recall"]["macro"][r] == pytest.approx(
            sum(hal) / len(hal))


def test_bootstrap_is_seeded_and_covers_the_estimate():
    mat = m.span_matrix(random_scores(300))
    a = resampled_averages([mat], 500, row_rng(0, "row"))[0]["edge_f1"]["macro"]
    b = resampled_averages([mat], 500, row_rng(0, "row"))[0]["edge_f1"]["macro"]
    c = resampled_averages([mat], 500, row_rng(1, "row"))[0]["edge_f1"]["macro"]
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    point = mat[:, m.columns().index("edge_f1")].mean()
    low, high = interval(a)
    assert low < point < high and high - low < 0.2


def test_paired_bootstrap():
    mat = m.span_matrix(random_scores(200))
    same_a, same_b = resampled_averages([mat, mat.copy()], 300, row_rng(0, "p"))
    diff = same_a["edge_f1"]["macro"] - same_b["edge_f1"]["macro"]
    assert np.all(diff == 0) and paired_p_value(diff) == 1.0
    # A prediction set that is better on every span: every paired difference is positive.
    perfect = m.span_matrix([score(GOLD, GOLD, [1, 3], sid=str(i)) for i in range(200)])
    pa, pb = resampled_averages([perfect, mat], 300, row_rng(0, "p"))
    d = pa["edge_f1"]["macro"] - pb["edge_f1"]["macro"]
    assert np.all(d > 0) and paired_p_value(d) == 0.0


def test_bootstrap_in_blocks(monkeypatch):
    # Large benchmarks are resampled in blocks so that memory stays flat; blocks must not
    # change what each resample computes.
    from mtcabench.scoring import bootstrap

    monkeypatch.setattr(bootstrap, "_BLOCK_CELLS", 40 * 30)  # 30 spans: blocks of 40 resamples
    scores = random_scores(30, seed=5)
    mat = m.span_matrix(scores)
    fast = resampled_averages([mat], 130, row_rng(2, "b"))[0]["edge_recall"]["micro"]
    rng = row_rng(2, "b")
    draws = np.concatenate([rng.integers(0, 30, size=(b, 30)) for b in (40, 40, 40, 10)])
    for r in (0, 39, 40, 95, 129):
        drawn = [scores[i] for i in draws[r]]
        assert fast[r] == pytest.approx(sum(s.edge_hits for s in drawn)
                                        / sum(s.edge_gold for s in drawn))


def test_clustered_bootstrap_draws_whole_conversations():
    from mtcabench.scoring.bootstrap import resampled_means

    scores = random_scores(40, seed=3)
    mat = m.span_matrix(scores)
    # every span its own cluster: the plain bootstrap's draws exactly
    plain = resampled_averages([mat], 100, row_rng(0, "c"))[0]["edge_f1"]["macro"]
    alone = resampled_averages([mat], 100, row_rng(0, "c"), np.arange(40))[0]
    assert np.array_equal(plain, alone["edge_f1"]["macro"])
    # 4 conversations of 10 spans: a resample is a multiset of conversations, so its macro
    # average weighs each drawn conversation's spans by how often it was drawn
    clusters = np.repeat(["a", "b", "c", "d"], 10)
    got = resampled_averages([mat], 200, row_rng(0, "c"), clusters)[0]["edge_f1"]["macro"]
    f1 = mat[:, m.columns().index("edge_f1")]
    draws = row_rng(0, "c").integers(0, 4, size=(200, 4))
    for r in (0, 7, 199):
        spans = np.concatenate([f1[10 * c: 10 * c + 10] for c in draws[r]])
        assert got[r] == pytest.approx(spans.mean())
    # per-span values of the studies' own (NaN: undefined, left out) get the same draws
    values = np.where(np.arange(40) % 5 == 0, np.nan, f1)
    mean = resampled_means([values], 200, row_rng(0, "c"), clusters)[0]
    spans = np.concatenate([values[10 * c: 10 * c + 10] for c in draws[7]])
    assert mean[7] == pytest.approx(np.nanmean(spans))
    # clusters vary more than spans drawn alone when spans of one conversation agree
    same = np.repeat(np.array([0.1, 0.9, 0.4, 0.6]), 10)
    wide = resampled_means([same], 500, row_rng(0, "w"), clusters)[0]
    narrow = resampled_means([same], 500, row_rng(0, "w"))[0]
    assert interval(wide)[1] - interval(wide)[0] > 2 * (interval(narrow)[1] - interval(narrow)[0])
