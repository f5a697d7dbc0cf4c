"""The one mapping from agent-log messages to turns: every format's reader builds through it.

A :class:`TurnBuilder` holds the turns read so far and the tool calls they issued. Readers
call :meth:`~TurnBuilder.system`, :meth:`~TurnBuilder.user`, :meth:`~TurnBuilder.assistant`
and :meth:`~TurnBuilder.tool` in the order the log gives; the rules that must not differ
between formats are kept here: a tool result answers a call issued earlier, by the assistant
or by a user with tools of their own (the latest call with its id: upstream logs reuse
ids), it is named after that call's tool, call
arguments are a JSON object (or a string holding one), and parts are joined as
:mod:`mtcabench.openai_content` joins them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from pydantic import ValidationError

from mtcabench.errors import InputError
from mtcabench.io import JSONError, format_validation_error, loads, non_finite
from mtcabench.model import MAX_TRIAL, Conversation, Role, ToolCall, Turn
from mtcabench.openai_content import PLACEHOLDERS, SEPARATOR

T = TypeVar("T")

#: Placeholders of parts that carry no text, by modality (the chat reader's, reused).
IMAGE, AUDIO, FILE = PLACEHOLDERS["image"], PLACEHOLDERS["audio"], PLACEHOLDERS["file"]


def name_of(value: Any) -> str | None:
    """A role or type as given, when it is text (anything else matches nothing)."""
    return value if isinstance(value, str) else None


def as_text(value: Any) -> str:
    """A tool result or content value as a turn's text: text as it is, anything else as
    JSON (non-ASCII kept)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def checked_name(rule: Callable[[Any], Any], value: Any, where: str) -> Any:
    """``value`` by the name rule (:func:`mtcabench.model.domain_name`, ``agent_model_name``,
    ``source_name``: normalised), or one InputError naming where it came from. Readers call it
    before a name goes into an id, so that the id holds the normalised name."""
    try:
        return rule(value)
    except ValueError as exc:
        raise InputError(f"{where}: {exc}") from None


def trial_number(value: Any, where: str) -> int | None:
    """A run's trial as a bounded whole number (None stays None): an int, or a string of
    ASCII digits, 0 to :data:`~mtcabench.model.MAX_TRIAL` (the release's int32 column); any
    other value is one InputError naming ``where``. Digits are counted before they are
    converted: a 5,000-digit string is refused, not handed to ``int``."""
    if value is None:
        return None
    digits = None
    if isinstance(value, int) and not isinstance(value, bool):
        digits = value if value >= 0 else None
    elif isinstance(value, str) and value.isascii() and value.isdigit():
        digits = int(value) if len(value) <= 12 else MAX_TRIAL + 1
    if digits is None:
        raise InputError(f"{where}: 'trial' is {_brief(value)}, expected a whole number "
                         "(0 or more)")
    if digits > MAX_TRIAL:
        raise InputError(f"{where}: 'trial' is {_brief(value)}, more than {MAX_TRIAL:,} (the "
                         "largest trial number a release holds); is the field right?")
    return digits


def _brief(value: Any) -> str:
    """A value inside a message: a long number or text by its first digits and its length."""
    if isinstance(value, int) and not isinstance(value, bool):
        # str() of a number past 4,300 digits raises: say its size instead
        bits = value.bit_length()
        return str(value) if bits <= 80 else f"a number of about {int(bits * 0.30103) + 1} digits"
    text = str(value) if not isinstance(value, str) else value
    shown = text if len(text) <= 40 else text[:37] + "..."
    return shown if shown.isprintable() else repr(shown)


def join_parts(texts: Iterable[str]) -> str:
    """Text parts of one message as one text, joined as ingest joins chat content parts."""
    return SEPARATOR.join(texts)


def call_arguments(raw: Any, here: str) -> dict[str, Any]:
    """A call's arguments: a JSON object, or a string holding one (empty: no arguments)."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    given = raw  # a JSON text is checked by loads; a Python value is walked below
    if isinstance(raw, str):
        try:
            raw = loads(raw)
        except JSONError as exc:
            raise InputError(f"{here}: arguments are not JSON ({exc.reason}); expected a JSON "
                             "object as a string") from None
    if not isinstance(raw, dict):
        raise InputError(f"{here}: arguments are a {type(raw).__name__}; expected a JSON object")
    if given is raw and (at := non_finite(raw, "arguments")) is not None:  # a Python value
        raise InputError(f"{here}: {at} is NaN or infinite, a number JSON cannot carry (it "
                         "would be written as null); give it as a string or a finite number")
    return raw


class CallList(list):
    """The calls of one model response as a reader collects them, with the set of their ids:
    a response with thousands of parallel calls is checked for a reused id in linear time
    (a scan of the list per call was quadratic)."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()

    def append(self, call: ToolCall) -> None:
        super().append(call)
        self.ids.add(call.id)


def tool_call(call_id: Any, name: Any, arguments: Any, here: str,
              issued: Sequence[ToolCall] = ()) -> ToolCall:
    """One tool call of a model response; ``issued``: the calls of the same response so far
    (a :class:`CallList`, whose ids are looked up, not scanned)."""
    if not isinstance(name, str) or not name:
        raise InputError(f"{here}: a tool call without a tool name")
    if not isinstance(call_id, str) or not call_id:
        raise InputError(f"{here} ({name}): has no id; tool results name the call they answer "
                         "by its id")
    if (call_id in issued.ids if isinstance(issued, CallList)
            else any(c.id == call_id for c in issued)):
        raise InputError(f"{here}: call id {call_id!r} used twice in one message; each parallel "
                         "call needs its own id")
    return ToolCall(id=call_id, name=name, arguments=call_arguments(arguments, here))


def _texts(turn: Turn) -> Iterable[tuple[str, str]]:
    """(what, text) of every text of a turn: its content, names, ids and call arguments."""
    yield "content", turn.content
    yield "name", turn.name or ""
    yield "tool_call_id", turn.tool_call_id or ""
    for call in turn.tool_calls:
        yield f"call {call.id[:40]!r}", call.id + call.name
        yield f"the arguments of call {call.id[:40]!r}", json.dumps(call.arguments,
                                                                    ensure_ascii=False)


def check_text(turn: Turn, here: str) -> None:
    """Refuse (InputError at ``here``) a turn whose text holds a lone surrogate: half of a
    UTF-16 pair, no character (a Python string cut inside an emoji, or decoded from bytes that
    are not UTF-8). A tokenizer fails on it with a TypeError; files never give one (the JSON
    reader refuses the escape), Python values can. The one check of text entering as
    messages: every reader's turns (through :class:`TurnBuilder`, live ones included) and a
    conversation given as it is (the explainer's input)."""
    for what, text in _texts(turn):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InputError(f"{here}: a lone surrogate {text[exc.start]!r} in its {what} at "
                             f"character {exc.start}: half of a UTF-16 pair is no character "
                             "(was the text cut inside an emoji?); remove it or give the "
                             "whole character") from None


class TurnBuilder:
    """Turns read so far, in order, and the calls they issued (see the module docstring)."""

    def __init__(self, where: str):
        self.where = where
        self.turns: list[Turn] = []
        # call id -> (tool name, role of the turn that issued it, answered since), the latest
        # issue wins
        self._calls: dict[str, tuple[str, Role, bool]] = {}
        self._journal: list[tuple[str, tuple[str, Role, bool] | None]] | None = None  # undo log

    def copy(self) -> TurnBuilder:
        """A builder in the same state, to read ahead without changing this one."""
        other = TurnBuilder(self.where)
        other.turns = list(self.turns)
        other._calls = dict(self._calls)
        return other

    def read_ahead(self, read: Callable[[TurnBuilder], T]) -> T:
        """``read(self)``, then every turn and call it added undone: what :meth:`copy` gives,
        in time proportional to what was read, not to the turns so far (a long session read
        message by message would copy its whole history each time)."""
        n, self._journal = len(self.turns), []
        journal = self._journal
        try:
            return read(self)
        finally:
            self._journal = None
            del self.turns[n:]
            for call_id, old in reversed(journal):
                if old is None:
                    self._calls.pop(call_id, None)
                else:
                    self._calls[call_id] = old

    @property
    def last_role(self) -> Role | None:
        return self.turns[-1].role if self.turns else None

    def _turn(self, here: str, **fields: Any) -> Turn:
        try:
            turn = Turn(index=len(self.turns), **fields)
        except ValidationError as exc:
            raise InputError(f"{here}: {format_validation_error(exc)}") from None
        check_text(turn, here)
        self.append(turn)
        return turn

    def append(self, turn: Turn) -> None:
        """Accept ``turn`` (made by another builder in this state) as the next turn."""
        if turn.index != len(self.turns):
            raise ValueError(f"turn {turn.index} appended as turn {len(self.turns)}")
        self.turns.append(turn)
        for call in turn.tool_calls:
            self._set_call(call.id, (call.name, turn.role, False))
        if turn.role is Role.TOOL and (issued := self._calls.get(turn.tool_call_id or "")):
            self._set_call(turn.tool_call_id, (issued[0], issued[1], True))

    def _set_call(self, call_id: str, state: tuple[str, Role, bool]) -> None:
        if self._journal is not None:
            self._journal.append((call_id, self._calls.get(call_id)))
        self._calls[call_id] = state

    def caller(self, call_id: str) -> Role | None:
        """The role of the turn that issued the latest call ``call_id`` (None: no turn did)."""
        issued = self._calls.get(call_id)
        return issued[1] if issued else None

    def is_open(self, call_id: str) -> bool:
        """Whether the latest call ``call_id`` was issued and not answered since."""
        issued = self._calls.get(call_id)
        return issued is not None and not issued[2]

    def system(self, text: str, here: str) -> Turn:
        return self._turn(here, role=Role.SYSTEM, content=text)

    def user(self, text: str, here: str, calls: Sequence[ToolCall] = ()) -> Turn:
        """A user turn; ``calls``: the tools the user called (a user with tools of their own,
        as in tau2-bench's telecom domain)."""
        return self._turn(here, role=Role.USER, content=text, tool_calls=list(calls))

    def assistant(self, text: str, calls: Sequence[ToolCall], here: str) -> Turn:
        return self._turn(here, role=Role.ASSISTANT, content=text, tool_calls=list(calls))

    def tool(self, call_id: Any, text: str, here: str, *, fix: str) -> Turn:
        """A tool result answering ``call_id``; ``fix`` says how to repair a wrong id in this
        format (e.g. "fix its tool_call_id")."""
        if not isinstance(call_id, str) or not call_id:
            raise InputError(f"{here}: a tool result without the id of the call it answers; "
                             f"{fix}")
        if call_id not in self._calls:
            issued = ", ".join(list(self._calls)[-5:]) or "none"
            raise InputError(
                f"{here}: tool result answers call {call_id!r}, which no earlier turn issued "
                f"(latest call ids: {issued}); {fix} or put the call before it")
        return self._turn(here, role=Role.TOOL, content=text, tool_call_id=call_id,
                          name=self._calls[call_id][0])

    def unanswered(self) -> list[str]:
        """Ids of calls issued and not answered since, in the order issued (an id may be
        reused once its call is answered)."""
        pending: dict[str, None] = {}
        for t in self.turns:
            for c in t.tool_calls:
                pending.pop(c.id, None)
                pending[c.id] = None
            if t.role is Role.TOOL:
                pending.pop(t.tool_call_id or "", None)
        return list(pending)

    def conversation(self, *, id: str, source: str, domain: str, **fields: Any) -> Conversation:
        """The conversation of the turns read (at least one)."""
        if not self.turns:
            raise InputError(f"{self.where}: no messages; a conversation needs at least one")
        try:
            return Conversation(id=id, source=source, domain=domain, turns=self.turns, **fields)
        except ValidationError as exc:
            raise InputError(f"{self.where} ({id}): {format_validation_error(exc)}") from None
