"""OpenAI chat messages (Chat Completions): a JSON list, ``{"messages": [...]}`` or one
message per line.

Roles ``system`` (``developer`` is read as system), ``user``, ``assistant`` (with
``tool_calls``, parallel calls included; a ``user`` message may carry them too, for a user
with tools of their own) and ``tool`` (answering a call by ``tool_call_id``). Content is a
string, null, or a list of content parts, read by
:func:`mtcabench.openai_content.message_text`; an assistant's ``refusal`` field is its text
when it has no content. A tool message's own ``name`` is not read: a result is named after
the call it answers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mtcabench.errors import InputError
from mtcabench.model import Conversation, Role, Turn, conversation_metadata
from mtcabench.openai_content import ContentError, message_text
from mtcabench.transcripts._registry import NO, PLAUSIBLE, SURE, LogFormat, register_format
from mtcabench.transcripts._source import Source
from mtcabench.transcripts._turns import CallList, TurnBuilder, name_of, tool_call

NAME, TITLE = "openai-chat", "OpenAI chat"
#: Roles read as another: OpenAI's ``developer`` messages are system instructions.
ROLE_ALIASES = {"developer": "system"}
#: What the conversations of a plain transcript are recorded as.
TRANSCRIPT_SOURCE = "transcript"
_FIX = "fix its tool_call_id"
#: Content parts only the chat format has, and message keys only it has (its marks).
_CHAT_PARTS = {"image_url", "input_audio", "file", "refusal"}
_CHAT_KEYS = {"tool_calls", "tool_call_id", "refusal"}


def content_text(content: Any, where: str) -> str:
    """The text of a chat message's ``content`` (:func:`~mtcabench.openai_content.message_text`,
    the one normaliser ingest uses too); ``where`` (e.g. ``"run.json, message 3"``) names the
    message in the InputError of a part that is not read."""
    try:
        return message_text(content)
    except ContentError as e:
        raise InputError(f"{where}: {e}") from None


def _tool_calls(raw: Any, where: str) -> list:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise InputError(f"{where}: tool_calls is {type(raw).__name__}; expected a list")
    calls = CallList()
    for k, c in enumerate(raw):
        here = f"{where}, tool call {k}"
        fn = c.get("function") if isinstance(c, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
            raise InputError(f"{here}: expected {{id, type: function, function: {{name, "
                             "arguments}}}")
        calls.append(tool_call(c.get("id"), fn["name"], fn.get("arguments"), here, calls))
    return calls


def read_message(builder: TurnBuilder, message: Any, here: str) -> Turn:
    """Add the turn of one chat message to ``builder``."""
    if not isinstance(message, Mapping):
        raise InputError(f"{here}: expected a chat message object, got {type(message).__name__}")
    role = name_of(message.get("role"))
    role = ROLE_ALIASES.get(role, role) if role else role
    if role == "function":
        raise InputError(f"{here}: a legacy 'function' message (function_call); convert it to "
                         "an assistant tool_calls entry and a 'tool' message with its id")
    if role not in {r.value for r in Role}:
        raise InputError(f"{here}: unknown role {message.get('role')!r}; expected system, "
                         "developer, user, assistant or tool")
    content = content_text(message.get("content"), here)
    if role not in ("assistant", "user") and message.get("tool_calls"):
        raise InputError(f"{here}: a {role} message with tool_calls; only assistant and user "
                         "messages issue tool calls")
    if role == "assistant":
        if not content and isinstance(message.get("refusal"), str):
            content = message["refusal"]
        return builder.assistant(content, _tool_calls(message.get("tool_calls"), here), here)
    if role == "user" and message.get("tool_calls"):  # a user with tools of their own
        return builder.user(content, here, _tool_calls(message["tool_calls"], here))
    if role == "tool":
        if not isinstance(message.get("tool_call_id"), str) or not message["tool_call_id"]:
            raise InputError(f"{here}: a tool message needs the tool_call_id of the call it "
                             "answers")
        return builder.tool(message["tool_call_id"], content, here, fix=_FIX)
    return builder.system(content, here) if role == "system" else builder.user(content, here)


class MessageReader:
    """Reads chat messages into turns one at a time, in order.

    :meth:`read` converts without changing the state, :meth:`append` then accepts the turn
    (the online tracer appends only once the model has processed it).
    """

    def __init__(self, where: str = "messages"):
        self._builder = TurnBuilder(where)

    @property
    def where(self) -> str:
        return self._builder.where

    @property
    def turns(self) -> list[Turn]:
        return self._builder.turns

    def read(self, message: Any) -> Turn:
        """The turn for ``message`` as the next turn (nothing is recorded)."""
        here = f"{self.where}, message {len(self.turns)}"
        return self._builder.read_ahead(lambda b: read_message(b, message, here))

    def append(self, turn: Turn) -> None:
        """Accept ``turn`` (from :meth:`read`) as the next turn."""
        self._builder.append(turn)

    def add(self, message: Any) -> Turn:
        """Read ``message`` and accept it."""
        turn = self.read(message)
        self.append(turn)
        return turn


def conversation_from_messages(
    messages: Iterable[Any], *, id: str = "transcript", source: str = TRANSCRIPT_SOURCE,
    domain: str = "transcript", where: str = "messages", **fields: Any,
) -> Conversation:
    """A conversation from OpenAI chat messages (see the module docstring)."""
    builder = TurnBuilder(where)
    for j, m in enumerate(messages):
        read_message(builder, m, f"{where}, message {j}")
    return builder.conversation(id=id, source=source, domain=domain, **fields)


# --------------------------------------------------------------------------- the format


def chat_messages(value: Any) -> list | None:
    """The message list of a chat-shaped value (a list, or ``{"messages": [...]}``)."""
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        return value["messages"]
    return value if isinstance(value, list) else None


def _part_types(message: dict) -> set:
    content = message.get("content")
    return ({name_of(p.get("type")) for p in content if isinstance(p, dict)}
            if isinstance(content, list) else set())


def _sniff(source: Source) -> int:
    messages = chat_messages(source.value)
    if messages is None or source.value == [] or not all(
            isinstance(m, dict) and "role" in m and "type" not in m for m in messages):
        return NO
    marked = any(name_of(m["role"]) in {"system", "developer", "tool", "function"} or m.keys() & _CHAT_KEYS
                 or _part_types(m) & _CHAT_PARTS for m in messages)
    return SURE if marked else PLAUSIBLE


def _read(source: Source) -> list[Conversation]:
    messages = chat_messages(source.value)
    if messages is None:
        raise InputError(f"{source.label} ({TITLE}): expected a JSON list of chat messages, "
                         "{\"messages\": [...]} or one message per line")
    value = source.value
    cid = value.get("id") if isinstance(value, dict) and isinstance(value.get("id"), str) else None
    return [conversation_from_messages(messages, id=cid or source.stem,
                                       where=f"{source.label} ({TITLE})",
                                       metadata=conversation_metadata(origin=source.origin(NAME)))]


def _sniff_message(message: Any) -> int:
    """Any message object may be a chat message, but none is surely one: a chat message's
    marks (``tool_calls``, a ``tool`` role) are shared with Inspect's, so chat is the
    fallback for messages with no other format's marks."""
    return PLAUSIBLE if isinstance(message, dict) else NO


def _read_turns(builder: TurnBuilder, message: Any, here: str) -> list[Turn]:
    return [read_message(builder, message, here)]


register_format(LogFormat(
    NAME, TITLE, "a JSON list of {role, content, tool_calls} messages, {\"messages\": [...]} "
    "or one per line", _sniff, _read, order=10, sniff_message=_sniff_message,
    read_message=_read_turns))
