"""Messages of any format read one at a time, as an agent produces them (the online Tracer).

Each message's format is told from its own shape: a list, or an object with a Responses item
``type`` (``function_call_output``...), is Responses items; an object with ``parts`` a GenAI
message; one with Anthropic blocks (``tool_use``, ``tool_result``, ``thinking``) an
Anthropic message; one whose ``tool_calls`` name their function as text, or with
``reasoning`` content, an Inspect message; anything else an OpenAI chat message. Plain text
messages read alike in every format. One message may give several turns (an Anthropic user
message with two ``tool_result`` blocks) or none (reasoning only). A Responses model
response's items are given together (``add(response.output)``), since they are one turn.
"""

from __future__ import annotations

from typing import Any

from mtcabench.errors import InputError
from mtcabench.model import Role, Turn
from mtcabench.transcripts import _anthropic, _chat, _inspect, _otel, _responses
from mtcabench.transcripts._turns import TurnBuilder


def _is_inspect(message: dict) -> bool:
    calls = message.get("tool_calls")
    content = message.get("content")
    return (isinstance(calls, list) and any(isinstance(c, dict) and isinstance(
        c.get("function"), str) for c in calls)) or (isinstance(content, list) and any(
            isinstance(p, dict) and p.get("type") == "reasoning" for p in content))


def _is_item(message: dict) -> bool:
    kind = message.get("type")
    return isinstance(kind, str) and not _anthropic.is_message(message)


def read_any(builder: TurnBuilder, message: Any, here: str) -> list[Turn]:
    """Add the turns of one message (or a list of Responses items) of any format."""
    if isinstance(message, list) or (isinstance(message, dict) and _is_item(message)):
        items = message if isinstance(message, list) else [message]
        pairs = [(f"{here}, item {k}" if isinstance(message, list) else here, i)
                 for k, i in enumerate(items)]
        if (items and _responses.is_response_item(items[0])
                and builder.last_role is Role.ASSISTANT):
            raise InputError(f"{here}: a model response's item after a model response; add "
                             "the output items of one response together (add(response.output))")
        return _responses.read_items(builder, pairs)
    if not isinstance(message, dict):
        raise InputError(f"{here}: expected a message object or a list of Responses items, got "
                         f"{type(message).__name__}")
    if "parts" in message:
        return _otel.read_message(builder, message, here)
    if _anthropic.is_message(message):
        return _anthropic.read_message(builder, message, here)
    if _is_inspect(message):
        return _inspect.read_message(builder, message, here)
    return [_chat.read_message(builder, message, here)]


class LiveReader:
    """Turns read so far from messages of any format; :meth:`read` converts without
    recording, :meth:`append` then accepts each turn (once the model has processed it)."""

    def __init__(self, where: str = "messages"):
        self._builder = TurnBuilder(where)
        self._messages = 0

    @property
    def turns(self) -> list[Turn]:
        return self._builder.turns

    def read(self, message: Any) -> list[Turn]:
        """The turns ``message`` gives as the next ones (nothing is recorded)."""
        here = f"{self._builder.where}, message {self._messages}"
        return self._builder.read_ahead(lambda b: read_any(b, message, here))

    def append(self, turn: Turn) -> None:
        """Accept ``turn`` (from :meth:`read`) as the next turn."""
        self._builder.append(turn)

    def done(self) -> None:
        """Count one message as added (it names messages in errors)."""
        self._messages += 1

    def add(self, message: Any) -> list[Turn]:
        """Read ``message`` and accept its turns."""
        turns = self.read(message)
        for t in turns:
            self.append(t)
        self.done()
        return turns
