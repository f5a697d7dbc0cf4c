"""Online tracing: attribution features kept while an agent's conversation grows, turn by turn.

An agent loop feeds a :class:`Tracer` one message at a time (``tracer.add(message)``), in any
agent-log format :mod:`mtcabench.transcripts` reads (the same mapping to turns). The
model's key/value cache (a transformers ``DynamicCache``) is kept between turns, so the model
runs over *new tokens only*: over a whole run every token is processed once, as in one plain
forward pass over the final conversation. Each pass reads every weight whatever its length, so
short turns are taken together: the model runs once ``pass_tokens`` (1,024) new tokens wait,
and always before an answer (``pass_tokens=0``: at every add). During a pass a hook on every
attention module (the style of :mod:`~mtcabench.evaluate.attribution._attention`), run after the module,
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
mass (average attention, AT2; any scorer that declares ``online``). AttnTrace scores
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

The agent never waits for the model. With ``background=True`` (the default) :meth:`Tracer.add`
only reads, renders and tokenises the message (milliseconds) and wakes a worker thread that
runs the model over everything waiting while the agent waits for its next LLM answer (seconds):
an ``explain`` made after that wait finds every token processed and answers from the stored
rows (``benchmarks/online_trace.py --llm-latency`` measures it). An ``explain`` made while a
pass still runs waits for that pass only. ``background=False`` runs the model in the calling
thread, once ``pass_tokens`` wait and always before an answer.

The model runs through the pass service of the evaluator (:mod:`~mtcabench.evaluate.attribution._passes`),
which keeps the key/value states of a system prompt across conversations: a new Tracer of the
same model whose conversation starts with a system prompt another one stored (an agent's next
conversation, or a Tracer given the system message before the user speaks) computes only what
follows it. The worker (:mod:`~mtcabench.evaluate.online._worker`) is joined at :meth:`Tracer.close`,
when the tracer is collected, and at interpreter exit: a script may end while it runs.

Context: a turn that takes the conversation past the model's context (or
``TraceSettings.max_tokens``) is added, but from it on the model no longer runs as turns come
(:attr:`OnlineStats.past_turns` counts such turns). A span that ends past the limit is
attributed as ``trace`` attributes it, by the same function
(:func:`~mtcabench.evaluate.methods._conversation.model_shares`, the context-length policy of
docs/evaluate.md): in a context window of the conversation with earlier turns shortened, one
set of forward passes when it is explained (memoised per span). A span of a past turn that
still ends within the limit is read the same way, from the whole conversation. Online equals
offline for these spans too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterable
from typing import Any

import numpy as np
import torch

from mtcabench.errors import InputError
from mtcabench.evaluate.attribution._attention import (
    SINK_PROBE_TOKENS,
    layer_attention_rows,
    row_chunks,
    sink_positions,
    without_sinks,
)
from mtcabench.evaluate.attribution._passes import attention_modules, passes_for
from mtcabench.evaluate.attribution._engine import answer
from mtcabench.evaluate.attribution._loading import (
    DEFAULT_MODEL,
    LoadedModel,
    load_model,
    model_limits,
)
from mtcabench.evaluate.attribution._engine import Attributor
from mtcabench.evaluate.methods._conversation import SentencesFn, model_shares, span_graph
from mtcabench.evaluate.methods._methods import get_methods
from mtcabench.evaluate.online._scorers import online_head_weights
from mtcabench.evaluate.online._worker import Worker
from mtcabench.evaluate.online._state import (
    OnlineStats,
    _cache_bytes,
    _cache_length,
    extended_layout,
    pad_rows,
    RenderState,
    TurnRows,
    as_message,
)
from mtcabench.evaluate.attribution._render import (
    Layout,
    Sentence,
    render_chat,
    chat_message,
    make_layout,
    place_text,
    turn_sentences,
)
from mtcabench.evaluate.attribution._scorers import BaseScorer, make_scorer
from mtcabench.evaluate._settings import DEFAULT_DEVICE, DEFAULT_DTYPE, DEFAULT_METHOD, DEFAULT_SCORER, TraceSettings
from mtcabench.evaluate.methods._tokengeist import TARGET, Part
from mtcabench.model import Conversation, ProvenanceGraph, Role, ScoredSentence, TargetSpan, Turn
from mtcabench.transcripts import LiveReader, last_answer, target_span

#: One chunk of recomputed rows (heads x rows x tokens float32): small enough that the softmax,
#: the sum over heads and the sum per sentence read it from the processor's cache, not memory
#: (measured about twice as fast as 256 MiB chunks on 2 CPU cores).
ROW_CHUNK_BYTES = 4 * 2**20

#: ``Tracer(pass_tokens=...)`` unless told otherwise (see the class).
DEFAULT_PASS_TOKENS = 1024

class Tracer:
    """Attribution while a conversation grows: ``add`` each message, ``explain`` any span.

    ``model`` is a model name (loaded here) or a :class:`LoadedModel`; ``scorer`` one that
    declares an online form (a head-weighted attention mass: avg-attention, at2); ``settings``
    as for ``trace`` (the search's top-k, threshold, d_max, alpha; the turn aggregate;
    max_tokens; the scorer's own settings in ``scorers``, e.g. ``{"at2": AT2Settings(...)}``).

    ``background`` (default): :meth:`add` never waits for the model; a worker thread runs it
    over the added turns while the agent waits for its LLM, taking together whatever waits
    when it starts a pass. Without it, ``pass_tokens`` says when the model runs in the calling
    thread: once at least that many new tokens wait (and always before an answer, or on
    :meth:`flush`); 0 runs it at every add. Each run costs one read of every weight whatever
    its length, so a few short turns are taken together (on 2 CPU cores a 20-token turn costs
    about as much as 300 tokens in one run). Tokens are processed once either way. See the
    module docstring for what is computed.
    """

    def __init__(
        self,
        model: str | LoadedModel = DEFAULT_MODEL,
        *,
        scorer: str | BaseScorer = DEFAULT_SCORER,
        settings: TraceSettings = TraceSettings(),
        conversation_id: str = "online",
        pass_tokens: int = DEFAULT_PASS_TOKENS,
        background: bool = True,
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
        # The most characters one token can cover (the longest vocabulary entry, twice: as
        # the window's TOKEN_SPAN_MARGIN): a turn whose text is longer than the limit in
        # tokens times this is past the limit without being rendered or tokenised (a 4 MB
        # message took 8 s of tokenising).
        self._chars_per_token = 2 * model_limits(self.loaded)[1]
        self.conversation_id = conversation_id
        self._passes = passes_for(self.loaded.model)
        self.background = background
        # _engine: held by whoever runs the model or reads what it stored (the worker during
        # a pass; explain, flush, reset). _state_lock: the conversation as added, swapped
        # whole by add (never held during a pass, so add never waits for one).
        self._engine = threading.RLock()
        self._state_lock = threading.Lock()
        self._worker = Worker(self, Tracer._background_pass,
                              name=f"mtcabench-tracer-{conversation_id}")
        self._failure: BaseException | None = None
        self.reset()

    # ------------------------------------------------------------------ state

    def reset(self) -> None:
        """Forget the conversation (the model stays loaded): the next add starts a new one."""
        with self._engine, self._state_lock:
            self._reset()

    def _reset(self) -> None:
        from transformers import DynamicCache

        self._failure = None
        self._reader = LiveReader(f"tracer {self.conversation_id}")
        self._state = RenderState()
        self._rows: dict[int, TurnRows] = {}
        self._cache = DynamicCache()
        # What the cache holds: the token ids processed and each one's sentence.
        self._done_ids = np.zeros(0, dtype=np.int64)
        self._done_sentences = np.zeros(0, dtype=np.int64)
        # The attention sinks the stored rows were computed without, and the probe's tokens.
        self._sinks = self._probed = np.zeros(0, dtype=np.int64)
        self._sink_probe = np.zeros(0, dtype=np.int64)
        self._conversation: Conversation | None = None
        self._chars = 0  # characters of the turns' texts so far (for the early check)
        # Turns past the limit: added, not run through the model (answered offline, in a
        # context window); their answers memoised by (turn, start, end).
        self._past = False
        self._past_answers: dict[tuple[int, int, int], Callable[[Hashable], tuple]] = {}
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

    def add(self, message: Any) -> list[Turn]:
        """Add the next message: of any agent-log format (an OpenAI chat message, an Anthropic
        message with ``tool_use`` or ``tool_result`` blocks, a Responses item or a response's
        output items together, a GenAI ``{role, parts}`` message, an Inspect message; see
        :mod:`mtcabench.transcripts`), or a Turn. Returns the turns it gave (a user message
        with two tool results gives two; a reasoning-only response none); their tokens are
        run through the model now or with the next ones (see ``pass_tokens``).

        A malformed message is refused whole (nothing added). A turn that takes the
        conversation past the model's context is added, and it and every later turn are
        answered in a context window when explained (see the module docstring).
        """
        self._raise_failure()
        if isinstance(message, Turn):
            message = as_message(message)
        turns = self._reader.read(message)
        try:
            for turn in turns:
                self._add_turn(turn)
            self._reader.done()
        finally:
            if self.background and self.pending_tokens > 0:
                self._worker.wake()
        return turns

    def _add_turn(self, turn: Turn) -> None:
        chars = self._chars + len(turn.text.strip())
        # A turn certainly past the limit (by characters: as explain's early refusal) is not
        # even rendered; nor is any turn after the first one past it.
        state = None
        if not self._past and chars // self._chars_per_token <= self.limit:
            state = self._render_with(turn)
            if state.layout.num_tokens > self.limit:
                state = None
        # The cache is cropped to what the new rendering keeps when the model next runs
        # (_catch_up), so that adding never waits for a pass in progress.
        with self._state_lock:
            self._reader.append(turn)
            self._chars = chars
            self._conversation = None
            self.stats.turns = len(self.turns)
            if state is None:
                self._past = True
                self.stats.past_turns += 1
            else:
                self._state = state
                self.stats.tokens = state.layout.num_tokens
        if not self.background and self.pending_tokens >= max(self.pass_tokens, 1):
            self.flush()

    def extend(self, messages: Iterable[Any]) -> None:
        """Add several messages in order."""
        for m in messages:
            self.add(m)

    def flush(self) -> None:
        """Run the model over the tokens still waiting (nothing to do when none wait); with a
        pass of the background worker in progress, wait for it first."""
        with self._engine:
            self._raise_failure()
            self._catch_up()

    def close(self) -> None:
        """Stop the background worker, waiting for a pass in progress (also done when the
        tracer is garbage collected, and at interpreter exit)."""
        self._worker.stop()

    def _catch_up(self) -> None:
        """Crop the cache to what the current rendering keeps, then run the model over the
        rest. Holds the engine lock; reads the conversation as it is now."""
        with self._state_lock:
            # The model runs over the turns that fit only (those the rendering holds).
            state, turns = self._state, list(self.turns)[: len(self._state.messages)]
        if state.layout is None:
            return
        keep = self._kept_prefix(state, turns)
        if keep < len(self._done_ids):
            self._crop(keep)
        if state.layout.num_tokens > len(self._done_ids):
            sinks = self._sinks_of(state.layout)
            if self._rows and not np.array_equal(sinks, self._sinks):
                # Rows stored under another sink set (the probe saw fewer tokens then): the
                # features would mix two mappings; run the conversation again.
                self._crop(0)
            self._sinks = sinks
            self._forward(state.layout, len(self._done_ids), turns)

    def _sinks_of(self, layout: Layout) -> np.ndarray:
        """The attention sinks of the conversation's start (as offline: sink_positions),
        probed again only when the tokens the probe reads changed."""
        probe = np.asarray(layout.input_ids[:SINK_PROBE_TOKENS], dtype=np.int64)
        if not np.array_equal(probe, self._sink_probe):
            self._sink_probe = probe
            with self._passes.meter() as meter:
                self._probed = sink_positions(self.loaded.model, probe)
            self.stats.model_calls += meter.calls
        return self._probed

    def _background_pass(self) -> None:
        with self._engine:
            if self._failure is not None:
                return
            try:
                self._catch_up()
            except BaseException as exc:  # noqa: BLE001 - handed to the agent's thread
                self._failure = exc

    def _raise_failure(self) -> None:
        """A failure of the background worker, raised in the agent's thread (once)."""
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure

    def _render_with(self, turn: Turn) -> RenderState:
        """The rendering of the conversation with ``turn`` added, every turn located."""
        tok = self.loaded.tokenizer
        old = self._state
        messages = [*old.messages, chat_message(turn)]
        rendered = render_chat(tok, messages)
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
            layout = extended_layout(tok, old.layout, rendered, origins, turn_chars,
                                      sentence_chars)
        else:
            layout = make_layout(tok, rendered, origins, turn_chars, sentence_chars)
        return RenderState(messages, rendered, origins, turn_chars, sentences, sentence_chars, layout)

    def _kept_prefix(self, state: RenderState, turns: list[Turn]) -> int:
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

    def _forward(self, layout: Layout, p: int, turns: list[Turn]) -> None:
        """Run the model over tokens ``p..`` of ``layout`` (the rendering of ``turns``) with
        the cache of tokens ``..p``, storing the rows of assistant turns' tokens from ``p`` on."""
        device = self.loaded.device
        T = layout.num_tokens
        n_s = len(layout.sentence_chars)
        assistant = {t.index: layout.turn_tokens(t.index) for t in turns
                     if t.role is Role.ASSISTANT}
        # The rows to compute: every token of an assistant turn's text from p on.
        parts = [(i, max(a, p), b) for i, (a, b) in sorted(assistant.items()) if b > max(a, p)]
        rows = (np.concatenate([np.arange(a, b) for _, a, b in parts]) if parts
                else np.zeros(0, dtype=np.int64))
        rows_t = torch.as_tensor(rows, dtype=torch.long, device=device)
        # Attention sinks belong to no sentence, as offline (query_features).
        sent = torch.as_tensor(without_sinks(layout.token_sentence, self._sinks),
                               dtype=torch.long, device=device)
        sent = torch.where(sent < 0, torch.full_like(sent, n_s), sent)  # bucket for "none"
        acc = torch.zeros(len(rows), n_s + 1, device=device)
        hw = self._head_weights

        def on_layer(layer, module, hidden, pe, keys):
            if not len(rows):
                return
            # After the layer's attention ran: its cache holds the keys of every token.
            fn = layer_attention_rows(module, hidden, pe, rows_t, keys=keys)
            weights = hw[layer]
            for chunk in row_chunks(len(rows), self._n_heads or 1, T, budget=ROW_CHUNK_BYTES):
                w = fn(chunk)  # [H, r, t]: the tokens up to the chunk's last row
                per_row = torch.matmul(weights, w.view(w.shape[0], -1)).view(w.shape[1], -1)
                acc[chunk].index_add_(1, sent[: w.shape[-1]], per_row)

        # A new conversation may start from the prefix another one stored (its system prompt):
        # the tokens before the first stored row need not be computed again.
        first = int(rows[0]) if len(rows) else T - 1
        store = (layout.turn_tokens(0)[1] if turns and turns[0].role is Role.SYSTEM else 0)
        with self._passes.meter() as meter:
            res = self._passes.forward(layout.input_ids, cache=self._cache, on_layer=on_layer,
                                       reuse=first, store=store)
        self._cache = res.cache
        self.stats.model_calls += meter.calls
        self.stats.reused_tokens += meter.reused
        feats = acc[:, :n_s].cpu().numpy()
        k = 0
        for i, a, b in parts:
            block = feats[k : k + (b - a)]
            k += b - a
            have = self._rows.get(i)
            if have is not None and have.start + len(have.features) == a:
                width = max(have.features.shape[1], block.shape[1])
                have.features = np.concatenate([pad_rows(have.features, width), pad_rows(block, width)])
                have.end = assistant[i][1]
            else:
                self._rows[i] = TurnRows(*assistant[i], block)
        self._done_ids = np.asarray(layout.input_ids, dtype=np.int64)
        self._done_sentences = np.asarray(layout.token_sentence, dtype=np.int64)
        st = self.stats
        st.forward_calls += 1
        st.tokens_fed += T - res.start
        st.stored_rows = sum(len(r.features) for r in self._rows.values())
        st.feature_bytes = sum(r.features.nbytes for r in self._rows.values())
        st.cache_bytes = _cache_bytes(self._cache)

    # ------------------------------------------------------------------ answers

    def target(self, turn: int | None = None, span: str | tuple[int, int] | TargetSpan | None = None) -> TargetSpan:
        """The target span: ``span`` (its text, ``(start, end)`` in ``Turn.text``, or a
        TargetSpan) in assistant turn ``turn`` (default: the last with content); the turn's
        whole content when ``span`` is None."""
        conversation = self.conversation
        return target_span(conversation, last_answer(conversation) if turn is None else turn, span)

    def _sentence_scores(self, turn: int, start: int, end: int) -> np.ndarray | None:
        """Each sentence's score for ``Turn.text[start:end]`` of turn ``turn``, from the stored
        rows (NaN: not scored); None when the text maps to no token."""
        with self._engine:
            self.flush()
            return self._stored_scores(turn, start, end)

    def _stored_scores(self, turn: int, start: int, end: int) -> np.ndarray | None:
        layout = self.layout
        rows = self._rows.get(turn)
        a, b = layout.span_tokens(turn, start, end)
        if rows is None or b <= a:
            return None
        if not (rows.start <= a and b <= rows.start + len(rows.features)):
            raise ValueError(f"turn {turn}: rows {a}-{b} not stored")
        feats = rows.features[a - rows.start : b - rows.start].mean(axis=0, dtype=np.float64)
        n_s = len(layout.sentence_chars)
        scores = np.full(n_s, np.nan)
        scores[: len(feats)] = feats
        return scores

    def _answer(self, turn: int, start: int, end: int
                ) -> tuple[dict[int, float], dict[int, list[ScoredSentence]]]:
        """The offline answer (:func:`~mtcabench.evaluate.attribution._engine.answer`) for
        ``Turn.text[start:end]`` of turn ``turn`` from the stored rows (a turn past the limit:
        as ``trace`` answers it, see :meth:`_past_lookup`)."""
        if turn >= len(self._state.messages):
            return self._past_lookup(turn, start, end)(TARGET)
        scores = self._sentence_scores(turn, start, end)
        if scores is None:
            return {}, {}
        return answer(scores, self._state.sentences, [t.text for t in self.turns], turn,
                      self.settings.evidence_sentences, self.settings.turn_aggregate,
                      self.scorer.additive)

    def shares(self, turn: int, start: int, end: int) -> dict[int, float]:
        """Turn shares of ``Turn.text[start:end]`` of assistant turn ``turn``, from the stored
        rows (see :func:`~mtcabench.evaluate.turn_shares`)."""
        return self._answer(turn, start, end)[0]

    def evidence(self, turn: int, start: int, end: int) -> dict[int, list[ScoredSentence]]:
        """Per earlier turn, its best sentences for ``Turn.text[start:end]`` of turn ``turn``
        (``settings.evidence_sentences`` of them; see :func:`best_sentences`)."""
        return self._answer(turn, start, end)[1]

    def _node(self, target: TargetSpan, key: Hashable) -> tuple[int, int, int] | None:
        """The text a search node stands for: the target span, a whole turn by index, or a
        part of a turn."""
        turns = self.turns
        if key == TARGET:
            return target.turn, target.start, target.end
        if isinstance(key, Part) and 0 <= key.turn < len(turns):
            return key.turn, key.start, key.end
        if isinstance(key, int) and 0 <= key < len(turns) and turns[key].text:
            return key, 0, len(turns[key].text)
        return None

    def _past_lookup(self, turn: int, start: int, end: int) -> Callable[[Hashable], tuple]:
        """A node's answer for a text of a turn past the limit, computed as ``trace`` computes
        it (:func:`model_shares`: in a context window when the text ends past the limit), with
        every query Tokengeist may ask; one set of forward passes per text, memoised."""
        key = (turn, start, end)
        if key not in self._past_answers:
            conversation = self.conversation
            target = TargetSpan(turn=turn, start=start, end=end,
                                text=conversation.turns[turn].text[start:end])
            attributor = Attributor(self.loaded, self.scorer,
                                    aggregate=self.settings.turn_aggregate,
                                    seed=self.settings.seed)
            with self._engine:  # the model is shared with the worker's passes
                got = model_shares(attributor, conversation, {"online": target},
                                   list(get_methods(["tokengeist"]).values()), self.settings)
            self.stats.model_calls += attributor.forward_passes
            if "online" in got.unfit:
                raise got.unfit["online"].error(conversation, target)
            shares, sentences = got.shares["online"], got.sentences["online"]

            def lookup(node: Hashable) -> tuple:
                found = shares(node)
                return found, {p: got for p in found if (got := sentences(node, p))}

            self._past_answers[key] = lookup
        return self._past_answers[key]

    def _lookup(self, target: TargetSpan) -> Callable[[Hashable], tuple]:
        """A node's answer (the target under ``TARGET``, a turn by index, a part of one),
        memoised: one answer per node gives its shares and its evidence."""
        if target.turn >= len(self._state.messages):
            return self._past_lookup(target.turn, target.start, target.end)
        memo: dict[Hashable, tuple] = {}

        def lookup(key: Hashable) -> tuple:
            if key not in memo:
                node = self._node(target, key)
                memo[key] = ({}, {}) if node is None else self._answer(*node)
            return memo[key]

        return lookup

    def evidence_function(self, target: TargetSpan) -> SentencesFn:
        """``sentences(node, parent)``: a parent's best sentences for a node of the search
        (the target under ``TARGET``, a turn by index), memoised per node."""
        lookup = self._lookup(target)
        return lambda key, parent: list(lookup(key)[1].get(parent, []))

    def shares_function(self, target: TargetSpan) -> Callable[[Hashable], dict[int, float]]:
        """The :data:`~mtcabench.evaluate.methods._tokengeist.SharesFn` of a target: its own shares
        under ``TARGET``, an assistant turn's as a whole under its index, a part of one under
        its :class:`~mtcabench.evaluate.methods._tokengeist.Part` (memoised)."""
        lookup = self._lookup(target)
        return lambda key: lookup(key)[0]

    def explain(
        self,
        turn: int | None = None,
        span: str | tuple[int, int] | TargetSpan | None = None,
        *,
        method: str = DEFAULT_METHOD,
    ) -> ProvenanceGraph:
        """The provenance graph of a span (see :meth:`target`) by ``method`` (tokengeist,
        flat, or any registered method), from the stored features: no forward pass (a span
        of a turn past the model's context: one set of passes, as ``trace``, memoised)."""
        target = self.target(turn, span)
        (m,) = get_methods([method]).values()
        if not m.uses_model:
            return span_graph(m, self.conversation, target, None, None, self.settings)
        lookup = self._lookup(target)
        return span_graph(m, self.conversation, target, lambda key: lookup(key)[0],
                          lambda key, parent: list(lookup(key)[1].get(parent, [])),
                          self.settings)

