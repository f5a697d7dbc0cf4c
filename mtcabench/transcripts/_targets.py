"""Target spans in a read conversation: the last answer, or a span given as text or offsets."""

from __future__ import annotations

from mtcabench.errors import InputError
from mtcabench.model import Conversation, Role, TargetSpan


def last_answer(conversation: Conversation) -> int:
    """The last assistant turn with content: what is explained unless told otherwise."""
    for t in reversed(conversation.turns):
        if t.role is Role.ASSISTANT and t.content.strip():
            return t.index
    raise InputError(f"conversation {conversation.id}: no assistant turn with content to "
                     "explain; name one with --turn")


def target_span(
    conversation: Conversation, turn: int, span: str | tuple[int, int] | TargetSpan | None = None,
) -> TargetSpan:
    """A target span in assistant turn ``turn``: ``span`` as text (its first occurrence in
    ``Turn.text``), as ``(start, end)`` offsets into ``Turn.text``, or as a TargetSpan; None:
    the turn's whole content (its whole text where it has only tool calls)."""
    where = f"conversation {conversation.id}"
    if not 0 <= turn < len(conversation.turns):
        raise InputError(f"{where}: no turn {turn} (it has {len(conversation.turns)} turns, "
                         "numbered from 0)")
    t = conversation.turns[turn]
    if t.role is not Role.ASSISTANT:
        raise InputError(f"{where}: turn {turn} is a {t.role.value} turn; only assistant turns "
                         "are explained (their text is what the model wrote)")
    text = t.text
    if isinstance(span, TargetSpan):
        if span.turn != turn:
            raise InputError(f"{where}: the span is in turn {span.turn}, not {turn}")
        start, end = span.start, span.end
    elif isinstance(span, str):
        if not span:
            raise InputError(f"{where}: an empty span text")
        start = text.find(span)
        if start < 0:
            # A bounded excerpt of both: a span may be any length (100 KB made a 100 KB line).
            raise InputError(f"{where}: {_excerpt(span)!r} does not occur in turn {turn} "
                             f"({_excerpt(text)!r})")
        end = start + len(span)
    elif span is None:
        start, end = (0, len(t.content)) if t.content.strip() else (0, len(text))
    else:
        start, end = span
    if not 0 <= start < end <= len(text):
        raise InputError(f"{where}: span {start}-{end} is not inside turn {turn}'s text "
                         f"(0-{len(text)}, start before end)")
    if isinstance(span, TargetSpan) and span.text != text[start:end]:
        raise InputError(f"{where}: span text {_excerpt(span.text)!r} is not at {start}:{end} "
                         f"of turn {turn}")
    return TargetSpan(turn=turn, start=start, end=end, text=text[start:end])


def _excerpt(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "\u2026"
