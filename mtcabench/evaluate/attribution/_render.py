"""Rendering a conversation with the model's chat template, with exact token ranges.

The whole conversation is rendered once with the tokenizer's chat template; tool calls are
part of an assistant turn's text (``Turn.text``: content, then one ``name({...})`` line per
call) and tool results are ``tool`` messages. Where each turn lands is measured, not guessed:

- each turn's *segment* (what the template produced for it) is the difference between the
  renderings of the conversation up to that turn and up to the turn before, which requires a
  template that renders a conversation as the concatenation of its turns (checked);
- the turn's text inside its segment is found by rendering it once more with a sentinel in
  place of the text, and checking that putting the text back gives the same string (so a
  template that rewrites text is refused, except the common ``trim``, which is allowed for);
- tokens get their turn and sentence from the fast tokenizer's character offsets.

A :class:`Layout` is one tokenised string; :meth:`RenderedConversation.layout` also builds the
string with some sentences removed (context subsampling, ablations), mapping every kept
position to its new place.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from mtcabench.errors import InputError
from mtcabench.evaluate.attribution._sentences import split_sentences, unit_segments
from mtcabench.model import Conversation, Role

#: Stands in for a turn's text to find where the template puts it; private-use characters
#: that no template adds and no tokenizer merges with neighbouring text in a way that matters.
SENTINEL = "\ue000mtcabench-turn-text\ue001"


#: The conditions of a chat template that puts consecutive tool results into one block
#: (Qwen2.5's and Qwen3's: open it before the first result, close it after the last). There,
#: adding a tool result rewrites the rendering of the one before it (its closing tag moves),
#: so the conversation is not the concatenation of its turns and could not be rendered.
_MERGING = (re.compile(r'\((?:loop\.index0 == 0|loop\.first)\) or \(messages\[loop\.index0 - 1\]'
                       r'\.role != "tool"\)|(?:loop\.index0 == 0|loop\.first) or \(messages\['
                       r'loop\.index0 - 1\]\.role != "tool"\)'),
            re.compile(r'loop\.last or \(messages\[loop\.index0 \+ 1\]\.role != "tool"\)'))


def tool_results_apart(template: str | None) -> str | None:
    """``template`` with each tool result in a block of its own: the merging conditions of
    :data:`_MERGING` made true. Where a tool result stands alone they are true already, so
    such a conversation renders byte for byte as before; two in a row render as two blocks,
    each turn its own segment (docs/evaluate.md, "Models"). Other templates are unchanged."""
    if not template or not all(p.search(template) for p in _MERGING):
        return template
    for p in _MERGING:
        template = p.sub("true", template)
    return template


def chat_message(turn) -> dict[str, Any]:
    """The chat-template message for a turn: its canonical text, tool results as ``tool``."""
    msg: dict[str, Any] = {"role": turn.role.value, "content": turn.text}
    if turn.role is Role.TOOL:
        msg["tool_call_id"] = turn.tool_call_id
        if turn.name:
            msg["name"] = turn.name
    return msg


@dataclass(frozen=True)
class Sentence:
    """An evidence unit of a turn (a sentence, a line, a JSON field): its character range in
    ``Turn.text``, and the index of the segment (sentence or line) it lies in, within its
    turn (see mtcabench.evaluate.attribution._sentences)."""

    turn: int
    start: int
    end: int
    segment: int = 0


@dataclass
class Layout:
    """One tokenised rendering: token ids, character offsets, and where turns and sentences are."""

    text: str
    input_ids: list[int]
    offsets: np.ndarray  # [T, 2] character range of each token in ``text``
    #: Per turn: rendered position of ``Turn.text`` offset 0 (an offset k is at origin + k).
    origins: list[int]
    #: Per turn: rendered character range of the turn's text as present in ``text``.
    turn_chars: list[tuple[int, int]]
    #: Per sentence (by global id): rendered character range, or None where dropped.
    sentence_chars: list[tuple[int, int] | None]
    dropped: frozenset[int] = frozenset()

    @property
    def num_tokens(self) -> int:
        return len(self.input_ids)

    @cached_property
    def _starts(self) -> np.ndarray:
        return self.offsets[:, 0]

    @cached_property
    def _ends(self) -> np.ndarray:
        return self.offsets[:, 1]

    def tokens_for_chars(self, start: int, end: int) -> tuple[int, int]:
        """Token range ``[a, b)`` of the tokens overlapping rendered characters ``[start, end)``."""
        if end <= start:
            return (0, 0)
        a = int(np.searchsorted(self._ends, start, side="right"))
        b = int(np.searchsorted(self._starts, end, side="left"))
        # Zero-width tokens (none expected) would never overlap; skip them at the edges.
        return (a, max(a, b))

    def turn_tokens(self, turn: int) -> tuple[int, int]:
        """Token range of a turn's text."""
        return self.tokens_for_chars(*self.turn_chars[turn])

    def chars_of(self, turn: int, start: int, end: int) -> tuple[int, int]:
        """Rendered characters of ``Turn.text[start:end]``, clipped to what the template kept."""
        lo, hi = self.turn_chars[turn]
        origin = self.origins[turn]
        return (min(max(origin + start, lo), hi), min(max(origin + end, lo), hi))

    def span_tokens(self, turn: int, start: int, end: int) -> tuple[int, int]:
        """Token range of ``Turn.text[start:end]`` of a turn."""
        return self.tokens_for_chars(*self.chars_of(turn, start, end))

    @cached_property
    def token_sentence(self) -> np.ndarray:
        """Global sentence id of each token (-1 for template tokens and dropped text)."""
        out = np.full(self.num_tokens, -1, dtype=np.int64)
        for sid, chars in enumerate(self.sentence_chars):
            if chars is None:
                continue
            a, b = self.tokens_for_chars(*chars)
            # A token straddling two sentences goes to the one holding its first character.
            for t in range(a, b):
                if out[t] == -1 or self.offsets[t, 0] >= chars[0]:
                    out[t] = sid
        return out

    def sentence_tokens(self, sid: int) -> np.ndarray:
        """Token indices of a sentence (empty where dropped)."""
        return np.flatnonzero(self.token_sentence == sid)


@dataclass
class RenderedConversation:
    """A conversation rendered with a chat template, its sentences, and the full layout."""

    conversation: Conversation
    upto: int  # last turn rendered (inclusive)
    sentences: list[Sentence]
    #: Rendered character range of each turn's segment (header, text, trailer).
    segments: list[tuple[int, int]]
    full: Layout
    _tokenizer: Any = field(repr=False, default=None)

    @property
    def num_turns(self) -> int:
        return self.upto + 1

    @property
    def shared_prefix(self) -> int:
        """Tokens of the full layout other conversations likely start with: those up to the
        end of a leading system turn (every TauBench conversation of a domain starts with the
        same policy), 0 without one. The prefix cache stores them."""
        turns = self.conversation.turns
        if not turns or turns[0].role is not Role.SYSTEM:
            return 0
        return self.full.turn_tokens(0)[1]

    def turn_sentences(self, turn: int) -> list[int]:
        """Global ids of the sentences of a turn."""
        return [i for i, s in enumerate(self.sentences) if s.turn == turn]

    def layout(self, drop: Iterable[int] = ()) -> Layout:
        """The layout with the given sentences removed from the rendered string."""
        drop = frozenset(drop)
        if not drop:
            return self.full
        full = self.full
        cuts = sorted(full.sentence_chars[s] for s in drop if full.sentence_chars[s] is not None)
        pieces, pos = [], 0
        cut_starts, removed_before = [], [0]
        for a, b in cuts:
            pieces.append(full.text[pos:a])
            pos = b
            cut_starts.append(a)
            removed_before.append(removed_before[-1] + (b - a))
        pieces.append(full.text[pos:])
        text = "".join(pieces)

        def shift(x: int) -> int:
            # Characters removed strictly before position x (x is never inside a cut).
            i = bisect.bisect_right(cut_starts, x - 1) if cut_starts else 0
            return x - removed_before[i]

        sentence_chars = [
            None if (s in drop or c is None) else (shift(c[0]), shift(c[1]))
            for s, c in enumerate(full.sentence_chars)
        ]
        turn_chars = [(shift(a), shift(b)) for a, b in full.turn_chars]
        origins = [shift(o) for o in full.origins]
        ids, offsets = tokenize(self._tokenizer, text)
        return Layout(text, ids, offsets, origins, turn_chars, sentence_chars, drop)


def tokenize(tokenizer, text: str) -> tuple[list[int], np.ndarray]:
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    offsets = np.asarray(enc["offset_mapping"], dtype=np.int64).reshape(-1, 2)
    return list(enc["input_ids"]), offsets


def render_chat(tokenizer, messages: list[dict]) -> str:
    from jinja2 import TemplateError  # noqa: PLC0415 - transformers' template engine

    try:
        return tokenizer.apply_chat_template(messages, tokenize=False)
    except (TemplateError, ValueError, TypeError) as exc:  # e.g. a role the template refuses
        raise InputError(f"the chat template refused the conversation: {exc}") from None


def place_text(
    tokenizer, messages: list[dict], i: int, text: str, rendered: str, search_from: int,
    where: str,
) -> tuple[int, tuple[int, int]]:
    """Where message ``i``'s ``text`` sits in ``rendered`` (the rendering of ``messages``):
    the rendered position of ``text`` offset 0, and the rendered range of the text as shown.

    Renders once more with a sentinel in place of the text and checks that putting the text
    back gives ``rendered`` (a template's ``trim`` of the text is allowed for).
    """
    with_sentinel = render_chat(tokenizer, [*messages[:i], {**messages[i], "content": SENTINEL},
                                        *messages[i + 1 :]])
    at = with_sentinel.find(SENTINEL, search_from)
    if at < 0 or with_sentinel.count(SENTINEL) != 1:
        raise InputError(f"{where}, turn {i}: the chat template does not show the turn's "
                         "text (or shows it twice); cannot locate the turn")
    origin, present = at, text
    if with_sentinel.replace(SENTINEL, text) != rendered:
        stripped = text.strip()
        if with_sentinel.replace(SENTINEL, stripped) != rendered:
            raise InputError(f"{where}, turn {i}: the chat template rewrites the turn's text "
                             "(beyond trimming blanks); offsets into Turn.text cannot be mapped")
        # A trimming template: Turn.text offset k sits at at + (k - leading blanks).
        origin = at - (len(text) - len(text.lstrip()))
        present = stripped
    return origin, (at, at + len(present))


def turn_sentences(turn, origin: int, chars: tuple[int, int]) -> list[tuple[Sentence, tuple[int, int]]]:
    """The sentences of a turn placed at ``origin`` (see :func:`place_text`), each with its
    rendered character range (clipped to what the template shows; empty ones left out)."""
    lo, hi = chars
    out = []
    units = split_sentences(turn.text)
    for (a, b), segment in zip(units, unit_segments(turn.text, units), strict=True):
        ra, rb = max(origin + a, lo), min(origin + b, hi)
        if rb > ra:
            out.append((Sentence(turn.index, a, b, segment), (ra, rb)))
    return out


def make_layout(tokenizer, text: str, origins: list[int], turn_chars: list[tuple[int, int]],
                sentence_chars: list[tuple[int, int] | None]) -> Layout:
    """The layout of a whole rendered string (tokenised here)."""
    ids, offsets = tokenize(tokenizer, text)
    return Layout(text, ids, offsets, origins, turn_chars, sentence_chars)


def render_conversation(
    conversation: Conversation, tokenizer, *, upto: int | None = None
) -> RenderedConversation:
    """Render turns ``0..upto`` with the tokenizer's chat template and locate every turn exactly."""
    upto = len(conversation.turns) - 1 if upto is None else upto
    turns = conversation.turns[: upto + 1]
    messages = [chat_message(t) for t in turns]
    where = f"conversation {conversation.id}"
    segments: list[tuple[int, int]] = []
    origins: list[int] = []
    turn_chars: list[tuple[int, int]] = []
    prev = ""
    for i, turn in enumerate(turns):
        rendered = render_chat(tokenizer, messages[: i + 1])
        if not rendered.startswith(prev):
            raise InputError(
                f"{where}, turn {i}: the chat template does not render a conversation as the "
                "concatenation of its turns (the rendering of earlier turns changed when turn "
                f"{i} was added); mtcabench needs such a template to know each turn's tokens"
            )
        origin, chars = place_text(tokenizer, messages[: i + 1], i, turn.text, rendered,
                                   len(prev), where)
        segments.append((len(prev), len(rendered)))
        origins.append(origin)
        turn_chars.append(chars)
        prev = rendered
    sentences: list[Sentence] = []
    sentence_chars: list[tuple[int, int] | None] = []
    for turn in turns:
        for sentence, chars in turn_sentences(turn, origins[turn.index], turn_chars[turn.index]):
            sentences.append(sentence)
            sentence_chars.append(chars)
    full = make_layout(tokenizer, prev, origins, turn_chars, sentence_chars)
    return RenderedConversation(conversation, upto, sentences, segments, full, tokenizer)
