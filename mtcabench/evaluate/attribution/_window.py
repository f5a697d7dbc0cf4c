"""The context window of a span that ends past the model's context: earlier turns shortened.

A span is attributed against everything before it. When the conversation up to the span's end
passes the token limit (the model's context, or ``max_tokens``), :func:`fit_window` builds a
*windowed* copy of the conversation up to the span's turn that fits, deterministically:

- the system turn, the target turn, every turn's role, header and tool calls (call lines,
  arguments, call ids) are kept whole; only the *content* of earlier turns is shortened, and
  no turn is removed (turn indices, structural edges and the search are unchanged);
- first tool results are shortened, then, if still needed, the content of the other earlier
  user and assistant turns; each stage shortens the longest first (water-filling: every
  shortened turn keeps the same number of tokens, at least :data:`MIN_KEEP`), so that a long
  product catalogue loses text before a short answer does;
- a shortened turn keeps windows around the values the search traces by value (the target
  turn's value-like words, then the argument values of the calls made so far, latest call
  first) where they occur in it, then its head and its tail; each gap becomes one line ``[... N tokens left out ...]``
  saying how many tokens of the turn's own text it stands for;
- only as a last resort is a turn's content left out entirely (the marker stays): from every
  earlier turn shortened to :data:`MIN_KEEP` tokens, whole turns go, the longest first (the
  oldest of equals), as many as it takes;
- the result is rendered and measured, and shortened further until the target turn ends
  within the limit (with :data:`MARGIN` tokens to spare when a cut is made).

The window is made for the target *turn* (its whole text ends within the limit), so that
every span of the turn shares it and one set of passes; it depends on the conversation up to
that turn only. When even the system turn, the headers and the target turn alone do not fit,
there is no window: the caller skips the turn's spans with that reason.

**Shared windows** (:func:`plan_windows`; off by default: ``TraceSettings.window_room`` is 0,
a window per turn, because the room costs the windowed spans quality, docs/evaluate.md). A
window is fitted with *room*: its turn ends ``room`` tokens below the limit (a share of it), and the
assistant turns after it are read in the same window (its cuts, the turns from its own on
whole) until one ends past the limit; that one gets a window of its own, and so on. Every turn
of such a chain is read from one rendering, one set of passes, where a window per turn took a
set of passes each (the reason ``trace`` cost more than a plain pass on long conversations).
Which window a turn gets depends on the conversation up to that turn only: the chain runs over
every assistant turn past the limit, asked about or not, so the online Tracer asking about one
turn builds the same window as ``trace`` asking about all of them. When no window fits with
room, the turn's window is fitted without.

A :class:`Window` maps offsets between the original turns and the windowed ones, both ways:
queries are asked in the original coordinates and evidence is returned in them (a windowed
text's range that falls in a marker has no original and is dropped). Elided tokens have no
scores; a shortened turn keeps its remaining tokens' scores.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from mtcabench.evaluate.attribution._render import render_conversation, tokenize
from mtcabench.model import Conversation, Role

#: Tokens a shortened turn keeps at least, before turns are left out entirely.
MIN_KEEP = 64
#: Tokens to spare below the limit once something is cut (template tokens around a cut, the
#: marker's own tokens, a token merging across a cut).
MARGIN = 16
#: Context kept each side of a traced value's occurrence (tokens).
VALUE_CONTEXT = 16
#: Rendering rounds per stage before the next stage is tried (each round shortens more).
ROUNDS = 6
#: A text up to a span of at least this many times the limit in tokens, counted from its
#: characters alone as generously as can be (:func:`fewest_tokens`), gets no window: the
#: window would leave out nearly all of it, and tokenising it first costs what an
#: attribution does (a 6 MB tool result: 44 s and 1.8 GB). Real conversations are far below
#: (the generous count is about 1/40 of the real one).
WINDOW_FACTOR = 4
#: How many characters one token may cover at most, as a multiple of the model's longest
#: vocabulary entry: twice, for tokenizers whose normaliser shortens text (an accent stripped
#: from "e" + U+0301). Generous: a refusal from it must never be wrong.
TOKEN_SPAN_MARGIN = 2


def fewest_tokens(chars: int, longest_token: int) -> int:
    """The fewest tokens ``chars`` characters can be, for a vocabulary whose longest entry has
    ``longest_token`` characters (see :data:`TOKEN_SPAN_MARGIN`)."""
    return chars // (longest_token * TOKEN_SPAN_MARGIN)


def text_chars(conversation: Conversation, turn: int, end: int) -> int:
    """Characters of the turns' texts up to offset ``end`` of turn ``turn`` (blanks around
    each turn's text left out, as templates trim them)."""
    lengths = sum(len(t.text.strip()) for t in conversation.turns[:turn])
    text = conversation.turns[turn].text
    return lengths + max(0, end - (len(text) - len(text.lstrip())))


def beyond_any_window(chars: int, longest_token: int, limit: int) -> str | None:
    """The ``skipped`` reason of a span whose text up to it is ``chars`` characters when it is
    too long for any window (:data:`WINDOW_FACTOR`), else None."""
    least = fewest_tokens(chars, longest_token)
    if least < WINDOW_FACTOR * limit:
        return None
    return (f"too-long: the text up to the span is {chars:,} characters, at least {least:,} "
            f"tokens, more than {WINDOW_FACTOR} times the {limit}-token limit; a window would "
            "leave out nearly all of it")


def marker(tokens: int) -> str:
    """The line that stands for ``tokens`` left-out tokens of a turn's text."""
    return f"[... {tokens} tokens left out ...]"


@dataclass(frozen=True)
class TurnCut:
    """One shortened turn: which ranges of its original content were kept."""

    turn: int
    #: Ranges ``[a, b)`` of the original ``Turn.content`` kept, in order (empty: left out).
    kept: tuple[tuple[int, int], ...]
    #: The original content's length and tokens, and the tokens left out.
    length: int
    tokens: int
    tokens_left_out: int
    #: The windowed content (kept pieces joined by marker lines).
    content: str = ""
    #: Per kept range, where it starts in the windowed content.
    starts: tuple[int, ...] = ()

    @property
    def left_out(self) -> bool:
        return not self.kept


def _cut(turn: int, text: str, offsets: list[tuple[int, int]],
         keep_tokens: list[tuple[int, int]]) -> TurnCut:
    """The cut keeping token ranges ``keep_tokens`` (merged, in order) of ``text``."""
    merged: list[list[int]] = []
    for a, b in sorted(keep_tokens):
        if b <= a:
            continue
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    n = len(offsets)
    items: list[tuple[str, tuple[int, int] | None]] = []  # (text, original range or None)
    pos = left = 0
    for a, b in merged:
        if a > pos:
            items.append((marker(a - pos), None))
            left += a - pos
        ca = offsets[a][0] if a > 0 else 0
        cb = offsets[b - 1][1] if b < n else len(text)
        items.append((text[ca:cb], (ca, cb)))
        pos = b
    if pos < n:
        items.append((marker(n - pos), None))
        left += n - pos
    # A marker is a line of its own: a line break joins it to a kept piece on either side.
    out, kept, starts, length = [], [], [], 0
    for k, (piece, where) in enumerate(items):
        if k and (where is None or items[k - 1][1] is None):
            out.append("\n")
            length += 1
        if where is not None:
            kept.append(where)
            starts.append(length)
        out.append(piece)
        length += len(piece)
    return TurnCut(turn, tuple(kept), len(text), n, left, "".join(out), tuple(starts))


def choose_tokens(text: str, offsets: list[tuple[int, int]], budget: int,
                  values: list[str]) -> list[tuple[int, int]]:
    """Token ranges of ``text`` to keep within ``budget`` tokens: windows around the first
    occurrence of each traced value (in priority order, up to half the budget), then the head
    (two thirds of what is left) and the tail."""
    n = len(offsets)
    if budget >= n:
        return [(0, n)]
    if budget <= 0:
        return []
    ends = [e for _, e in offsets]
    keep: list[tuple[int, int]] = []
    used = 0
    for v in values:
        at = text.find(v)
        if at < 0:
            continue
        a = next(i for i, e in enumerate(ends) if e > at)
        b = next((i for i, (s, _) in enumerate(offsets) if s >= at + len(v)), n)
        a, b = max(0, a - VALUE_CONTEXT), min(n, b + VALUE_CONTEXT)
        if used + (b - a) > budget // 2:
            continue
        keep.append((a, b))
        used += b - a
    rest = budget - used
    head = (2 * rest + 2) // 3
    keep += [(0, head), (n - (rest - head), n)]
    return keep


#: A value-like word of an answer: something with a digit in it (an id, a price, a date).
_VALUE = re.compile(r"[\w$@+][\w$@+.:/-]*\d[\w$@+.:/-]*")


def traced_values(conversation: Conversation, target: int) -> list[str]:
    """The texts a shortened turn keeps windows around, in order: the value-like words of the
    target turn (an id, a price, a date: any word with a digit, as the spans a benchmark asks
    about usually are), then each call's argument values (latest call first), strings as
    written and other values as JSON. Ones under 3 characters say nothing and are left out.
    They depend on the target turn only, so that every span of a turn shares its window."""
    turns = conversation.turns[: target + 1]
    out = [m.group().rstrip(".:/-") for m in _VALUE.finditer(turns[target].text)]
    for t in reversed(turns):
        for call in t.tool_calls:
            for v in call.arguments.values():
                out.append(v if isinstance(v, str) else json.dumps(v, ensure_ascii=False))
    seen: set[str] = set()
    return [v for v in out if len(v) >= 3 and not (v in seen or seen.add(v))]


@dataclass
class Window:
    """A conversation up to a target turn, with some earlier turns' content shortened."""

    original: Conversation
    conversation: Conversation  # the windowed copy, turns 0..target
    target: int
    limit: int
    #: Where the span ended (tokens) before windowing, and after.
    end_before: int
    end_after: int
    cuts: dict[int, TurnCut] = field(default_factory=dict)
    #: The turn the window was fitted for (``target`` itself, or an earlier turn whose window
    #: this turn shares: see :func:`plan_windows`), and the room asked (tokens; a window that
    #: fits with none was fitted without).
    anchor: int = -1
    room: int = 0

    def __post_init__(self):
        if self.anchor < 0:
            self.anchor = self.target

    def to_window(self, turn: int, start: int, end: int) -> tuple[int, int]:
        """Windowed ``Turn.text`` range of an original range (a bound inside a left-out gap
        moves to the gap's marker, so the whole content maps to the whole windowed one)."""
        cut = self.cuts.get(turn)
        if cut is None:
            return start, end
        return self._to(cut, start, True), self._to(cut, end, False)

    @staticmethod
    def _to(cut: TurnCut, x: int, is_start: bool) -> int:
        if x >= cut.length:  # the call lines after the content: shifted
            return x - cut.length + len(cut.content)
        prev_end = 0
        for (a, b), s in zip(cut.kept, cut.starts, strict=True):
            if x < a:  # in the gap before this piece: its marker
                return prev_end if is_start else s
            if x <= b:
                return s + (x - a)
            prev_end = s + (b - a)
        return prev_end if is_start else len(cut.content)

    def from_window(self, turn: int, start: int, end: int) -> tuple[int, int] | None:
        """The original range of a windowed ``Turn.text`` range (evidence): the kept piece it
        overlaps most, clipped to it; None when it lies in markers only."""
        cut = self.cuts.get(turn)
        if cut is None:
            return start, end
        pieces = [(s, s + (b - a), a) for (a, b), s in zip(cut.kept, cut.starts, strict=True)]
        total = len(self.conversation.turns[turn].text)
        pieces.append((len(cut.content), total, cut.length))  # the call lines
        best, size = None, 0
        for s, e, a in pieces:
            lo, hi = max(start, s), min(end, e)
            if hi - lo > size:
                best, size = (lo - s + a, hi - s + a), hi - lo
        return best

    def report(self) -> dict:
        """The submission's ``window`` (see :class:`mtcabench.model.ContextWindow`)."""
        return {"limit": self.limit, "end_token": self.end_before,
                "turns": [{"turn": c.turn, "tokens": c.tokens,
                           "tokens_left_out": c.tokens_left_out, "left_out": c.left_out}
                          for c in sorted(self.cuts.values(), key=lambda c: c.turn)]}

    def policy(self) -> dict:
        """How the window was chosen (a study's stored window: what tells a window of another
        policy, to be computed again, from one of this one)."""
        return {"anchor": self.anchor, "room": self.room}

    def shared_by(self, turn: int, end_before: int, end_after: int) -> Window:
        """This window (same cuts) read for a later ``turn``: the turns after the anchor are
        whole; ``end_before``/``end_after``: where ``turn`` ends unwindowed and in it."""
        return Window(self.original, _windowed(self.original, turn, self.cuts), turn,
                      self.limit, end_before, end_after, self.cuts, self.anchor, self.room)


@dataclass(frozen=True)
class NoWindow:
    """Why no window fits: even the kept turns end past the limit."""

    end_token: int

    def reason(self, limit: int) -> str:
        return (f"too-long: even with the content of every earlier turn but the system turn "
                f"left out, the span's turn ends at token {self.end_token}, beyond the "
                f"{limit}-token limit (the system turn, the turn headers and the span's own "
                "turn alone do not fit)")


def _windowed(conversation: Conversation, target: int, cuts: dict[int, TurnCut]) -> Conversation:
    turns = [t.model_copy(update={"content": cuts[t.index].content}) if t.index in cuts else t
             for t in conversation.turns[: target + 1]]
    return conversation.model_copy(update={"turns": turns})


def _turn_end(conversation: Conversation, tokenizer, target: int) -> int:
    return render_conversation(conversation, tokenizer, upto=target).full.turn_tokens(target)[1]


def _cap(sizes: dict[int, int], need: int, floor: int) -> int | None:
    """The largest per-turn cap (>= floor) that takes at least ``need`` tokens off ``sizes``
    (None when even the floor does not)."""
    def taken(cap: int) -> int:
        return sum(max(0, n - cap) for n in sizes.values())
    if taken(floor) < need:
        return None
    lo, hi = floor, max(sizes.values(), default=floor)
    while lo < hi:  # largest cap with taken(cap) >= need
        mid = (lo + hi + 1) // 2
        if taken(mid) >= need:
            lo = mid
        else:
            hi = mid - 1
    return lo


def fit_window(conversation: Conversation, target: int, tokenizer, limit: int,
               end_before: int, room: int = 0) -> Window | NoWindow:
    """A window in which turn ``target``'s text ends within ``limit - room`` tokens (see the
    module docstring), so that every span of the turn fits and later turns may share it;
    ``end_before``: where the turn's text ends unwindowed. When none fits with ``room``, the
    window fitted without. It depends on the conversation up to the turn only (the online
    Tracer and ``trace`` build the same one)."""
    got = _fit(conversation, target, tokenizer, limit - room, end_before) if room > 0 else None
    if not isinstance(got, Window):
        got = _fit(conversation, target, tokenizer, limit, end_before)
    if isinstance(got, Window):
        got.limit, got.room = limit, room
    return got


def plan_windows(conversation: Conversation, ends: dict[int, int], tokenizer, limit: int,
                 room: int) -> dict[int, Window | NoWindow]:
    """The window of each turn of ``ends`` (turn: where its text ends unwindowed, past
    ``limit``). With ``room`` (tokens), ``ends`` holds every assistant turn past the limit up
    to the last one asked about, and the module docstring's *shared windows* apply: a turn is
    read in the window of the chain's last anchor when it ends within the limit there, else it
    is an anchor, with a window fitted with ``room``. Without room, a window per turn."""
    if room <= 0:  # no room, no sharing: a window per turn, fitted to the limit
        return {turn: fit_window(conversation, turn, tokenizer, limit, end)
                for turn, end in ends.items()}
    out: dict[int, Window | NoWindow] = {}
    current: Window | None = None
    shared_ends: dict[int, int] = {}  # where each later turn ends in the current window
    last = max(ends, default=-1)
    for turn in sorted(ends):
        if current is not None and shared_ends.get(turn, limit + 1) <= limit:
            out[turn] = current.shared_by(turn, ends[turn], shared_ends[turn])
            continue
        got = fit_window(conversation, turn, tokenizer, limit, ends[turn], room)
        out[turn] = got
        current = got if isinstance(got, Window) else None
        if current is not None and turn < last:
            # One rendering of the window up to the last turn gives every later turn's end (a
            # rendering's prefix is that of a shorter one: the model reads it causally).
            wide = _windowed(conversation, last, current.cuts)
            full = render_conversation(wide, tokenizer, upto=last).full
            shared_ends = {t: full.turn_tokens(t)[1] for t in ends if t > turn}
    return out


def _fit(conversation: Conversation, target: int, tokenizer, limit: int,
         end_before: int) -> Window | NoWindow:
    """The window of :func:`fit_window` for a turn ending within ``limit``."""
    turns = conversation.turns[:target]
    values = traced_values(conversation, target)
    encoded = {t.index: tokenize(tokenizer, t.content) for t in turns if t.content}
    sizes_all = {i: len(ids) for i, (ids, _) in encoded.items()}
    tools = [i for i in sizes_all if turns[i].role is Role.TOOL]
    others = [i for i in sizes_all if turns[i].role in (Role.USER, Role.ASSISTANT)]

    def cut_to(caps: dict[int, int]) -> dict[int, TurnCut]:
        cuts = {}
        for i, cap in caps.items():
            if sizes_all[i] > cap:
                text = conversation.turns[i].content
                offsets = [tuple(o) for o in encoded[i][1].tolist()]
                cuts[i] = _cut(i, text, offsets, choose_tokens(text, offsets, cap, values))
        return cuts

    def attempt(cuts: dict[int, TurnCut]) -> Window | int:
        windowed = _windowed(conversation, target, cuts)
        end = _turn_end(windowed, tokenizer, target)
        if end <= limit:
            return Window(conversation, windowed, target, limit, end_before, end, cuts)
        return end

    need = end_before - (limit - MARGIN)
    # Stages 1 and 2: shorten (tool results; then every earlier user and assistant turn too),
    # the longest first, each keeping at least MIN_KEEP tokens.
    for candidates in (tools, tools + others):
        sizes = {i: sizes_all[i] for i in candidates}
        for _ in range(ROUNDS):
            cap = _cap(sizes, need, MIN_KEEP)
            if cap is None:
                break
            got = attempt(cut_to(dict.fromkeys(sizes, cap)))
            if isinstance(got, Window):
                return got
            need += got - limit + MARGIN
    # Stage 3, the last resort: from everything shortened to MIN_KEEP, leave whole turns out,
    # the longest first (the oldest of equals), as many as it takes.
    caps = dict.fromkeys(tools + others, MIN_KEEP)
    order = sorted(caps, key=lambda i: (-min(sizes_all[i], MIN_KEEP), i))
    left = 0
    while left < len(order):
        got = attempt(cut_to(caps))
        if isinstance(got, Window):
            return got
        # Leave out enough more turns for what is still over (an estimate: a left-out turn
        # saves its kept tokens less its marker's), at least one.
        over = got - limit + MARGIN
        while left < len(order) and over > 0:
            i = order[left]
            over -= max(1, min(sizes_all[i], MIN_KEEP) - len(marker(sizes_all[i])) // 3)
            caps[i] = 0
            left += 1
    got = attempt(cut_to(caps))
    if isinstance(got, Window):
        return got
    # Every earlier turn's content left out (the system turn, the target turn and the headers
    # stay): if that does not fit, nothing sensible does.
    return NoWindow(got)
