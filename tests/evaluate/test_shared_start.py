"""The start a conversation's renderings share (the conversation and its context windows), run
once: the plan (which boundaries, which rows), and the passes run from it against the same
passes run alone. Tiny model: mechanics only."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import mtcabench.evaluate.attribution._shared_start as shared_start
from mtcabench.evaluate import (
    TARGET,
    Attributor,
    TraceSettings,
    get_methods,
    make_scorer,
    model_shares,
    render_conversation,
)
from mtcabench.evaluate.attribution._attention import query_features
from mtcabench.evaluate.attribution._passes import clear_prefix_caches, passes_for
from mtcabench.evaluate.attribution._shared_start import (
    common_length,
    plan_shared_start,
)
from mtcabench.ingest import read_taubench
from mtcabench.model import Role, TargetSpan

#: As in test_shared_windows.py: s1's assistant turns 8 and 10 end past it, turn 6 within.
LIMIT = 545


def test_the_plan_parts_each_rendering_where_it_leaves_the_trunk():
    trunk = np.arange(100)
    other = np.concatenate([np.arange(60), [999], np.arange(61, 90)])
    rows = np.array([10, 20, 70, 95])
    other_rows = np.array([15, 20, 80])
    plan = plan_shared_start([(trunk, rows), (other, other_rows)], store=5, least=10)
    assert plan is not None and plan.boundaries == (60,) and plan.store == 5
    assert plan.ids.tolist() == list(range(60))
    # The rows either pass reads before the boundary, once each.
    assert plan.rows.tolist() == [10, 15, 20]
    assert common_length(trunk, other) == 60
    assert plan.boundary_for(other, other_rows) == 60
    assert plan.boundary_for(trunk, rows) == 60
    # A pass whose rows before the boundary were not captured, or whose tokens part earlier,
    # or that ends before the boundary, runs alone.
    assert plan.boundary_for(other, np.array([12, 80])) == 0
    assert plan.boundary_for(np.concatenate([[7], trunk[1:]]), rows) == 0
    assert plan.boundary_for(trunk, np.array([10, 50])) == 0
    # Too little in common past the prefix cache's boundary: no plan.
    assert plan_shared_start([(trunk, rows), (other, other_rows)], store=55, least=10) is None
    assert plan_shared_start([(trunk, rows)], store=0, least=1) is None


def test_renderings_that_part_close_together_share_one_boundary():
    trunk = np.arange(200)
    near = np.concatenate([np.arange(100), [999], np.arange(101, 150)])
    nearer = np.concatenate([np.arange(95), [999], np.arange(96, 150)])
    far = np.concatenate([np.arange(140), [999], np.arange(141, 180)])
    rows = np.array([20, 190])
    plan = plan_shared_start([(trunk, rows), (near, np.array([30, 98, 120])),
                              (nearer, np.array([40, 130])), (far, np.array([50, 160]))],
                             store=10, least=20)
    # 95 is 85 past the store: a boundary; 100 is 5 past 95: not a step of its own; 140 is.
    assert plan.boundaries == (95, 140)
    assert plan.boundary_for(near, np.array([30, 98, 120])) == 95  # row 98 is its own pass's
    assert plan.boundary_for(far, np.array([50, 160])) == 140
    assert plan.rows.tolist() == [20, 30, 40, 50]


def test_a_boundary_never_reaches_a_pass_s_last_row():
    trunk = np.arange(100)
    plan = plan_shared_start([(trunk, np.array([5, 40])), (trunk, np.array([5, 90]))], store=0,
                             least=1)
    # The renderings agree everywhere; the trunk's pass ends after row 40.
    assert plan.boundaries == (40,) and plan.boundary_for(trunk, np.array([5, 90])) == 40


def features(loaded, ids, rows, shared=None):
    token_sentence = np.arange(len(ids)) // 7
    n_s = int(token_sentence.max()) + 1
    return query_features(loaded.model, list(ids), rows, token_sentence, n_s, with_heads=True,
                          store=8, shared=shared)


def test_passes_from_a_shared_start_equal_the_passes_alone(tiny_loaded):
    rng = np.random.default_rng(0)
    vocab = tiny_loaded.model.config.vocab_size
    trunk = rng.integers(10, vocab, 180)
    other = np.concatenate([trunk[:120], rng.integers(10, vocab, 50)])
    trunk_rows = [np.arange(30, 40), np.arange(150, 170)]
    other_rows = [np.arange(35, 45), np.arange(160, 170)]
    plan = plan_shared_start(
        [(trunk, np.unique(np.concatenate(trunk_rows))),
         (other, np.unique(np.concatenate(other_rows)))], store=8, least=16)
    assert plan.boundaries == (120,)
    clear_prefix_caches()
    service = passes_for(tiny_loaded.model)
    with service.meter() as alone:
        want_trunk = features(tiny_loaded, trunk, trunk_rows)
        want_other = features(tiny_loaded, other, other_rows)
    clear_prefix_caches()
    with service.meter() as together:
        got_trunk = features(tiny_loaded, trunk, trunk_rows, plan)
        got_other = features(tiny_loaded, other, other_rows, plan)
    for got, want in ((got_trunk, want_trunk), (got_other, want_other)):
        assert torch.allclose(got.token_attn, want.token_attn, atol=1e-5)
        assert torch.allclose(got.head_sentence, want.head_sentence, atol=1e-5)
    # The second rendering computed only its tokens past the boundary.
    assert alone.tokens - together.tokens == 120 - 8
    # Whichever runs first, the same steps: the same features to the last place.
    clear_prefix_caches()
    plan.state = None
    first_other = features(tiny_loaded, other, other_rows, plan)
    assert torch.equal(first_other.token_attn, got_other.token_attn)


@pytest.fixture(scope="module")
def s1(sample_path):
    return next(c for c in read_taubench(sample_path) if c.task_id == "s1")


def whole(conv, turn: int) -> TargetSpan:
    text = conv.turns[turn].text
    return TargetSpan(turn=turn, start=0, end=len(text), text=text)


def test_trace_reads_a_window_s_start_from_the_conversation_s_pass(tiny_loaded, s1,
                                                                   monkeypatch):
    tok = tiny_loaded.tokenizer
    full = render_conversation(s1, tok).full
    ends = {i: full.turn_tokens(i)[1] for i, t in enumerate(s1.turns) if t.role is Role.ASSISTANT}
    assert ends[6] <= LIMIT < ends[8]
    spans = {"six": whole(s1, 6), "eight": whole(s1, 8), "ten": whole(s1, 10)}
    settings = TraceSettings(max_tokens=LIMIT)

    def run():
        clear_prefix_caches()
        attributor = Attributor(tiny_loaded, make_scorer("avg-attention", settings, tiny_loaded))
        got = model_shares(attributor, s1, spans, get_methods(["tokengeist"]).values(), settings)
        return got, attributor

    monkeypatch.setattr(shared_start, "MIN_SHARED", 10**9)  # no plan: each pass alone
    alone, alone_cost = run()
    monkeypatch.setattr(shared_start, "MIN_SHARED", 32)
    together, together_cost = run()
    assert set(together.windows) == {"eight", "ten"}
    assert together_cost.model_tokens < alone_cost.model_tokens
    for key, span in spans.items():
        nodes = [TARGET, *range(1, span.turn)]  # the span, and each earlier turn asked about
        for node in nodes:
            want, got = alone.shares[key](node), together.shares[key](node)
            assert want.keys() == got.keys(), (key, node)
            assert all(abs(want[t] - got[t]) < 1e-5 for t in want), (key, node)
