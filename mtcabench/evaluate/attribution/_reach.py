"""How many spans of a release end past a model's context: the release card's count.

A span whose conversation up to its end passes the limit is attributed in a context window
(:mod:`~mtcabench.evaluate.attribution._window`); the card says how many there are per domain.
Counting needs the model's tokenizer and chat template (the evaluator's extra and the model's
files), not its weights: each conversation is rendered once with the chat template up to its
last span's turn and tokenised once; a span's end is located by finding each turn's text in
the rendering in order (a template that does not show a turn's text verbatim falls back to
the exact per-turn rendering of :func:`render_conversation`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mtcabench.errors import InputError
from mtcabench.evaluate.attribution._render import (
    chat_message,
    render_chat,
    render_conversation,
    tokenize,
)
from mtcabench.model import BenchmarkSpan, Conversation


def span_ends(conversation: Conversation, spans: Sequence[BenchmarkSpan], tokenizer) -> list[int]:
    """The token where each span ends in the rendering of its conversation."""
    upto = max(s.span.turn for s in spans)
    turns = conversation.turns[: upto + 1]
    text = render_chat(tokenizer, [chat_message(t) for t in turns])
    origins, pos = [], 0
    for t in turns:
        body = t.text.strip()
        at = text.find(body, pos) if body else pos
        if at < 0:  # the template rewrites the text: the exact, slower way
            full = render_conversation(conversation, tokenizer, upto=upto).full
            return [full.span_tokens(s.span.turn, s.span.start, s.span.end)[1] for s in spans]
        origins.append(at - (len(t.text) - len(t.text.lstrip())))
        pos = at + len(body)
    _, offsets = tokenize(tokenizer, text)
    starts = offsets[:, 0]
    return [int(np.searchsorted(starts, origins[s.span.turn] + s.span.end, side="left"))
            for s in spans]


def context_reach(conversations: Sequence[Conversation], spans: Sequence[BenchmarkSpan],
                  tokenizer, limit: int, model: str) -> dict:
    """Per ``source/domain``: spans, and those whose conversation up to their end passes
    ``limit`` tokens (attributed in a context window by ``model``)."""
    by_conv: dict[str, list[BenchmarkSpan]] = {}
    for s in spans:
        by_conv.setdefault(s.conversation_id, []).append(s)
    rows: dict[str, list[int]] = {}
    for c in conversations:
        mine = by_conv.get(c.id)
        if not mine:
            continue
        try:
            ends = span_ends(c, mine, tokenizer)
        except InputError as exc:  # a template that refuses it: trace would refuse it too
            raise InputError(f"counting the spans past {model}'s context: {exc}") from None
        row = rows.setdefault(f"{c.source}/{c.domain}", [0, 0])
        row[0] += len(mine)
        row[1] += sum(e > limit for e in ends)
    return {"computed": True, "model": model, "limit": limit,
            "by_domain": {d: {"spans": n, "past": k} for d, (n, k) in sorted(rows.items())}}


def default_context_reach():
    """The release card's counter for the default model, when its tokenizer can be loaded
    here (the evaluator's extra installed, the model's files on this machine): a function of
    ``(conversations, spans)``; else the reason it cannot, as a string."""
    try:
        from transformers import AutoTokenizer  # noqa: PLC0415 - the eval extra
    except ImportError:
        return "the evaluator's extra (mtcabench[eval]) is not installed"
    from mtcabench.evaluate.attribution._loading import DEFAULT_MODEL, model_cache_dir, model_limits

    try:
        limits = model_limits(DEFAULT_MODEL)  # the files' shapes checked: one line if damaged
    except InputError as exc:
        return exc.message
    if limits is None:
        return (f"the default model's files are not on this machine (run `mtcabench trace` "
                f"once to convert {DEFAULT_MODEL})")
    folder = model_cache_dir() / DEFAULT_MODEL
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(folder))
    except Exception as exc:  # noqa: BLE001 - any failure of a damaged folder is one line
        return (f"{folder}: the tokenizer does not load ({type(exc).__name__}: "
                f"{str(exc).splitlines()[0][:200] if str(exc) else ''}); delete the folder to "
                "convert the model again")

    def count(conversations, spans) -> dict:
        return context_reach(conversations, spans, tokenizer, limits[0], DEFAULT_MODEL)
    return count
