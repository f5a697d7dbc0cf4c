"""The pass service: the one place that calls the model.

Every forward pass of the evaluator (the attention features' hooked pass, the sink probe, the
ablation scorer's whole and ablated passes, AT2 learning's log-probabilities, the online
Tracer's passes) goes through :meth:`Passes.forward`, one :class:`Passes` per model object
(:func:`passes_for`). It owns:

- the model's lock: hooks fire for every pass through a module, whichever thread runs it, so
  a pass holds the lock from registering its hooks to removing them (a plain pass too: it
  would fire another thread's hooks);
- the cache arguments (transformers 5 calls the cache ``cache``, 4 ``past_key_values``), always
  a key/value cache, and ``logits_to_keep`` (the positions whose logits the caller reads, the
  last one otherwise);
- the count of every model call and of the tokens it computed (:class:`Meter`): a caller reads
  what *its* thread ran (:meth:`Passes.meter`), so a Tracer's worker thread sharing the model
  does not inflate an offline ``trace``'s count;
- the prefix cache (:class:`PrefixCache`): the keys and values of a token prefix, kept across
  conversations and Tracers of the model. Every TauBench conversation of a domain begins with
  the same system policy (1.3-1.7k of a median 4.1k tokens); a pass whose ids start with a
  stored prefix runs from its end.

What a pass computes is a function of its arguments alone, never of what ran before in the
process (the bytes of a resumed ``trace`` equal an uninterrupted one's). A pass over a prefix
and one over the whole input agree only up to float rounding (the kernels block and sum in
another order with another number of tokens: about 1e-6 on attention weights, enough to reorder
two evidence sentences of nearly equal score), so a pass never starts "wherever a stored prefix
happens to end": the caller names the prefix boundary (``store``, a system prompt's end) and a
pass with one always runs in two steps, the prefix alone and then the rest from its keys and
values, whether the prefix's states come from the cache (stored by exactly such a step) or are
computed now, and with the cache off too. A pass without a boundary runs whole. The renderings
of one long conversation (its own and its context windows) share their start the same way, by
boundaries planned before any pass (:mod:`._shared_start`), the states handed on as a ``cache``.

Attention hooks run *after* each attention module: the layer's cache then holds the rotated
keys of every token, the prefix's included, and :func:`layer_attention_rows
<mtcabench.evaluate.attribution._attention.layer_attention_rows>` reads them (nothing is
recomputed). Importing this module does not import torch (a pass does).
"""

from __future__ import annotations

import inspect
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from mtcabench.errors import InputError

if TYPE_CHECKING:
    import torch

#: Bytes of key/value states the prefix cache of one model keeps (least recently used out):
#: SmolLM2-135M in float32 keeps 46 KB per token, so a 1.5k-token system policy is 69 MB.
DEFAULT_PREFIX_BYTES = 512 * 2**20

#: Results the memo of one model keeps (the sink probe's positions per probe input).
MEMO_ENTRIES = 256

_LOCKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_SERVICES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_GUARD = threading.RLock()  # passes_for takes it, then model_lock again


def model_lock(model) -> threading.RLock:
    """The re-entrant lock of ``model`` (one per model object, dropped with it)."""
    with _GUARD:
        lock = _LOCKS.get(model)
        if lock is None:
            lock = _LOCKS[model] = threading.RLock()
        return lock


@contextmanager
def exclusive(model) -> Iterator[None]:
    """Hold ``model``'s lock: no other thread runs a pass over it (or hooks it) meanwhile."""
    with model_lock(model):
        yield


def passes_for(model) -> Passes:
    """The pass service of ``model`` (one per model object, dropped with it)."""
    with _GUARD:
        service = _SERVICES.get(model)
        if service is None:
            service = _SERVICES[model] = Passes(model)
        return service


def clear_prefix_caches() -> None:
    """Empty every model's prefix cache and memo (tests that count passes start clean)."""
    with _GUARD:
        services = list(_SERVICES.values())
    for s in services:
        s.clear()


# --------------------------------------------------------------------------- cache helpers


def cache_keys(cache, layer: int) -> torch.Tensor | None:
    """The cached (rotated) keys of one layer, ``[1, kv_heads, P, head_dim]``, or None."""
    layers = getattr(cache, "layers", None)
    if layers is not None:  # transformers >= 4.56
        if layer >= len(layers):
            return None
        keys = getattr(layers[layer], "keys", None)
    else:
        kc = getattr(cache, "key_cache", [])
        keys = kc[layer] if layer < len(kc) else None
    return keys if keys is not None and keys.numel() else None


def cache_length(cache) -> int:
    """Tokens a key/value cache holds (0 for None)."""
    return int(cache.get_seq_length()) if cache is not None else 0


def cache_bytes(cache) -> int:
    """Bytes of a key/value cache's tensors."""
    return sum(t.numel() * t.element_size() for t in _cache_tensors(cache))


def _cache_tensors(cache) -> list:
    layers = getattr(cache, "layers", None)
    if layers is not None:
        tensors = [t for lay in layers for t in (getattr(lay, "keys", None),
                                                 getattr(lay, "values", None))]
    else:
        tensors = [*getattr(cache, "key_cache", []), *getattr(cache, "value_cache", [])]
    return [t for t in tensors if t is not None]


def layer_states(cache) -> list[tuple]:
    """Each layer's ``(keys, values)`` of a key/value cache."""
    layers = getattr(cache, "layers", None)
    if layers is not None:
        return [(lay.keys, lay.values) for lay in layers]
    return list(zip(cache.key_cache, cache.value_cache, strict=True))


def new_cache(states: Sequence[tuple] | None = None):
    """A transformers ``DynamicCache``, holding ``states`` (per layer ``(keys, values)``).

    A pass extends a DynamicCache by concatenation (new tensors): the states given here are
    never written to, so a stored prefix can seed any number of passes."""
    from transformers import DynamicCache  # noqa: PLC0415 - with torch, when a pass runs

    return DynamicCache() if not states else DynamicCache(ddp_cache_data=list(states))


# --------------------------------------------------------------------------- attention hooks


def attention_modules(model) -> list:
    """The model's self-attention modules in layer order; refuses architectures we cannot redo."""
    mods = [m for m in model.modules() if hasattr(m, "q_proj") and hasattr(m, "k_proj")]
    if not mods:
        raise InputError(f"{type(model).__name__}: no attention modules with q_proj/k_proj; "
                         "attention-based attribution supports Llama-style decoders")
    for m in mods:
        missing = [a for a in ("head_dim", "scaling", "num_key_value_groups") if not hasattr(m, a)]
        if missing:
            raise InputError(f"{type(m).__name__}: attention module lacks {missing}; "
                             "attention-based attribution supports Llama-style decoders")
        config = getattr(m, "config", None)
        if getattr(config, "attn_logit_softcapping", None):
            raise InputError(f"{type(m).__name__}: attention logit soft-capping is not supported")
    mods.sort(key=lambda m: getattr(m, "layer_idx", 0))
    return mods


class RowHooks:
    """Context manager: hooks on every attention module calling ``on_layer`` during forward.

    ``on_layer(layer, module, hidden, position_embeddings)`` runs inside the model's forward
    pass, before the layer's own attention (``after``: after it, when its key/value cache holds
    the keys of the new tokens too), so nothing beyond the current layer is kept. Batch size 1.
    """

    def __init__(self, model, on_layer, *, after: bool = False):
        self.modules = attention_modules(model)
        # Held from registering the hooks to removing them: a pass in another thread would
        # run them too.
        self._lock = model_lock(model)
        self.on_layer = on_layer
        self.after = after
        self._handles: list = []

    def __enter__(self):
        self._lock.acquire()
        for layer, module in enumerate(self.modules):
            def hook(mod, args, kwargs, *output, layer=layer):
                hidden = kwargs.get("hidden_states", args[0] if args else None)
                pe = kwargs.get("position_embeddings")
                if pe is None and len(args) > 1:
                    pe = args[1]
                if hidden is None or pe is None:
                    raise InputError(f"{type(mod).__name__}: attention input or rotary "
                                     "embeddings not passed as expected; unsupported model")
                if hidden.shape[0] != 1:
                    raise ValueError("attention rows are recomputed for batch size 1 only")
                self.on_layer(layer, mod, hidden, pe)

            register = (module.register_forward_hook if self.after
                        else module.register_forward_pre_hook)
            self._handles.append(register(hook, with_kwargs=True))
        return self

    def __exit__(self, *exc):
        try:
            for h in self._handles:
                h.remove()
            self._handles.clear()
        finally:
            self._lock.release()


#: ``on_layer(layer, module, hidden, position_embeddings, keys)`` of :meth:`Passes.forward`:
#: ``keys`` the layer's rotated keys of every token so far ``[1, kv_heads, T, head_dim]``.
LayerFn = Callable[[int, Any, Any, Any, Any], None]


# --------------------------------------------------------------------------- split attention

#: The attention implementation a pass running on from a key/value cache uses on the CPU
#: (registered with transformers on first use): :func:`split_attention`.
SPLIT_ATTENTION = "mtcabench-split-sdpa"


def sliding_window(module) -> int | None:
    """The attention window of a layer, in tokens (None: causal only). Qwen2/3 keep it on each
    attention module (None on their full-attention layers); Mistral passes its config's to the
    attention function instead."""
    if hasattr(module, "sliding_window"):
        return module.sliding_window
    return getattr(getattr(module, "config", None), "sliding_window", None)


def _sliding(module) -> bool:
    """Whether an attention module attends through a sliding window (:func:`sliding_window`),
    or its config names sliding layers."""
    layer_types = getattr(getattr(module, "config", None), "layer_types", None) or []
    return bool(sliding_window(module)) or any("sliding" in str(t) for t in layer_types)


def split_attention(module, query, key, value, attention_mask, dropout: float = 0.0,
                    scaling: float | None = None, **kwargs):
    """transformers' sdpa, for a pass that runs on from a key/value cache without the mask.

    The ``n`` new tokens' queries are the last ``n`` of the ``T`` keys. transformers builds an
    explicit ``n x T`` causal mask for them (sdpa's own causal flag aligns the other way), the
    kernel then computes every query against every key, the masked ones too (with a 1.3k-token
    system prompt in the cache and 3k new tokens, half again the work the causal part needs),
    and grouped-query keys are copied per head. Here the attention runs in two calls of the
    CPU's flash kernel, the cached keys unmasked and the new ones causal (aligned: ``n`` keys
    for ``n`` queries), merged by their log-sum-exps: the same softmax over the same keys
    (equal to sdpa's output up to float rounding), the causal blocks skipped. No mask is built
    for this implementation (transformers leaves it to attention functions it does not know),
    so anything but that case (one new token, no cache) goes to transformers' sdpa, which then
    needs none."""
    import torch  # noqa: PLC0415 - with a pass
    from transformers.integrations.sdpa_attention import sdpa_attention_forward  # noqa: PLC0415

    n, T = query.shape[2], key.shape[2]
    cached = T - n
    if attention_mask is not None or cached <= 0 or n <= 1 or dropout:
        return sdpa_attention_forward(module, query, key, value, attention_mask,
                                      dropout=dropout, scaling=scaling, **kwargs)
    flash = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
    old, old_lse = flash(query, key[:, :, :cached], value[:, :, :cached], 0.0, False,
                         scale=scaling)
    new, new_lse = flash(query, key[:, :, cached:], value[:, :, cached:], 0.0, True,
                         scale=scaling)
    # softmax over both parts: the new part's output weighted by exp(new_lse - lse), i.e. a
    # sigmoid of the two log-sum-exps' difference, and the cached part's by the rest.
    share = torch.sigmoid(new_lse - old_lse).unsqueeze(-1)
    return torch.lerp(old, new, share).transpose(1, 2).contiguous(), None


def _register_split_attention() -> bool:
    """Register :func:`split_attention` with transformers (once); False where it cannot be."""
    try:
        import torch  # noqa: PLC0415
        from transformers import AttentionInterface  # noqa: PLC0415
    except ImportError:  # pragma: no cover - transformers 5 has it
        return False
    if not hasattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu"):
        return False  # pragma: no cover - torch 2.13 has it
    AttentionInterface.register(SPLIT_ATTENTION, split_attention)
    return True


def attention_as_loaded(model) -> str | None:
    """The model's own attention implementation, also while a pass runs it with
    :data:`SPLIT_ATTENTION` (what :func:`~mtcabench.evaluate.attribution._loading.load_model`
    compares)."""
    with _GUARD:
        service = _SERVICES.get(model)
    switched = service.switched_from if service is not None else None
    return switched or getattr(model.config, "_attn_implementation", None)


# --------------------------------------------------------------------------- counting


@dataclass
class Meter:
    """What model calls cost: calls, tokens computed, tokens read from the prefix cache."""

    calls: int = 0
    tokens: int = 0
    reused: int = 0


@dataclass
class PassResult:
    """A pass's logits (``[positions, vocab]``, the positions asked for) and its cache (all the
    input's keys and values: the caller may keep it and run on from it)."""

    logits: Any
    cache: Any
    #: Tokens not computed by this pass: the given cache's or the stored prefix's.
    start: int


# --------------------------------------------------------------------------- prefix cache


class PrefixCache:
    """Key/value states of token prefixes, by their exact token ids, bounded by bytes (least
    recently used out). One per model (:class:`Passes`): the model is part of the key.

    A stored prefix serves only a pass whose boundary is that very prefix (:meth:`get`): states
    cut from a longer prefix, or a common start of two, would differ in rounding from the
    states the pass computes when nothing is stored (see the module docstring)."""

    def __init__(self, max_bytes: int = DEFAULT_PREFIX_BYTES):
        self.max_bytes = max_bytes
        self._entries: OrderedDict[bytes, tuple[list[tuple], int]] = OrderedDict()
        self.bytes = 0
        #: Lookups that found the prefix, lookups that did not, prefixes stored.
        self.hits = self.misses = self.stores = 0

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()
        self.bytes = 0
        self.hits = self.misses = self.stores = 0

    @staticmethod
    def _key(ids: np.ndarray | Sequence[int]) -> bytes:
        return np.asarray(ids, dtype=np.int64).tobytes()

    def get(self, ids: np.ndarray | Sequence[int]) -> list[tuple] | None:
        """The states stored for exactly ``ids`` (per layer ``(keys, values)``), or None."""
        key = self._key(ids)
        found = self._entries.get(key)
        if found is None:
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return found[0]

    def covers(self, ids: np.ndarray | Sequence[int]) -> bool:
        """Whether the states of exactly ``ids`` are stored."""
        return self._key(ids) in self._entries

    def store(self, ids: np.ndarray | Sequence[int], states: list[tuple]) -> None:
        """Keep ``states`` (copies: they must not hold a longer pass's memory) of ``ids``."""
        size = sum(k.numel() * k.element_size() + v.numel() * v.element_size()
                   for k, v in states)
        if size > self.max_bytes or self.covers(ids):
            return
        kept = [(k.clone(), v.clone()) for k, v in states]
        self._entries[self._key(ids)] = (kept, size)
        self.bytes += size
        self.stores += 1
        while self.bytes > self.max_bytes:
            _, (_, freed) = self._entries.popitem(last=False)
            self.bytes -= freed


# --------------------------------------------------------------------------- the service


class Passes:
    """The pass service of one model (:func:`passes_for`); see the module docstring."""

    def __init__(self, model, max_prefix_bytes: int = DEFAULT_PREFIX_BYTES):
        # Held weakly: the service lives in a table keyed by the model, dropped with it.
        self._model = weakref.ref(model)
        self.lock = model_lock(model)
        self.prefixes = PrefixCache(max_prefix_bytes)
        #: Every call so far, in every thread.
        self.total = Meter()
        self._memo: OrderedDict[Hashable, Any] = OrderedDict()
        self._local = threading.local()
        params = inspect.signature(model.forward).parameters
        # transformers 5 names the cache argument ``cache`` (``past_key_values`` before).
        self._cache_arg = "cache" if "cache" in params else "past_key_values"
        #: Whether cached passes run with :func:`split_attention` (decided on the first one).
        self._split: bool | None = None
        #: The model's own attention implementation while a pass runs with the split one.
        self.switched_from: str | None = None

    @property
    def model(self):
        model = self._model()
        if model is None:  # pragma: no cover - a service is reached through its model
            raise RuntimeError("the model of this pass service was freed")
        return model

    @property
    def enabled(self) -> bool:
        """Whether the prefix cache (and the memo) are used (``max_bytes`` 0: off)."""
        return self.prefixes.max_bytes > 0

    def clear(self) -> None:
        with self.lock:
            self.prefixes.clear()
            self._memo.clear()

    @contextmanager
    def meter(self) -> Iterator[Meter]:
        """Count the calls this thread makes inside the block."""
        stack = self._local.__dict__.setdefault("stack", [])
        m = Meter()
        stack.append(m)
        try:
            yield m
        finally:
            stack.remove(m)

    def _count(self, fed: int, reused: int) -> None:
        for m in (self.total, *getattr(self._local, "stack", ())):
            m.calls += 1
            m.tokens += fed
            m.reused += reused

    def remember(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """``compute()``, kept under ``key`` (a pure function of the model and the key: the
        sink probe's positions for its input ids); without the prefix cache, always computed."""
        if not self.enabled:
            return compute()
        with self.lock:
            if key in self._memo:
                self._memo.move_to_end(key)
                return self._memo[key]
            value = compute()
            self._memo[key] = value
            while len(self._memo) > MEMO_ENTRIES:
                self._memo.popitem(last=False)
            return value

    def forward(
        self,
        input_ids: Sequence[int] | np.ndarray,
        *,
        cache=None,
        logits_at: Sequence[int] | np.ndarray | None = None,
        on_layer: LayerFn | None = None,
        reuse: int = 0,
        store: int = 0,
    ) -> PassResult:
        """Run the model over ``input_ids`` (the whole input, a batch of one).

        - ``cache``: a key/value cache of the input's first tokens (the caller's, extended by
          the pass);
        - ``reuse``: the first position whose output the caller reads (logits, hooked rows):
          the tokens before it need not be computed by this call;
        - ``store``: the input's first ``store`` tokens are a prefix other passes start with (a
          system prompt). Without a cache, when ``0 < store <= min(reuse, len - 1)`` the pass
          runs in two steps (see the module docstring): the prefix's keys and values from the
          prefix cache when stored, else a pass over the prefix alone (then stored), and the
          rest from them; otherwise the pass runs whole, the same way every time;
        - ``logits_at``: the positions whose logits are returned (default: the last);
        - ``on_layer``: called after each attention module with the layer's keys of every
          token so far (see :data:`LayerFn`), under the model's lock (the prefix's step is not
          hooked: no row the caller reads is in it).

        A call counts as one pass, whether it ran in one step or two.
        """
        import torch  # noqa: PLC0415 - torch only when a pass runs

        model = self.model
        device = next(model.parameters()).device
        ids = np.asarray(input_ids, dtype=np.int64)
        T = len(ids)
        with self.lock:
            given = reused = 0  # tokens of the caller's cache, tokens read from the store
            if cache is None or cache_length(cache) == 0:
                cache = new_cache()
                if 0 < store <= min(reuse, T - 1):
                    cache, reused = self._prefix(ids[:store], device)
            else:
                given = cache_length(cache)
            start = cache_length(cache)
            if start >= T:
                raise ValueError(f"the cache holds {start} tokens, the input {T}: "
                                 "nothing to compute")
            fed = torch.as_tensor(ids[start:], device=device)[None]
            if logits_at is None:
                keep: Any = 1
            else:
                at = np.asarray(logits_at, dtype=np.int64)
                if len(at) and int(at.min()) < start:
                    raise ValueError(f"logits of position {int(at.min())} asked, but the pass "
                                     f"starts at token {start}")
                keep = torch.as_tensor(at - start, device=device)
            hooks = None
            if on_layer is not None:
                def hooked(layer, module, hidden, pe):
                    idx = getattr(module, "layer_idx", layer)
                    keys = cache_keys(cache, idx)
                    have = 0 if keys is None else keys.shape[-2]
                    if have != T:
                        raise InputError(
                            f"{type(module).__name__}: the key/value cache holds {have} keys of "
                            f"layer {idx}, expected {T} (a sliding-window cache?); attention "
                            "rows need every key of the input")
                    on_layer(layer, module, hidden, pe, keys)

                hooks = RowHooks(model, hooked, after=True)
            with torch.inference_mode(), self._attention(start, T):
                if hooks is not None:
                    with hooks:
                        out = model(input_ids=fed, use_cache=True, logits_to_keep=keep,
                                    **{self._cache_arg: cache})
                else:
                    out = model(input_ids=fed, use_cache=True, logits_to_keep=keep,
                                **{self._cache_arg: cache})
            self._count(T - given - reused, reused)
            cache = self._checked(out, cache, T)
            return PassResult(out.logits[0], cache, given + reused)

    @contextmanager
    def _attention(self, start: int, tokens: int) -> Iterator[None]:
        """The model's attention for a pass over ``tokens`` whose first ``start`` are in its
        cache: :data:`SPLIT_ATTENTION` when the pass runs on from a cache with more than one
        new token on a model it serves (see :func:`split_attention`), else the model's own."""
        model = self.model
        if not (0 < start < tokens - 1 and self._splits()):
            yield
            return
        config = model.config
        own = config._attn_implementation
        config._attn_implementation = SPLIT_ATTENTION
        self.switched_from = own
        try:
            yield
        finally:
            config._attn_implementation = own
            self.switched_from = None

    def _splits(self) -> bool:
        """Whether a cached pass of this model may run with :func:`split_attention`: transformers'
        sdpa on the CPU, every attention module a Llama-style one without a sliding window
        (their mask is not a plain causal one), the attention registered."""
        if self._split is None:
            model = self.model
            try:
                modules = attention_modules(model)
            except InputError:
                modules = []
            self._split = bool(
                modules and next(model.parameters()).device.type == "cpu"
                and getattr(model.config, "_attn_implementation", None) == "sdpa"
                and not any(_sliding(m) for m in modules)
                and _register_split_attention())
        return self._split and getattr(self.model.config, "_attn_implementation", None) == "sdpa"

    def _prefix(self, prefix: np.ndarray, device) -> tuple[Any, int]:
        """A cache holding the keys and values of ``prefix`` alone, and the tokens of it read
        from the prefix cache (all or none): stored ones, else a pass over it (then stored)."""
        if self.enabled:
            states = self.prefixes.get(prefix)
            if states is not None:
                return new_cache(states), len(prefix)
        import torch  # noqa: PLC0415 - with a pass

        model = self.model
        cache = new_cache()
        with torch.inference_mode():
            out = model(input_ids=torch.as_tensor(prefix, device=device)[None], use_cache=True,
                        logits_to_keep=1, **{self._cache_arg: cache})
        cache = self._checked(out, cache, len(prefix))
        if self.enabled:
            self.prefixes.store(prefix, layer_states(cache))
        return cache, 0

    def _checked(self, out, cache, tokens: int):
        """The cache a pass returned (or extended), checked to hold every token's keys."""
        cache = getattr(out, "cache", None) or getattr(out, "past_key_values", None) or cache
        if cache_length(cache) != tokens:
            raise InputError(f"{type(self.model).__name__}: the cache holds "
                             f"{cache_length(cache)} tokens after the pass, expected {tokens}; "
                             "unsupported cache")
        return cache

def token_logprobs(logits, labels) -> list[float]:
    """Log-probability of each label under its row of logits (float64 values)."""
    import torch  # noqa: PLC0415 - with a pass

    logp = torch.log_softmax(logits.float(), dim=-1)
    return logp[torch.arange(len(labels)), labels].double().cpu().tolist()
