"""The ablation base scorer: its LASSO, its cached-prefix passes, its passes per conversation."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from mtcabench.benchmark import load_benchmark
from mtcabench.errors import InputError
from mtcabench.evaluate import (
    AblationSettings,
    Attributor,
    TraceSettings,
    make_scorer,
    render_conversation,
    trace_benchmark,
    trace_conversation,
)
from mtcabench.evaluate.attribution._ablation import (
    Ablation,
    AblationData,
    PrefixRunner,
    balanced_masks,
    lasso,
    surrogate_scores,
    turn_columns,
)
from mtcabench.evaluate.attribution._engine import Query
from mtcabench.evaluate.attribution._render import Sentence


def test_lasso_recovers_a_sparse_linear_model():
    rng = np.random.default_rng(0)
    x = rng.random((64, 12)) < 0.5
    w_true = np.zeros(12)
    w_true[[2, 7]] = [3.0, -1.5]
    y = x @ w_true + 0.25
    w, b = lasso(x, y, alpha=1e-6)
    assert np.abs(w - w_true).max() < 1e-3 and abs(b - 0.25) < 1e-3
    # a large L1 weight leaves nothing but the mean
    w, b = lasso(x, y, alpha=100.0)
    assert not w.any() and abs(b - y.mean()) < 1e-12


def test_lasso_meets_its_optimality_conditions():
    # On standardised columns: |X^T r / n| <= alpha everywhere, = alpha with w's sign where w != 0.
    rng = np.random.default_rng(1)
    x = (rng.random((32, 40)) < 0.5).astype(float)  # more sources than passes, as in a conversation
    y = x[:, :5] @ np.array([2.0, -1.0, 0.5, 0.0, 1.5]) + rng.normal(scale=0.1, size=32)
    alpha = 0.05
    w, b = lasso(x, y, alpha)
    scale = x.std(axis=0)
    scale[scale == 0] = 1
    xs = (x - x.mean(axis=0)) / scale
    ws = w * scale
    grad = xs.T @ (y - y.mean() - xs @ ws) / len(y)
    assert np.all(np.abs(grad) <= alpha + 1e-6)
    on = np.abs(ws) > 1e-9
    assert on.any() and np.allclose(grad[on], alpha * np.sign(ws[on]), atol=1e-6)


class _Sentences:
    """Stands in for a rendered conversation: only its sentences are read by the planner."""

    def __init__(self, turns_of_sentences):
        self.sentences = [Sentence(t, 0, 1) for t in turns_of_sentences]


def test_every_turn_is_kept_in_the_same_number_of_passes():
    masks = balanced_masks(7, 16, 0.5, np.random.default_rng(0))
    assert masks.shape == (16, 7) and (masks.sum(axis=0) == 8).all()
    # never a unit kept always or never (no effect to measure), whatever keep says
    assert (balanced_masks(3, 4, 0.99, np.random.default_rng(0)).sum(axis=0) == 3).all()
    assert balanced_masks(0, 4, 0.5, np.random.default_rng(0)).shape == (4, 0)


def test_passes_leave_out_whole_turns_and_read_every_query_as_often():
    # Sentences 0-1 in turn 0, 2-5 in turn 2 (an assistant turn of four sentences), 6 in turn 3.
    rendered = _Sentences([0, 0, 2, 2, 2, 2, 3])
    droppable = list(range(7))
    drops = Ablation(passes=8).plan_conversation(rendered, droppable, np.random.default_rng(1))
    assert len(drops) == 8  # K passes (+1 whole pass when run), whatever spans and steps
    for drop in drops:  # a turn is dropped whole or not at all
        assert {frozenset(drop & {0, 1}), frozenset(drop & {2, 3, 4, 5})} <= {
            frozenset(), frozenset({0, 1}), frozenset({2, 3, 4, 5})}
    # the four-sentence turn is read (kept) in exactly half of the passes, as the others
    assert sum(not (drop & {2, 3, 4, 5}) for drop in drops) == 4
    assert sum(not (drop & {6}) for drop in drops) == 4
    assert turn_columns(rendered, droppable) == [[0, 1], [2, 3, 4, 5], [6]]


def test_surrogate_over_turn_columns_gives_each_sentence_its_turns_weight():
    rendered = _Sentences([0, 0, 1, 2])
    rng = np.random.default_rng(2)
    droppable = [0, 1, 2, 3]
    columns = turn_columns(rendered, droppable)
    turn_masks = balanced_masks(len(columns), 32, 0.5, rng)
    masks = turn_masks[:, [0, 0, 1, 2]]  # sentences follow their turn
    outputs = (3.0 * turn_masks[:, 1] + 0.1 * rng.normal(size=32))[None]
    data = AblationData(droppable, masks, outputs, np.array([1]))
    scores = surrogate_scores(data, rendered, [Query("q", 2, 0, 1)], 1e-4, columns)[0]
    assert scores[2] == pytest.approx(3.0, abs=0.1)  # turn 1 matters
    assert scores[0] == scores[1] and abs(scores[0]) < 0.1  # turn 0's sentences share a weight
    assert np.isnan(scores[3])  # the query's own turn is no column


def test_settings_are_checked():
    with pytest.raises(InputError, match="ablation passes must be 2 to"):
        make_scorer("ablation", TraceSettings(scorers={"ablation": AblationSettings(passes=1)}),
                    None)
    assert make_scorer("ablation", TraceSettings(), None).parameters()["passes"] == 32


@pytest.mark.model
def test_a_pass_reuses_the_cached_prefix_and_matches_a_full_forward(loaded, sample_benchmark):
    bench = load_benchmark(sample_benchmark)
    conv = next(iter(bench.conversations.values()))
    rendered = render_conversation(conv, loaded.tokenizer)
    full = rendered.full
    last = conv.turns[-1]
    rows = np.arange(*full.span_tokens(last.index, 0, len(last.text)))
    runner = PrefixRunner(loaded.model, full.input_ids, rows)
    middle = [i for i, s in enumerate(rendered.sentences) if 0 < s.turn < last.index][-2]
    layout = rendered.layout({middle})
    rows_d = np.arange(*layout.span_tokens(last.index, 0, len(last.text)))
    got = runner.logprobs(layout.input_ids, rows_d)
    # the same tokens, run from scratch without any cache
    ids = torch.as_tensor(layout.input_ids[: int(rows_d.max()) + 1])[None]
    with torch.inference_mode():
        logp = torch.log_softmax(loaded.model(input_ids=ids).logits[0].double(), dim=-1)
    want = logp[torch.as_tensor(rows_d - 1), ids[0, rows_d]].numpy()
    assert np.abs(np.array([got[int(r)] for r in rows_d]) - want).max() < 1e-4
    # only the tokens from the first left-out sentence on were run again
    first = int(np.flatnonzero(np.asarray(layout.input_ids[: len(full.input_ids)])
                               != np.asarray(full.input_ids[: len(layout.input_ids)]))[0])
    assert runner.fed_tokens == int(rows_d.max()) + 1 - first
    assert first > 0.5 * len(layout.input_ids)


@pytest.mark.model
def test_forward_passes_do_not_grow_with_spans_or_recursion_steps(loaded, sample_benchmark,
                                                                  tmp_path):
    settings = TraceSettings(scorers={"ablation": AblationSettings(passes=2)})
    scorer = Ablation(passes=2)
    bench = load_benchmark(sample_benchmark)
    by_conv: dict[str, list] = {}
    for s in bench.spans:
        by_conv.setdefault(s.conversation_id, []).append(s)
    cid, spans = max(by_conv.items(), key=lambda kv: len(kv[1]))
    conv = bench.conversations[cid]
    passes = {}
    for methods, n in ((["flat"], 1), (["flat", "tokengeist"], len(spans))):
        att = Attributor(loaded, scorer, seed=0)
        res = trace_conversation(att, conv, spans[:n], methods, settings)
        passes[tuple(methods), n] = res.forward_passes
    # K ablations + the whole pass, for one span or all, flat or Tokengeist's recursion
    assert len(spans) > 1 and set(passes.values()) == {3}, passes
    # the submission header counts them: (K + 1) per conversation
    out = tmp_path / "tg.jsonl"
    report = trace_benchmark(sample_benchmark, {"tokengeist": out}, model=loaded,
                             scorer="ablation", settings=settings, progress=False)
    header = json.loads(out.read_text().splitlines()[0])
    assert header["notes"]["forward_passes"] == report.forward_passes == 3 * len(by_conv)
    assert header["parameters"]["scorer_parameters"]["passes"] == 2
    entries = [json.loads(x) for x in out.read_text().splitlines()[1:]]
    assert any(e["edges"] for e in entries)  # causal scores that select parents
