"""Recomputed attention rows against the model's own eager ``output_attentions``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mtcabench.evaluate import render_conversation
from mtcabench.evaluate.attribution import _attention
from mtcabench.evaluate.attribution._attention import attention_rows, query_features
from mtcabench.evaluate.attribution._loading import DEFAULT_MODEL, model_cache_dir
from mtcabench.ingest import read_taubench
from mtcabench.model import Role

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def eager_model(loaded):
    """The same weights with the eager attention implementation (it can output attentions)."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_cache_dir() / DEFAULT_MODEL,
                                                 attn_implementation="eager")
    return model.eval()


@pytest.fixture(scope="module")
def case(loaded, sample_path):
    """A sample conversation, its rows (assistant turns), and the eager attention tensor."""
    conv = list(read_taubench(sample_path))[2]
    r = render_conversation(conv, loaded.tokenizer)
    lay = r.full
    queries = [np.arange(*lay.turn_tokens(t.index)) for t in conv.turns
               if t.role is Role.ASSISTANT and t.text]
    return conv, r, queries


@pytest.fixture(scope="module")
def eager_attn(eager_model, case):
    _, r, _ = case
    with torch.inference_mode():
        out = eager_model(torch.tensor([r.full.input_ids]), output_attentions=True)
    return torch.stack([a[0] for a in out.attentions])  # [L, H, T, T]


def test_recomputed_rows_equal_eager_attentions(eager_model, case, eager_attn):
    _, r, queries = case
    rows = np.concatenate(queries)
    got = attention_rows(eager_model, r.full.input_ids, rows)
    want = eager_attn[:, :, rows, :]
    assert got.shape == want.shape == (30, 9, len(rows), r.full.num_tokens)
    assert torch.allclose(got, want, atol=1e-5)
    assert torch.allclose(got.sum(-1), torch.ones_like(got.sum(-1)), atol=1e-4)


def test_recomputation_does_not_depend_on_the_model_attention_kernel(loaded, eager_model, case):
    _, r, queries = case
    rows = queries[-1]
    assert loaded.model.config._attn_implementation == "sdpa"
    assert torch.allclose(attention_rows(loaded.model, r.full.input_ids, rows),
                          attention_rows(eager_model, r.full.input_ids, rows), atol=1e-5)


def test_features_are_the_reductions_of_the_eager_weights(loaded, case, eager_attn, monkeypatch):
    _, r, queries = case
    lay = r.full
    n_s = len(r.sentences)
    # tiny chunks: several row chunks per layer must add up to the same features
    monkeypatch.setattr(_attention, "CHUNK_BYTES", 9 * lay.num_tokens * 4 * 7)
    feats = query_features(loaded.model, lay.input_ids, queries, lay.token_sentence, n_s,
                           with_heads=True)
    last = max(int(q.max()) for q in queries)
    # The features' sentence of each token: the layout's, with the attention sinks in none.
    ts = feats.token_sentence
    sinks = _attention.sink_positions(loaded.model, lay.input_ids)
    assert (ts == _attention.without_sinks(lay.token_sentence, sinks)[: last + 1]).all()
    for qi, rows in enumerate(queries):
        a = eager_attn[:, :, rows, : last + 1].mean(dim=2)  # [L, H, T]
        assert torch.allclose(feats.token_attn[qi], a.mean(dim=(0, 1)), atol=1e-6)
        before = ts[: rows[0]]
        for s in (0, n_s // 2, int(before[before >= 0][-1])):  # incl. the nearest earlier sentence
            mass = a[:, :, ts == s].sum(-1)
            assert torch.allclose(feats.head_sentence[qi, :, :, s], mass, atol=1e-5)
    assert feats.head_sentence.shape == (len(queries), 30, 9, n_s)
