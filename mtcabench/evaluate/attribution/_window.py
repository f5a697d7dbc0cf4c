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
- a shortened turn keeps windows around the values the search traces by value (the span's own
  text, then the argument values of the calls made so far, latest call first) where they occur
  in it, then its head and its tail; each gap becomes one line ``[... N tokens left out ...]``
  saying how many tokens of the turn's own text it stands for;
- only as a last resort is a turn's content left out entirely (the marker stays);
- the result is rendered and measured, and shortened further until the span ends within the
  limit (with :data:`MARGIN` tokens to spare when a cut is made).

When even the system turn, the headers and the target turn alone do not fit, there is no
window: the caller skips the span with that reason.

A :class:`Window` maps offsets between the original turns and the windowed ones, both ways:
queries are asked in the original coordinates and evidence is returned in them (a windowed
text's range that falls in a marker has no original and is dropped). Elided tokens have no
scores; a shortened turn keeps its remaining tokens' scores.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from mtcabench.evaluate.attribution._render import render_conversation, tokenize
from mtcabench.model import Conversation, Role, TargetSpan

#: Tokens a shortened turn keeps at least, before turns are left out entirely.
MIN_KEEP = 64
#: Tokens to spare below the limit once something is cut (template tokens around a cut, the
#: marker's own tokens, a token merging across a cut).
MARGIN = 16
#: Context kept each side of a traced value's occurrence (tokens).
VALUE_CONTEXT = 16
#: Rendering rounds per stage before the next stage is tried (each round shortens more).
ROUNDS = 6


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
    pieces, kept, starts, pos, out_len = [], [], [], 0, 0

    def gap(tokens: int) -> None:
        nonlocal out_len
        line = marker(tokens)
        sep = "\n" if pieces else ""
        pieces.append(f"{sep}{line}\n")
        out_len += len(sep) + len(line) + 1

    left = 0
    for a, b in merged:
        if a > pos:
            gap(a - pos)
            left += a - pos
        ca = offsets[a][0] if a > 0 else 0
        cb = offsets[b - 1][1] if b < n else len(text)
        kept.append((ca, cb))
        starts.append(out_len)
        pieces.append(text[ca:cb])
        out_len += cb - ca
        pos = b
    if pos < n:
        gap(n - pos)
        left += n - pos
    return TurnCut(turn, tuple(kept), len(text), n, left, "".join(pieces), tuple(starts))


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


def traced_values(conversation: Conversation, span: TargetSpan) -> list[str]:
    """The texts a search traces by value, in the order a shortened turn keeps them: the
    span's text, then each call's argument values (latest call first), strings as written
    and other values as JSON; ones under 2 characters say nothing and are left out."""
    out = [span.text.strip()]
    for t in reversed(conversation.turns[: span.turn + 1]):
        for call in t.tool_calls:
            for v in call.arguments.values():
                out.append(v if isinstance(v, str) else json.dumps(v, ensure_ascii=False))
    seen: set[str] = set()
    return [v for v in out if len(v) >= 2 and not (v in seen or seen.add(v))]


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


@dataclass(frozen=True)
class NoWindow:
    """Why no window fits: even the kept turns end past the limit."""

    end_token: int

    def reason(self, limit: int) -> str:
        return (f"too-long: even with the content of every earlier turn but the system turn "
                f"left out, the span ends at token {self.end_token}, beyond the {limit}-token "
                "limit (the system turn, the turn headers and the target turn alone do not fit)")


def _windowed(conversation: Conversation, target: int, cuts: dict[int, TurnCut]) -> Conversation:
    turns = [t.model_copy(update={"content": cuts[t.index].content}) if t.index in cuts else t
             for t in conversation.turns[: target + 1]]
    return conversation.model_copy(update={"turns": turns})


def _span_end(conversation: Conversation, tokenizer, spans: list[TargetSpan]) -> int:
    rendered = render_conversation(conversation, tokenizer, upto=spans[0].turn)
    return max(rendered.full.span_tokens(s.turn, s.start, s.end)[1] for s in spans)


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


def fit_window(conversation: Conversation, spans: list[TargetSpan], tokenizer, limit: int,
               end_before: int) -> Window | NoWindow:
    """A window in which every span of ``spans`` (all in one turn) ends within ``limit``
    tokens (see the module docstring); ``end_before``: where they end unwindowed."""
    target = spans[0].turn
    turns = conversation.turns[:target]
    values = traced_values(conversation, spans[0])
    for s in spans[1:]:
        values = [s.text.strip(), *values] if len(s.text.strip()) >= 2 else values
    encoded = {t.index: tokenize(tokenizer, t.content) for t in turns if t.content}
    sizes_all = {i: len(ids) for i, (ids, _) in encoded.items()}
    tools = [t.index for t in turns if t.role is Role.TOOL]
    others = [t.index for t in turns if t.role in (Role.USER, Role.ASSISTANT)]
    stages = [(tools, MIN_KEEP), (tools + others, MIN_KEEP), (tools + others, 0)]
    need = end_before - (limit - MARGIN)
    end = end_before
    for candidates, floor in stages:
        sizes = {i: sizes_all[i] for i in candidates if i in sizes_all}
        for _ in range(ROUNDS):
            cap = _cap(sizes, need, floor)
            if cap is None:
                if floor > 0:
                    break
                cap = 0  # the last resort: every candidate's content left out
            cuts = {}
            for i, n in sizes.items():
                if n > cap:
                    ids, offsets = encoded[i]
                    text = conversation.turns[i].content
                    keep = choose_tokens(text, [tuple(o) for o in offsets.tolist()], cap, values)
                    cuts[i] = _cut(i, text, [tuple(o) for o in offsets.tolist()], keep)
            windowed = _windowed(conversation, target, cuts)
            end = _span_end(windowed, tokenizer, spans)
            if end <= limit:
                return Window(conversation, windowed, target, limit, end_before, end, cuts)
            if cap == 0:
                break
            need += end - limit + MARGIN
    # Every earlier turn's content left out (the system turn, the target turn and the headers
    # stay): if that does not fit, nothing sensible does.
    return NoWindow(end)
