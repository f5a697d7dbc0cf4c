"""Which spans to explain: given text or offsets, the last answer, or the values of a turn."""

from __future__ import annotations

from mtcabench.errors import InputError, UsageError
from mtcabench.model import Conversation, TargetSpan
from mtcabench.transcripts import last_answer, target_span


def value_targets(conversation: Conversation, turn: int) -> list[TargetSpan]:
    """Every id-, date- and amount-like value of assistant turn ``turn``, as the lineage
    annotator finds them (its target spans in that turn: values known from earlier turns,
    derived amounts, decidable contradictions), in text order. The annotator's multi-source
    clause spans are left out: a clause is made of values of this list, not a value itself."""
    from mtcabench.lineage import propose_conversation  # the annotate stage: on use

    target_span(conversation, turn)  # an assistant turn of the conversation
    spans = {(c.span.start, c.span.end): c.span
             for c in propose_conversation(conversation) if c.span.turn == turn}
    # A span holding another span of the turn is a clause of values (lineage-v2), not a value.
    spans = {k: v for k, v in spans.items()
             if not any(o != k and k[0] <= o[0] and o[1] <= k[1] for o in spans)}
    if not spans:
        raise InputError(f"conversation {conversation.id}, turn {turn}: no id-, date- or "
                         "amount-like value that an earlier turn holds (the lineage annotator's "
                         "values); give --span TEXT or --start/--end instead")
    return [spans[k] for k in sorted(spans)]


def resolve_targets(
    conversation: Conversation,
    *,
    turn: int | None = None,
    span: str | None = None,
    start: int | None = None,
    end: int | None = None,
    values: bool = False,
) -> list[TargetSpan]:
    """The spans a command asks for (``--turn``, ``--span``, ``--start/--end``, ``--values``).
    Without ``--turn``, the last assistant turn with content: its whole content, or the
    ``--span``/``--start/--end`` given in it. Options that do not go together are a
    :class:`UsageError` (exit code 2)."""
    if span is not None and (start is not None or end is not None):
        raise UsageError("give --span TEXT or --start/--end, not both")
    if (start is None) != (end is None):
        raise UsageError("--start and --end go together (offsets into the turn's text)")
    if values and (span is not None or start is not None):
        raise UsageError("--values explains every value of the turn; leave out --span and "
                         "--start/--end")
    turn = last_answer(conversation) if turn is None else turn
    if values:
        return value_targets(conversation, turn)
    return [target_span(conversation, turn, span if start is None else (start, end))]
