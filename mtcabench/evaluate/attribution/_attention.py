"""Attention rows recomputed from hidden states, for the query tokens that are attributed only.

One forward pass over a conversation holds the attention of every turn to everything before
it. Asking the model for it (``output_attentions``) materialises layers x heads x T x T
weights; attribution needs the rows of a few hundred query tokens. So we let the model run
its normal (fast) forward pass through the pass service (:mod:`._passes`, which may start it
from a stored prefix) and, with a hook after every attention module, project that layer's
queries of the needed rows from its attention input (one small product per layer: the hooks
do nothing else). After the pass the rows' weights are computed for every layer at once
(:func:`_weight_chunks`): the queries rotated with the model's own rotary function, read
against the keys of every token in the pass's key/value cache (the model's own, rotated: none
is recomputed), grouped-query heads read from their key head, causal (and sliding-window)
masking, softmax in float32; in chunks of rows, each reduced at once to what the base scorers
read (:class:`PassFeatures`) and overwritten by the next, so memory is two buffers of at most
:data:`CHUNK_BYTES` (layers x heads x rows x keys), never T squared times layers. A handful
of operations per chunk rather than dozens per layer: on shared CPU cores (where every
operation waits for a thread pool) or a GPU (a launch each), recomputing the rows adds little
to the pass itself. The online Tracer recomputes a few rows per layer as its passes run
(:func:`layer_attention_rows`).

Supported: decoder attention modules with ``q_proj``/``k_proj`` (optionally ``q_norm``/
``k_norm``), ``head_dim``, ``scaling``, ``num_key_value_groups`` and rotary embeddings
passed as ``position_embeddings`` (Llama, Mistral, Qwen2/3, SmolLM, ...). Anything else is
refused with a message naming the module class, never attributed silently wrong.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import torch

from mtcabench.errors import InputError
from mtcabench.evaluate.attribution._passes import (
    attention_modules,
    layer_states,
    new_cache,
    passes_for,
    sliding_window,
)
from mtcabench.evaluate.attribution._shared_start import SharedStart

#: Upper bound on one chunk of recomputed weights (float32), in bytes: layers x heads x rows x
#: keys in :func:`_weight_chunks` (its products and its weights: two such buffers), heads x
#: rows x keys per layer where :func:`row_chunks` cuts rows for :func:`layer_attention_rows`.
CHUNK_BYTES = 128 * 2**20


def _rope_function(module) -> Callable:
    fn = getattr(sys.modules[type(module).__module__], "apply_rotary_pos_emb", None)
    if fn is None:
        raise InputError(f"{type(module).__name__}: no apply_rotary_pos_emb in its module; "
                         "rotary position embeddings are needed to recompute attention")
    return fn


def layer_attention_rows(
    module, hidden: torch.Tensor, position_embeddings, rows: torch.Tensor,
    past_keys: torch.Tensor | None = None, keys: torch.Tensor | None = None,
) -> Callable[[slice], torch.Tensor]:
    """A function giving the attention weights ``[heads, r, t]`` of a chunk of ``rows``, over
    the first ``t`` tokens, ``t`` the chunk's last row + 1 (later tokens get no weight).

    ``hidden`` is the attention module's input ``[1, n, d]`` (after the layer's input norm).
    Keys (of all tokens) and queries (of the rows) are computed once; weights per chunk of
    rows. With ``past_keys``
    (the layer's cached keys ``[1, kv_heads, P, head_dim]`` of the P tokens before ``hidden``'s,
    already rotated, as a key/value cache holds them), ``hidden`` and ``position_embeddings``
    cover positions ``P .. P+n-1``, the weights span all ``T = P + n`` tokens and ``rows`` are
    absolute positions of ``hidden``'s tokens. With ``keys`` (the layer's cache *after* its
    attention ran: the rotated keys ``[1, kv_heads, T, head_dim]`` of every token, ``hidden``'s
    last), the keys are read, not recomputed (the online tracer's case: its hook runs after
    the layer's attention, so the model's own keys serve).
    """
    h = hidden[0]
    n = h.shape[0]
    hd = module.head_dim
    rope = _rope_function(module)
    cos, sin = position_embeddings
    if keys is not None:
        k, T = keys, keys.shape[-2]
        P = T - n
    else:
        P = 0 if past_keys is None else past_keys.shape[-2]
        T = P + n
        k = module.k_proj(h).view(n, -1, hd)
        if getattr(module, "k_norm", None) is not None:
            k = module.k_norm(k)
        k = k.transpose(0, 1).unsqueeze(0)  # [1, kvH, n, hd]
        k = rope(k, k, cos, sin)[0]
        if past_keys is not None:
            k = torch.cat([past_keys.to(k.dtype), k], dim=2)  # [1, kvH, T, hd]
    # Grouped-query heads share a key head: query head j reads key head j // groups. The
    # queries are grouped instead of the keys expanded (no copy of every key per group).
    k = k[0].float()  # [kvH, T, hd]
    groups = module.num_key_value_groups
    keys = torch.arange(T, device=h.device)
    window = sliding_window(module)
    # Queries of every row at once (small: rows x heads x head_dim), scaled once.
    q = module.q_proj(h[rows - P]).view(len(rows), -1, hd)
    if getattr(module, "q_norm", None) is not None:
        q = module.q_norm(q)
    q = q.transpose(0, 1).unsqueeze(0)  # [1, H, R, hd]
    q = rope(q, q, cos[:, rows - P], sin[:, rows - P])[0][0].float() * module.scaling
    n_heads = q.shape[0]
    q = q.reshape(n_heads // groups, groups, len(rows), hd)  # [kvH, groups, R, hd]
    kt = k.transpose(1, 2)

    def weights(chunk: slice) -> torch.Tensor:
        r = rows[chunk]
        # Keys after the chunk's last row get no weight (causal): they are left out, so the
        # weights cover the first ``t = last row + 1`` tokens only.
        t = int(r.max()) + 1
        qc = q[:, :, chunk].reshape(n_heads // groups, groups * len(r), hd)
        scores = torch.matmul(qc, kt[:, :, :t]).view(n_heads, len(r), t)  # [H, r, t]
        ks = keys[:t]
        if window:
            masked = (ks[None, :] > r[:, None]) | (ks[None, :] <= r[:, None] - window)
            scores.masked_fill_(masked[None], float("-inf"))
        else:  # causal only: no key before the chunk's first row is masked
            r0 = int(r.min())
            scores[:, :, r0:].masked_fill_((ks[None, r0:] > r[:, None])[None], float("-inf"))
        return torch.softmax(scores, dim=-1)

    return weights


def row_chunks(n_rows: int, n_heads: int, n_tokens: int, budget: int = CHUNK_BYTES) -> list[slice]:
    """Row chunks keeping one chunk's weights under ``budget`` bytes."""
    per_row = max(1, n_heads * n_tokens * 4)
    size = max(1, budget // per_row)
    return [slice(i, min(i + size, n_rows)) for i in range(0, n_rows, size)]


def forward(model, input_ids: list[int] | torch.Tensor) -> None:
    """One plain pass of the model over ``input_ids`` (batch of one; no prefix reused, only the
    last logit kept): the least any attribution needs, for the performance scripts."""
    passes_for(model).forward(torch.as_tensor(input_ids).tolist())


def attention_rows(model, input_ids, rows) -> torch.Tensor:
    """Attention weights ``[layers, heads, R, T]`` of ``rows`` (the sink probe, tests and small
    inspections: the whole tensor is materialised)."""
    device = next(model.parameters()).device
    uniq, inverse = np.unique(np.asarray(rows, dtype=np.int64), return_inverse=True)
    rows_t = torch.as_tensor(uniq, device=device)
    T = len(input_ids)
    captured, cache = _rows_pass(model, list(input_ids), rows_t, reuse=int(uniq[0]))
    n_heads = next(iter(captured.values()))[1].shape[1]
    out = torch.zeros(len(captured), n_heads, len(uniq), T, device=device)
    for index, chunk, w in _weight_chunks(captured, cache, rows_t):
        out[index, :, chunk, : w.shape[-1]] = w
    return out[:, :, torch.as_tensor(inverse.reshape(-1), device=device)].cpu()


#: Tokens the sink probe runs over (the start of the input) and the share of attention a
#: token must draw from every probe row to be a sink (see :func:`sink_positions`).
SINK_PROBE_TOKENS = 64
SINK_SHARE = 0.05


def sink_positions(model, input_ids: list[int] | np.ndarray) -> np.ndarray:
    """Positions of the attention sinks at the start of ``input_ids``: the tokens that draw at
    least ``SINK_SHARE`` of the attention (averaged over heads and layers) of *every* row of a
    probe, whatever those rows are about.

    Causal LMs park the attention a head has no use for on a few early tokens (Xiao et al.
    2024, "attention sinks"), and not only on the first: SmolLM2 parks about a tenth of every
    query's attention on the fifth token, the second word of the system prompt. Counted as
    content, that token made the system prompt a parent of nearly everything. Which tokens
    are sinks depends on the model, so they are measured, not assumed: a forward pass over the
    first ``SINK_PROBE_TOKENS`` tokens (the model is causal: their attention is the same in
    the whole conversation), rows the second half, candidates the first half; a content token
    draws that much attention from some rows (those that read it) but not from all.
    """
    ids = np.asarray(input_ids, dtype=np.int64)
    n = min(len(ids), SINK_PROBE_TOKENS)
    if n < 4:
        return np.zeros(0, dtype=np.int64)
    probe = ids[:n]

    def probed() -> np.ndarray:
        half = n // 2
        w = attention_rows(model, probe.tolist(), torch.arange(half, n))  # [L, H, R, n]
        floor = w.float().mean(dim=(0, 1))[:, :half].min(dim=0).values
        return np.flatnonzero(floor.numpy() >= SINK_SHARE).astype(np.int64)

    # A function of the model and the probe's ids alone: every conversation of a domain
    # starts with the same system policy, so the probe runs once per policy and process.
    return passes_for(model).remember(("sinks", probe.tobytes()), probed).copy()


def without_sinks(token_sentence: np.ndarray, sinks: np.ndarray) -> np.ndarray:
    """``token_sentence`` with the sink positions in no sentence (as template tokens)."""
    out = np.array(token_sentence, dtype=np.int64, copy=True)
    out[sinks[sinks < len(out)]] = -1
    return out


@dataclass
class PassFeatures:
    """What one forward pass yields for a set of queries (a query is a set of rows).

    - ``token_attn[q, t]``: attention of query q to token t, averaged over its rows, all
      heads and all layers (AttnTrace's token scores; average attention summed per sentence).
    - ``head_sentence[q, l, h, s]``: attention mass of head (l, h) on sentence s, averaged
      over the query's rows (AT2's features); only when asked for.
    - ``token_sentence[t]``: global sentence id of token t (-1: template or dropped).
    - ``present[s]``: whether sentence s is in this pass's input (context subsampling).
    """

    token_attn: torch.Tensor
    head_sentence: torch.Tensor | None
    token_sentence: np.ndarray
    present: np.ndarray
    num_layers: int
    num_heads: int


def query_features(
    model,
    input_ids: list[int],
    query_rows: list[np.ndarray],
    token_sentence: np.ndarray,
    num_sentences: int,
    *,
    with_heads: bool,
    sinks: bool = True,
    store: int = 0,
    shared: SharedStart | None = None,
) -> PassFeatures:
    """One forward pass; per-query attention features from recomputed rows (see PassFeatures).

    With ``sinks`` (the default), the attention sinks (:func:`sink_positions`) belong to no
    sentence: their attention is the model's resting place, not a reading of the text. The
    tokens before the first row may come from the prefix cache; ``store``: the input's first
    ``store`` tokens are worth keeping there for later conversations (a system prompt).
    ``shared``: the conversation's shared start (:mod:`._shared_start`); a pass that begins as
    its trunk does runs on from it.

    The pass's hooks only project the rows' queries; the weights are computed after it for
    every layer at once, chunk by chunk (see the module docstring), and reduced as they come.
    """
    if sinks:
        token_sentence = without_sinks(token_sentence, sink_positions(model, input_ids))
    device = next(model.parameters()).device
    n_q = len(query_rows)
    last = max((int(r.max()) for r in query_rows if len(r)), default=-1)
    # Tokens after the last query row cannot change any needed row (causal model).
    ids = list(input_ids[: last + 1]) if last >= 0 else list(input_ids[:1])
    T = len(ids)
    union = np.unique(np.concatenate([r for r in query_rows if len(r)] or [np.zeros(0, np.int64)]))
    rows_t = torch.as_tensor(union, dtype=torch.long, device=device)
    # weight[q, j]: 1/|rows of q| where union row j belongs to query q (a mean over its rows).
    weight = torch.zeros(n_q, len(union), device=device)
    for q, r in enumerate(query_rows):
        if len(r):
            weight[q, np.searchsorted(union, r)] = 1.0 / len(r)
    sent = torch.as_tensor(token_sentence[:T], dtype=torch.long, device=device)
    sent = torch.where(sent < 0, torch.full_like(sent, num_sentences), sent)  # bucket for "none"
    modules = attention_modules(model)
    n_layers = len(modules)
    heads = getattr(modules[0].config, "num_attention_heads", None) or 1
    token_attn = torch.zeros(n_q, T, device=device)
    head_sentence = None
    if len(union):
        at = shared.boundary_for(ids, union) if shared is not None else 0
        if at:
            captured, cache = _shared_rows_pass(model, shared, ids, rows_t, at)
        else:
            captured, cache = _rows_pass(model, ids, rows_t, reuse=int(union[0]),
                                         store=min(store, T))
        heads = next(iter(captured.values()))[1].shape[1]
        n_s1 = num_sentences + 1
        if with_heads:
            head_sentence = torch.zeros(n_q, n_layers, heads, n_s1, device=device)
        for index, chunk, w in _weight_chunks(captured, cache, rows_t,
                                              per_row=n_s1 if with_heads else 0):
            t = w.shape[-1]
            token_attn[:, :t].add_(weight[:, chunk] @ w.sum(dim=(0, 1)))
            if with_heads:
                per_sentence = w.new_zeros(*w.shape[:3], n_s1).index_add_(3, sent[:t], w)
                head_sentence.index_add_(1, index, torch.einsum(
                    "qr,lhrs->qlhs", weight[:, chunk], per_sentence))
    token_attn /= n_layers * heads
    present = np.zeros(num_sentences, dtype=bool)
    ts = token_sentence[:T]
    present[np.unique(ts[ts >= 0])] = True
    if with_heads and head_sentence is None:
        head_sentence = torch.zeros(n_q, n_layers, heads, num_sentences + 1, device=device)
    return PassFeatures(
        token_attn=token_attn.cpu(),
        head_sentence=None if head_sentence is None else head_sentence[..., :num_sentences].cpu(),
        token_sentence=np.asarray(token_sentence[:T]),
        present=present,
        num_layers=n_layers,
        num_heads=heads,
    )


def _rows_pass(model, ids: list[int], rows: torch.Tensor, *, reuse: int, store: int = 0,
               cache=None) -> tuple[dict[int, tuple], object]:
    """One pass over ``ids`` whose hooks project the queries of ``rows`` (sorted positions) at
    every layer, as the layer computes them (its own projection and norm; the rotation waits):
    per layer ``(module, queries [R, H, head_dim], position embeddings, the rows' positions
    in the pass's tokens)``, and the pass's key/value cache (every token's rotated keys).
    ``cache``: the key/value states of the first tokens, the pass runs on from them."""
    captured: dict[int, tuple] = {}

    def on_layer(layer, module, hidden, pe, keys):
        local = rows - (keys.shape[-2] - hidden.shape[1])  # the pass may start after a prefix
        q = module.q_proj(hidden[0, local]).view(len(rows), -1, module.head_dim)
        if getattr(module, "q_norm", None) is not None:
            q = module.q_norm(q)
        captured[layer] = (module, q, pe, local)

    result = passes_for(model).forward(ids, cache=cache, on_layer=on_layer, reuse=reuse,
                                       store=store)
    return captured, result.cache


# --------------------------------------------------------------------------- a shared start


def _shared_rows_pass(model, shared: SharedStart, ids: list[int], rows: torch.Tensor, at: int
                      ) -> tuple[dict[int, tuple], object]:
    """:func:`_rows_pass` run on from the shared start's states at boundary ``at`` (run first
    when no pass has run it): the rows from ``at`` on are captured by this pass, those before
    read from the start's (:mod:`._shared_start`)."""
    if shared.state is None:
        shared.state = _run_start(model, shared)
    states, start = shared.state
    cache = new_cache([(k[:, :, :at], v[:, :, :at]) for k, v in states])
    later = rows[rows >= at]
    captured, cache = _rows_pass(model, ids, later, reuse=at, cache=cache)
    before = np.searchsorted(shared.rows, rows[rows < at].cpu().numpy())
    parts = [(start, torch.as_tensor(before, device=rows.device))] if len(before) else []
    return _joined([*parts, (_gathered(captured), None)]), cache


def _run_start(model, shared: SharedStart) -> tuple[list[tuple], dict[int, tuple]]:
    """The shared start's passes, one step up to each boundary (the first from the prefix
    cache's boundary, as any pass): the key/value states after the last and every planned row
    captured (per layer, in row order: :func:`_gathered`'s form)."""
    device = next(model.parameters()).device
    rows = shared.rows
    cache, pieces, done = None, [], 0
    for b in shared.boundaries:
        step = rows[(rows >= done) & (rows < b)]
        ids = shared.ids[:b].tolist()
        store = 0 if done else shared.store  # the prefix cache's boundary: in the first step
        if len(step):
            captured, cache = _rows_pass(model, ids, torch.as_tensor(step, device=device),
                                         reuse=int(step[0]), store=store, cache=cache)
            pieces.append((_gathered(captured), None))
        else:  # no row to capture in this step: a plain pass on
            cache = passes_for(model).forward(ids, cache=cache, reuse=b - 1, store=store).cache
        done = b
    return layer_states(cache), (_joined(pieces) if pieces else {})


def _gathered(captured: dict[int, tuple]) -> dict[int, tuple]:
    """``captured`` with each layer's rotary embeddings cut to its rows: per layer ``(module,
    queries [R, H, head_dim], (cos, sin) [1, R, head_dim])``. Layers that shared embeddings
    share the cut ones (:func:`_weight_chunks` groups layers by them)."""
    cut: dict[int, tuple] = {}
    out = {}
    for layer, (module, q, pe, local) in captured.items():
        if id(pe[0]) not in cut:
            cut[id(pe[0])] = (pe[0][:, local], pe[1][:, local])
        out[layer] = (module, q, cut[id(pe[0])])
    return out


def _joined(pieces: list[tuple[dict[int, tuple], torch.Tensor | None]]) -> dict[int, tuple]:
    """Captured rows of several steps (:func:`_gathered`'s form, each with the indices of its
    rows to keep, None: all), in order, in :func:`_rows_pass`'s form (the rows' positions in
    the joined embeddings)."""
    joined: dict[tuple, tuple] = {}
    out = {}
    for layer in pieces[0][0]:
        parts = [(p[layer], keep) for p, keep in pieces]
        key = tuple((id(part[2][0]), id(keep)) for part, keep in parts)
        if key not in joined:
            joined[key] = tuple(torch.cat([_kept(part[2][i], keep, 1) for part, keep in parts],
                                          dim=1) for i in (0, 1))
        q = torch.cat([_kept(part[1], keep, 0) for part, keep in parts])
        cos = joined[key][0]
        out[layer] = (parts[0][0][0], q, joined[key],
                      torch.arange(cos.shape[1], device=cos.device))
    return out


def _kept(x: torch.Tensor, keep: torch.Tensor | None, dim: int) -> torch.Tensor:
    """The rows ``keep`` of ``x`` along ``dim`` (all: None)."""
    return x if keep is None else x.index_select(dim, keep)


def batched_row_chunks(rows: np.ndarray, per_key: int, extra: int = 0,
                       budget: int | None = None) -> list[slice]:
    """Chunks of sorted ``rows`` whose weights (``per_key`` floats per row and key, over the
    keys up to the chunk's last row, plus ``extra`` floats per row) stay under ``budget`` bytes
    (:data:`CHUNK_BYTES`); at least one row each. Rows early in the input read fewer keys, so
    their chunks hold more rows."""
    budget = CHUNK_BYTES if budget is None else budget
    out, i = [], 0
    while i < len(rows):
        j = i + 1
        while j < len(rows) and (j + 1 - i) * (per_key * (int(rows[j]) + 1) + extra) * 4 <= budget:
            j += 1
        out.append(slice(i, j))
        i = j
    return out


def _weight_chunks(captured: dict[int, tuple], cache, rows: torch.Tensor, per_row: int = 0
                   ) -> Iterator[tuple[torch.Tensor, slice, torch.Tensor]]:
    """The attention weights of ``rows`` (sorted positions) from the queries :func:`_rows_pass`
    projected and the keys of its cache, as ``(layers, chunk of rows, weights [layers, heads,
    rows of the chunk, t])``, ``t`` the chunk's last row + 1 (later keys get no weight). The
    weights are a buffer the next chunk overwrites: reduce them before asking for it.

    Layers alike (the same rotary embeddings, window, scale and grouping: every layer of the
    supported models) are computed together: their queries rotated at once, their keys stacked,
    and per chunk one product, one mask and one softmax over all of them, into two buffers of
    at most :data:`CHUNK_BYTES` (counting ``per_row`` more floats per row and layer-head for the
    caller's reduction). A few operations per chunk however many layers: recomputing the rows
    adds little to the pass however the machine runs small operations (a thread pool on shared
    cores, a GPU's launches)."""
    from mtcabench.evaluate.attribution._passes import cache_keys

    groups: dict[tuple, list[int]] = {}
    for layer in sorted(captured):
        module, _, pe, _ = captured[layer]
        key = (id(pe[0]), id(pe[1]), sliding_window(module), module.scaling,
               module.num_key_value_groups, module.head_dim, _rope_function(module))
        groups.setdefault(key, []).append(layer)
    bounds = rows.cpu().numpy()
    for (_, _, window, scaling, n_groups, hd, rope), layers in groups.items():
        _, _, (cos, sin), local = captured[layers[0]]
        q = torch.stack([captured[la][1] for la in layers]).transpose(1, 2)  # [Lg, H, R, hd]
        # The model's rotation (its k argument a one-position dummy, broadcast), then float32.
        q = rope(q, q[:1, :1, :1], cos[:, local], sin[:, local])[0].float() * scaling
        n_l, n_heads, n_r = q.shape[0], q.shape[1], q.shape[2]
        kv = n_heads // n_groups
        q = q.reshape(n_l, kv, n_groups, n_r, hd)
        keys = torch.stack([cache_keys(cache, getattr(captured[la][0], "layer_idx", la))[0]
                            for la in layers]).float()  # [Lg, kvH, T, hd]
        kt = keys.transpose(-1, -2)
        index = torch.as_tensor(layers, device=q.device)
        positions = torch.arange(kt.shape[-1], device=q.device)
        chunks = batched_row_chunks(bounds, n_l * n_heads, n_l * n_heads * per_row)
        size = max(n_l * n_heads * (c.stop - c.start) * (int(bounds[c.stop - 1]) + 1)
                   for c in chunks)
        buffers = torch.empty(2, size, device=q.device)  # the products, the weights
        for chunk in chunks:
            r = rows[chunk]
            n = len(r)
            t = int(bounds[chunk.stop - 1]) + 1
            qc = q[:, :, :, chunk].reshape(n_l, kv, n_groups * n, hd)
            scores = torch.matmul(qc, kt[..., :t], out=buffers[0, : n_l * n_heads * n * t].view(
                n_l, kv, n_groups * n, t)).view(n_l, n_heads, n, t)
            ks = positions[:t]
            if window:
                masked = (ks[None, :] > r[:, None]) | (ks[None, :] <= r[:, None] - window)
                scores.masked_fill_(masked, float("-inf"))
            else:  # causal only: no key before the chunk's first row is masked
                r0 = int(bounds[chunk.start])
                scores[..., r0:].masked_fill_(ks[None, r0:] > r[:, None], float("-inf"))
            yield index, chunk, torch.softmax(scores, dim=-1, out=buffers[1, : scores.numel()]
                                              .view(scores.shape))
