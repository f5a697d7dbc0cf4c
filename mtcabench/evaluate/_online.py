"""Online tracing: attribution features kept while an agent's conversation grows, turn by turn.

An agent loop feeds a :class:`Tracer` one message at a time (``tracer.add(message)``). The
model's key/value cache (a transformers ``DynamicCache``) is kept between turns, so the model
runs over *new tokens only*: over a whole run every token is processed once, as in one plain
forward pass over the final conversation. Each pass reads every weight whatever its length, so
short turns are taken together: the model runs once ``pass_tokens`` (1,024) new tokens wait,
and always before an answer (``pass_tokens=0``: at every add). During a pass a hook on every
attention module (the style of :mod:`~mtcabench.evaluate._attention`), run after the module,
recomputes the attention rows of the new tokens of assistant turns against all keys, read
from the layer's cache (the model's own rotated keys, old and new: none is recomputed),
grouped-query heads read from their key head. Each layer's
rows are reduced at once to what the base scorer reads, *per row and per sentence*: the
attention mass of the row on each sentence, weighted per head (``1 / (layers x heads)`` for
average attention, AT2's learned weight for AT2), summed over layers. Only assistant turns'
rows are stored (only they are ever attributed: target spans and Tokengeist's intermediate
nodes); everything else is dropped. :meth:`Tracer.explain` then answers for any span from the
stored rows (a span's sentence scores are the mean over its rows, exactly what the offline
pass computes for it), with Tokengeist, flat or any registered method, without another
forward pass.

Which scorers can run online: those whose sentence score is a fixed head-weighted attention
mass (average attention, AT2; more with :func:`register_online_scorer`). AttnTrace scores
each sentence over many passes that each leave random context sentences out; a growing cache
holds one context only, so it is refused with the reason (use it offline).

Chat templates and the prefix. Every add renders the whole conversation with the chat
template and checks that the new tokens *extend* the tokens already processed. When the new
turn's rendering starts with an added token (``<|im_start|>``...), which a fast tokenizer
never merges across, only that part is tokenised; otherwise the whole rendering is.
Where they do not (a template that renders earlier turns differently once a turn follows, or
tokens that merge across the boundary), the cache is cropped to the common prefix and the
model recomputes from there; the rows of assistant turns past that point are recomputed too.
:attr:`Tracer.stats` counts such crops and the tokens recomputed. A template that renders a
conversation as the concatenation of its turns (SmolLM2's, Llama's, Qwen's ...) never crops.

Context: a turn that would take the conversation past the model's context (or
``TraceSettings.max_tokens``) is refused with one line (:class:`~mtcabench.errors.InputError`)
and not added; nothing is ever cut.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import torch

from mtcabench.errors import InputError
from mtcabench.evaluate._attention import RowHooks, attention_modules, layer_attention_rows, row_chunks
from mtcabench.evaluate._engine import turn_shares
from mtcabench.evaluate._loading import DEFAULT_MODEL, LoadedModel, load_model
from mtcabench.evaluate._methods import get_methods
from mtcabench.evaluate._render import (
    Layout,
    Sentence,
    _render,
    _tokenize,
    chat_message,
    make_layout,
    place_text,
    turn_sentences,
)
from mtcabench.evaluate._scorers import AT2, AttnTrace, AverageAttention, BaseScorer, make_scorer
from mtcabench.evaluate._settings import DEFAULT_DEVICE, DEFAULT_DTYPE, DEFAULT_METHOD, DEFAULT_SCORER, TraceSettings
from mtcabench.evaluate._tokengeist import TARGET
from mtcabench.model import Conversation, ProvenanceGraph, Role, TargetSpan, Turn
from mtcabench.transcripts import MessageReader, last_answer, target_span

#: One chunk of recomputed rows (heads x rows x tokens float32): small enough that the softmax,
#: the sum over heads and the sum per sentence read it from the processor's cache, not memory
#: (measured about twice as fast as 256 MiB chunks on 2 CPU cores).
ROW_CHUNK_BYTES = 4 * 2**20

#: ``Tracer(pass_tokens=...)`` unless told otherwise (see the class).
DEFAULT_PASS_TOKENS = 1024

#: Per scorer class: its head weights ``[layers, heads]`` (what the sentence score sums).
HeadWeights = Callable[[BaseScorer, int, int], torch.Tensor]
ONLINE_SCORERS: dict[type[BaseScorer], HeadWeights] = {}


def register_online_scorer(cls: type[BaseScorer], head_weights: HeadWeights) -> None:
    """Let scorer class ``cls`` (exactly that class) run online.

    ``head_weights(scorer, layers, heads)`` gives ``w[layer, head]`` such that the scorer's
    score of a sentence for a query is ``sum_{l,h} w[l,h] * mass_{l,h}(query, sentence)``,
    the attention mass averaged over the query's tokens. A scorer not of that form cannot be
    computed from the features the tracer keeps.
    """
    ONLINE_SCORERS[cls] = head_weights


register_online_scorer(AverageAttention, lambda s, n_l, n_h: torch.full((n_l, n_h), 1.0 / (n_l * n_h)))
register_online_scorer(AT2, lambda s, n_l, n_h: s.weights)


def online_head_weights(scorer: BaseScorer, n_layers: int, n_heads: int) -> torch.Tensor:
    """The head weights of ``scorer`` for online tracing, or an InputError saying why not."""
    if isinstance(scorer, AttnTrace):
        raise InputError(
            f"--scorer attntrace cannot run online: it scores each sentence over "
            f"{scorer.subsamples} forward passes that each leave random context sentences out, "
            "and a key/value cache holds one context only; use it offline (`mtcabench explain`, "
            "`mtcabench trace`) or trace online with avg-attention or at2")
    fn = ONLINE_SCORERS.get(type(scorer))
    if fn is None:
        names = ", ".join(sorted(c.name for c in ONLINE_SCORERS))
        raise InputError(
            f"scorer {scorer.name!r} has no online form: the tracer keeps per token one "
            f"head-weighted attention mass per sentence, which is what {names} read; register "
            "a scorer of that form with register_online_scorer, or use it offline")
    w = torch.as_tensor(fn(scorer, n_layers, n_heads), dtype=torch.float32)
    if tuple(w.shape) != (n_layers, n_heads):
        raise InputError(f"scorer {scorer.name}: head weights are {tuple(w.shape)}, the model "
                         f"has {n_layers} layers x {n_heads} heads")
    return w


@dataclass
class OnlineStats:
    """What online tracing has cost so far."""

    turns: int = 0
    #: Tokens of the conversation as now rendered (processed, or waiting for the next pass).
    tokens: int = 0
    #: Forward passes run (see ``pass_tokens``).
    forward_calls: int = 0
    #: Tokens fed to the model, recomputed ones included (equals ``tokens`` once flushed,
    #: without crops).
    tokens_fed: int = 0
    #: Times the cache was cropped because the new rendering did not extend the old one.
    crops: int = 0
    #: Tokens fed again after a crop.
    recomputed_tokens: int = 0
    #: Attention rows stored (tokens of assistant turns).
    stored_rows: int = 0
    #: Bytes of the stored per-row features and of the key/value cache.
    feature_bytes: int = 0
    cache_bytes: int = 0


@dataclass
class _TurnRows:
    """The stored rows of one assistant turn: token ``start`` on, one feature vector each."""

    start: int
    end: int  # end of the turn's tokens
    features: np.ndarray  # float32 [rows stored, sentences known when computed]


@dataclass
class _State:
    """The rendering, tokens and sentences of the conversation processed so far."""

    messages: list[dict] = field(default_factory=list)
    text: str = ""
    origins: list[int] = field(default_factory=list)
    turn_chars: list[tuple[int, int]] = field(default_factory=list)
    sentences: list[Sentence] = field(default_factory=list)
    sentence_chars: list[tuple[int, int] | None] = field(default_factory=list)
    layout: Layout | None = None

    @cached_property
    def sentence_turns(self) -> np.ndarray:
        return np.array([s.turn for s in self.sentences], dtype=np.int64)


def _cache_keys(cache, layer: int) -> torch.Tensor | None:
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


def _cache_length(cache) -> int:
    return int(cache.get_seq_length()) if cache is not None else 0


def _cache_bytes(cache) -> int:
    layers = getattr(cache, "layers", None)
    if layers is not None:
        tensors = [t for lay in layers for t in (getattr(lay, "keys", None), getattr(lay, "values", None))]
    else:
        tensors = [*getattr(cache, "key_cache", []), *getattr(cache, "value_cache", [])]
    return sum(t.numel() * t.element_size() for t in tensors if t is not None)


def as_message(turn: Turn) -> dict[str, Any]:
    """An OpenAI chat message for a turn (to feed a recorded conversation to a tracer)."""
    msg: dict[str, Any] = {"role": turn.role.value, "content": turn.content}
    if turn.tool_calls:
        msg["tool_calls"] = [{"id": c.id, "type": "function",
                              "function": {"name": c.name, "arguments": c.arguments}}
                             for c in turn.tool_calls]
    if turn.role is Role.TOOL:
        msg["tool_call_id"] = turn.tool_call_id
        if turn.name:
            msg["name"] = turn.name
    return msg


class Tracer:
    """Attribution while a conversation grows: ``add`` each message, ``explain`` any span.

    ``model`` is a model name (loaded here) or a :class:`LoadedModel`; ``scorer`` one whose
    sentence score is a head-weighted attention mass (avg-attention, at2); ``settings`` as for
    ``trace`` (the search's top-k, threshold, d_max, alpha; the turn aggregate; max_tokens).

    ``pass_tokens``: the model runs over the waiting new tokens once at least that many wait
    (and always before an answer, or on :meth:`flush`); 0 runs it at every add. Each run
    costs one read of every weight whatever its length, so a few short turns are taken
    together (on 2 CPU cores a 20-token turn costs about as much as 300 tokens in one run).
    Tokens are processed once either way. See the module docstring for what is computed.
    """

    def __init__(
        self,
        model: str | LoadedModel = DEFAULT_MODEL,
        *,
        scorer: str | BaseScorer = DEFAULT_SCORER,
        settings: TraceSettings = TraceSettings(),
        conversation_id: str = "online",
        pass_tokens: int = DEFAULT_PASS_TOKENS,
        device: str = DEFAULT_DEVICE,
        dtype: str = DEFAULT_DTYPE,
    ):
        if not isinstance(settings, TraceSettings):
            raise InputError(f"settings must be TraceSettings, got {type(settings).__name__}")
        if pass_tokens < 0:
            raise InputError(f"pass_tokens must be at least 0, got {pass_tokens}")
        self.loaded = model if isinstance(model, LoadedModel) else load_model(
            model, device=device, dtype=dtype)
        self.settings = settings
        self.pass_tokens = pass_tokens
        self.scorer = scorer if isinstance(scorer, BaseScorer) else make_scorer(
            scorer, settings, self.loaded)
        modules = attention_modules(self.loaded.model)
        self._n_layers = len(modules)
        self._n_heads = int(getattr(modules[0].config, "num_attention_heads", 0) or 0)
        self._head_weights = online_head_weights(self.scorer, self._n_layers, self._n_heads).to(
            self.loaded.device)
        self.limit = min(settings.max_tokens or self.loaded.context_length,
                         self.loaded.context_length)
        self.conversation_id = conversation_id
        params = inspect.signature(self.loaded.model.forward).parameters
        # transformers 5 names the cache argument ``cache`` (``past_key_values`` before).
        self._cache_arg = "cache" if "cache" in params else "past_key_values"
        self.reset()

    # ------------------------------------------------------------------ state

    def reset(self) -> None:
        """Forget the conversation (the model stays loaded): the next add starts a new one."""
        from transformers import DynamicCache

        self._reader = MessageReader(f"tracer {self.conversation_id}")
        self._state = _State()
        self._rows: dict[int, _TurnRows] = {}
        self._cache = DynamicCache()
        # What the cache holds: the token ids processed and each one's sentence.
        self._done_ids = np.zeros(0, dtype=np.int64)
        self._done_sentences = np.zeros(0, dtype=np.int64)
        self._conversation: Conversation | None = None
        self.stats = OnlineStats()

    @property
    def turns(self) -> list[Turn]:
        return self._reader.turns

    @property
    def conversation(self) -> Conversation:
        """The conversation added so far."""
        if not self.turns:
            raise InputError(f"tracer {self.conversation_id}: no message added yet")
        if self._conversation is None:
            self._conversation = Conversation(id=self.conversation_id, source="online",
                                              domain="online", turns=list(self.turns))
        return self._conversation

    @property
    def layout(self) -> Layout:
        """Tokens, turns and sentences of the conversation as now rendered."""
        if self._state.layout is None:
            raise InputError(f"tracer {self.conversation_id}: no message added yet")
        return self._state.layout

    @property
    def sentences(self) -> list[Sentence]:
        """The sentences of the conversation (global ids: positions in this list)."""
        return list(self._state.sentences)

    @property
    def pending_tokens(self) -> int:
        """Tokens added but not yet run through the model."""
        return (self._state.layout.num_tokens if self._state.layout else 0) - len(self._done_ids)

    # ------------------------------------------------------------------ adding turns

    def add(self, message: Mapping[str, Any] | Turn) -> Turn:
        """Add the next message (an OpenAI chat message, or a Turn); its tokens are run through
        the model now or with the next ones (see ``pass_tokens``).

        Refused (nothing added) when the message is malformed or the conversation would pass
        the model's context.
        """
        if isinstance(message, Turn):
            message = as_message(message)
        turn = self._reader.read(message)
        state = self._render_with(turn)
        layout = state.layout
        if layout.num_tokens > self.limit:
            raise InputError(
                f"tracer {self.conversation_id}, turn {turn.index}: the conversation would be "
                f"{layout.num_tokens} tokens, beyond the {self.limit}-token limit of "
                f"{self.loaded.name}; nothing is cut: the turn was not added (start a new "
                "Tracer, or use a model with a longer context)")
        keep = self._kept_prefix(state, [*self.turns, turn])
        if keep < len(self._done_ids):
            self._crop(keep)
        self._reader.append(turn)
        self._state = state
        self._conversation = None
        self.stats.turns = len(self.turns)
        self.stats.tokens = layout.num_tokens
        if self.pending_tokens >= max(self.pass_tokens, 1):
            self.flush()
        return turn

    def extend(self, messages: Iterable[Mapping[str, Any] | Turn]) -> None:
        """Add several messages in order."""
        for m in messages:
            self.add(m)

    def flush(self) -> None:
        """Run the model over the tokens still waiting (nothing to do when none wait)."""
        if self.pending_tokens > 0:
            self._forward(self.layout, len(self._done_ids))

    def _render_with(self, turn: Turn) -> _State:
        """The rendering of the conversation with ``turn`` added, every turn located."""
        tok = self.loaded.tokenizer
        old = self._state
        messages = [*old.messages, chat_message(turn)]
        rendered = _render(tok, messages)
        where = f"tracer {self.conversation_id}"
        turns = [*self.turns, turn]
        if rendered.startswith(old.text):
            # Earlier turns are rendered as before: only the new turn needs locating.
            placed = list(zip(old.origins, old.turn_chars))
            placed.append(place_text(tok, messages, turn.index, turn.text, rendered,
                                     len(old.text), where))
            sentences = list(old.sentences)
            sentence_chars = list(old.sentence_chars)
            new_turns = [turn]
        else:
            # The template re-renders earlier text: locate every turn again.
            placed = [place_text(tok, messages, i, t.text, rendered, 0, where)
                      for i, t in enumerate(turns)]
            sentences, sentence_chars = [], []
            new_turns = turns
        for t in new_turns:
            for sentence, chars in turn_sentences(t, *placed[t.index]):
                sentences.append(sentence)
                sentence_chars.append(chars)
        origins = [o for o, _ in placed]
        turn_chars = [c for _, c in placed]
        if new_turns == [turn] and old.layout is not None:
            layout = _extended_layout(tok, old.layout, rendered, origins, turn_chars,
                                      sentence_chars)
        else:
            layout = make_layout(tok, rendered, origins, turn_chars, sentence_chars)
        return _State(messages, rendered, origins, turn_chars, sentences, sentence_chars, layout)

    def _kept_prefix(self, state: _State, turns: list[Turn]) -> int:
        """How many processed tokens the new rendering keeps: the common prefix of token ids
        and sentence ids, and no stored turn whose first token moved."""
        new = state.layout
        n = min(len(self._done_ids), new.num_tokens)
        same = ((self._done_ids[:n] == np.asarray(new.input_ids[:n]))
                & (self._done_sentences[:n] == new.token_sentence[:n]))
        p = n if same.all() else int(np.argmin(same))
        moved = [rows.start for i, rows in self._rows.items()
                 if i >= len(turns) or new.turn_tokens(i)[0] != rows.start]
        return min([p, *moved])

    def _crop(self, p: int) -> None:
        """Forget every processed token from ``p`` on: the cache, the stored rows."""
        done = len(self._done_ids)
        length = _cache_length(self._cache)
        if length > p:
            self._cache.crop(p - length)  # a negative count: that many tokens removed
        for i in list(self._rows):
            rows = self._rows[i]
            if rows.start >= p:
                del self._rows[i]
            elif rows.start + len(rows.features) > p:
                rows.features = rows.features[: p - rows.start]
        self._done_ids = self._done_ids[:p]
        self._done_sentences = self._done_sentences[:p]
        self.stats.crops += 1
        self.stats.recomputed_tokens += done - p

    def _forward(self, layout: Layout, p: int) -> None:
        """Run the model over tokens ``p..`` of ``layout`` with the cache of tokens ``..p``,
        storing the rows of assistant turns' tokens from ``p`` on."""
        model = self.loaded.model
        device = self.loaded.device
        T = layout.num_tokens
        n_s = len(layout.sentence_chars)
        assistant = {t.index: layout.turn_tokens(t.index) for t in self.turns
                     if t.role is Role.ASSISTANT}
        # The rows to compute: every token of an assistant turn's text from p on.
        parts = [(i, max(a, p), b) for i, (a, b) in sorted(assistant.items()) if b > max(a, p)]
        rows = (np.concatenate([np.arange(a, b) for _, a, b in parts]) if parts
                else np.zeros(0, dtype=np.int64))
        rows_t = torch.as_tensor(rows, dtype=torch.long, device=device)
        sent = torch.as_tensor(layout.token_sentence, dtype=torch.long, device=device)
        sent = torch.where(sent < 0, torch.full_like(sent, n_s), sent)  # bucket for "none"
        acc = torch.zeros(len(rows), n_s + 1, device=device)
        cache = self._cache
        hw = self._head_weights

        def on_layer(layer, module, hidden, pe):
            if not len(rows):
                return
            # After the layer's attention ran: its cache holds the keys of every token.
            idx = getattr(module, "layer_idx", layer)
            keys = _cache_keys(cache, idx)
            have = 0 if keys is None else keys.shape[-2]
            if have != T:
                raise InputError(
                    f"{type(module).__name__}: the key/value cache holds {have} keys of layer "
                    f"{idx}, expected {T} (a sliding-window cache?); online tracing needs every "
                    "key of the conversation")
            fn = layer_attention_rows(module, hidden, pe, rows_t, keys=keys)
            weights = hw[layer]
            for chunk in row_chunks(len(rows), self._n_heads or 1, T, budget=ROW_CHUNK_BYTES):
                w = fn(chunk)  # [H, r, t]: the tokens up to the chunk's last row
                per_row = torch.matmul(weights, w.view(w.shape[0], -1)).view(w.shape[1], -1)
                acc[chunk].index_add_(1, sent[: w.shape[-1]], per_row)

        ids = torch.as_tensor(layout.input_ids[p:], dtype=torch.long, device=device)
        with RowHooks(model, on_layer, after=True), torch.inference_mode():
            model(input_ids=ids[None], use_cache=True, logits_to_keep=1,
                  **{self._cache_arg: cache})
        if _cache_length(cache) != T:
            raise InputError(f"{type(model).__name__}: the cache holds {_cache_length(cache)} "
                             f"tokens after the pass, expected {T}; unsupported cache")
        feats = acc[:, :n_s].cpu().numpy()
        k = 0
        for i, a, b in parts:
            block = feats[k : k + (b - a)]
            k += b - a
            have = self._rows.get(i)
            if have is not None and have.start + len(have.features) == a:
                width = max(have.features.shape[1], block.shape[1])
                have.features = np.concatenate([_pad(have.features, width), _pad(block, width)])
                have.end = assistant[i][1]
            else:
                self._rows[i] = _TurnRows(*assistant[i], block)
        self._done_ids = np.asarray(layout.input_ids, dtype=np.int64)
        self._done_sentences = np.asarray(layout.token_sentence, dtype=np.int64)
        st = self.stats
        st.forward_calls += 1
        st.tokens_fed += T - p
        st.stored_rows = sum(len(r.features) for r in self._rows.values())
        st.feature_bytes = sum(r.features.nbytes for r in self._rows.values())
        st.cache_bytes = _cache_bytes(cache)

    # ------------------------------------------------------------------ answers

    def target(self, turn: int | None = None, span: str | tuple[int, int] | TargetSpan | None = None) -> TargetSpan:
        """The target span: ``span`` (its text, ``(start, end)`` in ``Turn.text``, or a
        TargetSpan) in assistant turn ``turn`` (default: the last with content); the turn's
        whole content when ``span`` is None."""
        conversation = self.conversation
        return target_span(conversation, last_answer(conversation) if turn is None else turn, span)

    def shares(self, turn: int, start: int, end: int) -> dict[int, float]:
        """Turn shares of ``Turn.text[start:end]`` of assistant turn ``turn``, from the stored
        rows (see :func:`~mtcabench.evaluate.turn_shares`)."""
        self.flush()
        layout = self.layout
        rows = self._rows.get(turn)
        a, b = layout.span_tokens(turn, start, end)
        if rows is None or b <= a:
            return {}
        if not (rows.start <= a and b <= rows.start + len(rows.features)):
            raise ValueError(f"turn {turn}: rows {a}-{b} not stored")
        feats = rows.features[a - rows.start : b - rows.start].mean(axis=0, dtype=np.float64)
        n_s = len(layout.sentence_chars)
        scores = np.full(n_s, np.nan)
        scores[: len(feats)] = feats
        return turn_shares(scores, self._state.sentence_turns, turn, self.settings.turn_aggregate)

    def shares_function(self, target: TargetSpan) -> Callable[[Hashable], dict[int, float]]:
        """The :data:`~mtcabench.evaluate._tokengeist.SharesFn` of a target: its own shares
        under ``TARGET``, an assistant turn's as a whole under its index (memoised)."""
        memo: dict[Hashable, dict[int, float]] = {}
        turns = self.turns

        def shares(key: Hashable) -> dict[int, float]:
            if key not in memo:
                if key == TARGET:
                    memo[key] = self.shares(target.turn, target.start, target.end)
                elif isinstance(key, int) and 0 <= key < len(turns) and turns[key].text:
                    memo[key] = self.shares(key, 0, len(turns[key].text))
                else:
                    memo[key] = {}
            return memo[key]

        return shares

    def explain(
        self,
        turn: int | None = None,
        span: str | tuple[int, int] | TargetSpan | None = None,
        *,
        method: str = DEFAULT_METHOD,
    ) -> ProvenanceGraph:
        """The provenance graph of a span (see :meth:`target`) by ``method`` (tokengeist,
        flat, or any registered method), from the stored features: no forward pass."""
        target = self.target(turn, span)
        (m,) = get_methods([method]).values()
        shares = self.shares_function(target) if m.uses_model else None
        return m.graph(self.conversation, target, shares, self.settings.search)


def _starts_with_split_token(tokenizer, text: str) -> bool:
    """Whether ``text`` starts with an added token that takes no blank from its left.

    A fast tokenizer cuts its input at added tokens (a chat template's ``<|im_start|>``...)
    before anything else, so the text on either side of such a token is tokenised as if alone:
    tokenising a rendering that starts with one and appending the ids is exact. A token with
    ``lstrip`` would take the blanks before it, so it does not count.
    """
    decoder = getattr(tokenizer, "added_tokens_decoder", None) or {}
    return any(t.content and text.startswith(t.content) and not getattr(t, "lstrip", False)
               for t in decoder.values())


def _extended_layout(tokenizer, old: Layout, text: str, origins, turn_chars,
                     sentence_chars) -> Layout:
    """The layout of ``text``, which extends ``old.text``: only the new part is tokenised when
    it starts at a token boundary that tokenisation cannot cross (see
    :func:`_starts_with_split_token`), else the whole text. Re-tokenising the whole
    conversation at every add would cost quadratic time over a run."""
    suffix = text[len(old.text):]
    if not old.text or not _starts_with_split_token(tokenizer, suffix):
        return make_layout(tokenizer, text, origins, turn_chars, sentence_chars)
    ids, offsets = _tokenize(tokenizer, suffix)
    return Layout(text, [*old.input_ids, *ids],
                  np.concatenate([old.offsets, offsets + len(old.text)]),
                  origins, turn_chars, sentence_chars)


def _pad(a: np.ndarray, width: int) -> np.ndarray:
    """Rows padded with zeros to ``width`` sentences (later sentences: no attention)."""
    return a if a.shape[1] == width else np.pad(a, ((0, 0), (0, width - a.shape[1])))
