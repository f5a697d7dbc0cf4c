"""Recomputed attention rows against the model's own eager ``output_attentions``: on the three
tiny architectures (the default model's, q/k norms, a sliding window), through each way rows
are recomputed (from hidden states; keys read from the cache after the layer ran, as the
online Tracer does; cached keys of the earlier tokens), and on the real model."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mtcabench.evaluate import load_model, render_conversation
from mtcabench.evaluate.attribution import _attention
from mtcabench.evaluate.attribution._attention import (
    attention_rows,
    layer_attention_rows,
    query_features,
    row_chunks,
)
from mtcabench.evaluate.attribution._loading import DEFAULT_MODEL, model_cache_dir
from mtcabench.evaluate.attribution._passes import RowHooks
from mtcabench.evaluate.online._state import _cache_keys
from mtcabench.ingest import read_taubench
from mtcabench.model import Role
from tests.support.tiny_models import ARCHITECTURES, SIZE, SLIDING_WINDOW

#: Recomputed weights against eager ones, float32 throughout: both are a softmax of the same
#: products summed in another order, equal to a few units in the sixth place.
ATOL = 1e-5


def max_diff(got: torch.Tensor, want: torch.Tensor) -> float:
    assert got.shape == want.shape
    return float((got - want).abs().max())


# ------------------------------------------------------------------ the tiny architectures


@pytest.fixture(scope="module", params=ARCHITECTURES)
def tiny_eager(request, tiny_models, sample_path):
    """A tiny model with the eager attention implementation (it can output attentions), the
    ids of a sample conversation (318 tokens), its assistant rows, and the eager weights
    ``[L, H, T, T]``."""
    arch = request.param
    lm = load_model(str(tiny_models[arch]), attn_implementation="eager")
    conv = list(read_taubench(sample_path))[2]
    lay = render_conversation(conv, lm.tokenizer).full
    rows = np.concatenate([np.arange(*lay.turn_tokens(t.index)) for t in conv.turns
                           if t.role is Role.ASSISTANT and t.text])
    with torch.inference_mode():
        out = lm.model(torch.tensor([lay.input_ids]), output_attentions=True)
    eager = torch.stack([a[0] for a in out.attentions])
    if arch == "mistral":  # the window masks keys of every row checked here
        assert rows.min() > 2 * SLIDING_WINDOW and (eager[:, :, rows, :rows.min() - 50] == 0).all()
    return arch, lm, lay.input_ids, rows, eager


def test_tiny_recomputed_rows_equal_eager_attention(tiny_eager, monkeypatch):
    arch, lm, ids, rows, eager = tiny_eager
    want = eager[:, :, rows, :]
    assert want.shape == (SIZE["num_hidden_layers"], SIZE["num_attention_heads"], len(rows),
                          len(ids))
    assert max_diff(attention_rows(lm.model, ids, rows), want) < ATOL
    # rows in many chunks (the window's mask and the causal one are set per chunk)
    monkeypatch.setattr(_attention, "row_chunks",
                        lambda n, h, t, budget=0: row_chunks(n, h, t, budget=h * t * 4 * 7))
    assert max_diff(attention_rows(lm.model, ids, rows), want) < ATOL


def test_tiny_features_are_the_reductions_of_the_eager_weights(tiny_eager, monkeypatch):
    """The features of a pass (every layer's rows computed at once after it, in chunks) are
    the reductions of the eager weights, on each architecture (q/k norms, a sliding window),
    with rows in many chunks and the pass run on from a stored prefix."""
    arch, lm, ids, rows, eager = tiny_eager
    queries = [rows[: len(rows) // 3], rows[len(rows) // 3 :], rows[-5:]]
    n_s = 7
    token_sentence = np.arange(len(ids)) % (n_s + 1) - 1  # -1: in no sentence
    # chunks of a few rows each (the mask and the keys' extent are set per chunk)
    monkeypatch.setattr(_attention, "CHUNK_BYTES", 2 * 4 * len(ids) * 4 * 5)
    feats = query_features(lm.model, ids, queries, token_sentence, n_s, with_heads=True,
                           sinks=False, store=int(rows[0]) - 10)
    last = int(rows.max())
    ts = token_sentence[: last + 1]
    for qi, q in enumerate(queries):
        a = eager[:, :, q, : last + 1].mean(dim=2)  # [L, H, T]
        assert max_diff(feats.token_attn[qi], a.mean(dim=(0, 1))) < 1e-6
        for s in range(n_s):
            assert max_diff(feats.head_sentence[qi, :, :, s], a[:, :, ts == s].sum(-1)) < ATOL


def test_tiny_recomputation_does_not_depend_on_the_attention_kernel(tiny_eager, tiny_models):
    arch, lm, ids, rows, eager = tiny_eager
    sdpa = load_model(str(tiny_models[arch]))
    assert sdpa.model is not lm.model and sdpa.model.config._attn_implementation == "sdpa"
    assert max_diff(attention_rows(sdpa.model, ids, rows), eager[:, :, rows, :]) < ATOL


def cached_pass_rows(model, ids: list[int], p: int, rows: np.ndarray, *, after: bool):
    """Rows of tokens ``p..`` recomputed in a pass over them with the cache of tokens ``..p``:
    ``after`` the layer's attention with every key read from the cache (the online Tracer's
    way), or before it with the cached keys of the tokens before ``p`` (``past_keys``)."""
    import inspect

    from transformers import DynamicCache

    cache = DynamicCache()
    # as the Tracer: transformers 5 names the cache argument ``cache``
    arg = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    with torch.inference_mode():
        model(input_ids=torch.tensor([ids[:p]]), use_cache=True, **{arg: cache})
    rows_t = torch.as_tensor(rows)
    out: list[torch.Tensor] = []

    def on_layer(layer, module, hidden, pe):
        keys = _cache_keys(cache, module.layer_idx)
        if after:
            fn = layer_attention_rows(module, hidden, pe, rows_t, keys=keys)
        else:
            assert keys.shape[-2] == p  # this layer's keys of the new tokens are not in yet
            fn = layer_attention_rows(module, hidden, pe, rows_t, past_keys=keys)
        w = fn(slice(None))
        out.append(torch.nn.functional.pad(w, (0, len(ids) - w.shape[-1])))

    with RowHooks(model, on_layer, after=after), torch.inference_mode():
        model(input_ids=torch.tensor([ids[p:]]), use_cache=True, **{arg: cache})
    return torch.stack(out)


@pytest.mark.parametrize("after", [True, False], ids=["keys-from-cache", "past-keys"])
def test_tiny_rows_over_a_cache_equal_eager_attention(tiny_eager, after):
    """The keys of earlier tokens come from the key/value cache (rotated as the model keeps
    them) in two ways: read after the layer's attention, every key of the conversation (what
    the online Tracer does), or before it, the earlier tokens' only (``past_keys``)."""
    arch, lm, ids, rows, eager = tiny_eager
    p = int(rows[len(rows) // 2])  # the pass starts inside an answer
    later = rows[rows >= p]
    got = cached_pass_rows(lm.model, ids, p, later, after=after)
    assert max_diff(got, eager[:, :, later, :]) < ATOL


# ------------------------------------------------------------------ the real model


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
    assert torch.allclose(got, want, atol=ATOL)
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
