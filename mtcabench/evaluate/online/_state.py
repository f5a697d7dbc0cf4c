"""What an online :class:`~mtcabench.evaluate.Tracer` keeps between adds: its statistics, the
stored rows of assistant turns, the rendering so far, and the helpers that read a
transformers key/value cache and extend a tokenisation by one turn."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mtcabench.evaluate.attribution._passes import cache_bytes, cache_keys, cache_length
from mtcabench.evaluate.attribution._render import Layout, Sentence, tokenize, make_layout
from mtcabench.model import Role, Turn


@dataclass
class OnlineStats:
    """What online tracing has cost so far."""

    turns: int = 0
    #: Of which past the model's context (added, answered in a context window when asked).
    past_turns: int = 0
    #: Tokens of the conversation as now rendered (processed, or waiting for the next pass),
    #: the turns past the context left out.
    tokens: int = 0
    #: Forward passes run over the conversation (see ``pass_tokens``).
    forward_calls: int = 0
    #: Every model call run for this tracer: its passes and the attention-sink probe (which
    #: runs once per process for a conversation start already probed).
    model_calls: int = 0
    #: Tokens fed to the model, recomputed ones included (equals ``tokens`` once flushed,
    #: without crops, less ``reused_tokens``).
    tokens_fed: int = 0
    #: Tokens whose keys and values came from the prefix cache (a system prompt another
    #: conversation of the model stored) instead of being computed.
    reused_tokens: int = 0
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
class TurnRows:
    """The stored rows of one assistant turn: token ``start`` on, one feature vector each."""

    start: int
    end: int  # end of the turn's tokens
    features: np.ndarray  # float32 [rows stored, sentences known when computed]


@dataclass
class RenderState:
    """The rendering, tokens and sentences of the conversation processed so far."""

    messages: list[dict] = field(default_factory=list)
    text: str = ""
    origins: list[int] = field(default_factory=list)
    turn_chars: list[tuple[int, int]] = field(default_factory=list)
    sentences: list[Sentence] = field(default_factory=list)
    sentence_chars: list[tuple[int, int] | None] = field(default_factory=list)
    layout: Layout | None = None


# The cache helpers live with the pass service; the names below are this module's for its
# callers (and tests) that read a tracer's cache.
_cache_keys = cache_keys
_cache_length = cache_length
_cache_bytes = cache_bytes


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


def starts_with_split_token(tokenizer, text: str) -> bool:
    """Whether ``text`` starts with an added token that takes no blank from its left.

    A fast tokenizer cuts its input at added tokens (a chat template's ``<|im_start|>``...)
    before anything else, so the text on either side of such a token is tokenised as if alone:
    tokenising a rendering that starts with one and appending the ids is exact. A token with
    ``lstrip`` would take the blanks before it, so it does not count.
    """
    decoder = getattr(tokenizer, "added_tokens_decoder", None) or {}
    return any(t.content and text.startswith(t.content) and not getattr(t, "lstrip", False)
               for t in decoder.values())


def extended_layout(tokenizer, old: Layout, text: str, origins, turn_chars,
                     sentence_chars) -> Layout:
    """The layout of ``text``, which extends ``old.text``: only the new part is tokenised when
    it starts at a token boundary that tokenisation cannot cross (see
    :func:`starts_with_split_token`), else the whole text. Re-tokenising the whole
    conversation at every add would cost quadratic time over a run."""
    suffix = text[len(old.text):]
    if not old.text or not starts_with_split_token(tokenizer, suffix):
        return make_layout(tokenizer, text, origins, turn_chars, sentence_chars)
    ids, offsets = tokenize(tokenizer, suffix)
    return Layout(text, [*old.input_ids, *ids],
                  np.concatenate([old.offsets, offsets + len(old.text)]),
                  origins, turn_chars, sentence_chars)


def pad_rows(a: np.ndarray, width: int) -> np.ndarray:
    """Rows padded with zeros to ``width`` sentences (later sentences: no attention)."""
    return a if a.shape[1] == width else np.pad(a, ((0, 0), (0, width - a.shape[1])))
