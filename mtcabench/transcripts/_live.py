"""Messages of any format read one at a time, as an agent produces them (the online Tracer).

Each message's format is told from its own shape by the format registry
(:func:`~mtcabench.transcripts._registry.detect_message`: each format declares, next to its
file reader, how it recognises and reads one message): a list, or an object with a Responses
item ``type`` (``function_call_output``...), is Responses items; an object with ``parts`` a
GenAI message; one with Anthropic blocks (``tool_use``, ``tool_result``, ``thinking``) an
Anthropic message; one whose ``tool_calls`` name their function as text, or with
``reasoning`` content, an Inspect message; anything else an OpenAI chat message. Plain text
messages read alike in every format. One message may give several turns (an Anthropic user
message with two ``tool_result`` blocks) or none (reasoning only). A Responses model
response's items are given together (``add(response.output)``), since they are one turn.
"""

from __future__ import annotations

from typing import Any

from mtcabench.model import Turn
from mtcabench.transcripts._registry import detect_message
from mtcabench.transcripts._turns import TurnBuilder


def read_any(builder: TurnBuilder, message: Any, here: str) -> list[Turn]:
    """Add the turns of one message (or a list of Responses items) of any format."""
    return detect_message(message, here).read_message(builder, message, here)


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
