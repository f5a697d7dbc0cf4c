"""Anthropic Messages API logs: ``{"system", "messages": [...]}`` (a request, the model's last
response appended), or a JSON list of messages.

``system`` is a string or ``text`` blocks. Messages have role ``user`` or ``assistant``;
content is a string or blocks: ``text``, ``image`` and ``document`` (placeholders),
``tool_use`` (``id``, ``name``, ``input`` an object), ``tool_result`` (``tool_use_id``,
``content`` a string or blocks; inside user messages, several for parallel calls),
``thinking`` and ``redacted_thinking`` (dropped). A user message's ``tool_result`` blocks
are tool turns, its other blocks one user turn after them. Other block types (server tools'
``server_tool_use``...) are refused.
"""

from __future__ import annotations

from typing import Any

from mtcabench.errors import InputError
from mtcabench.model import Conversation, Turn, conversation_metadata
from mtcabench.transcripts._chat import TRANSCRIPT_SOURCE, chat_messages
from mtcabench.transcripts._registry import NO, PLAUSIBLE, SURE, LogFormat, register_format
from mtcabench.transcripts._source import Source
from mtcabench.transcripts._turns import (
    FILE,
    IMAGE,
    CallList,
    TurnBuilder,
    join_parts,
    name_of,
    tool_call,
)

NAME, TITLE = "anthropic-messages", "Anthropic Messages"
#: Blocks only Anthropic's content has (its marks).
MARKS = {"tool_use", "tool_result", "thinking", "redacted_thinking", "document"}
_THINKING = {"thinking", "redacted_thinking"}
_PLACEHOLDERS = {"image": IMAGE, "document": FILE}
_FIX = "fix its tool_use_id"


def _blocks(content: Any, here: str) -> list[dict]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise InputError(f"{here}: content is {type(content).__name__}; expected text or a list "
                         "of content blocks")
    for j, b in enumerate(content):
        if not isinstance(b, dict) or not isinstance(b.get("type"), str):
            raise InputError(f"{here}, block {j}: expected a content block object with a type")
    return content


def _text(block: dict, here: str) -> str:
    """The text of a text, image or document block."""
    kind = block["type"]
    if kind == "text":
        if not isinstance(block.get("text"), str):
            raise InputError(f"{here}: a text block without text")
        return block["text"]
    if kind in _PLACEHOLDERS:
        return _PLACEHOLDERS[kind]
    raise InputError(f"{here}: unknown block type {kind!r} (read: text, image, document, "
                     "tool_use, tool_result, thinking, redacted_thinking); remove it or "
                     "convert it to one of these")


def _result_text(content: Any, here: str) -> str:
    if content is None:
        return ""
    return join_parts(_text(b, f"{here}, block {j}") for j, b in enumerate(_blocks(content, here)))


def read_message(builder: TurnBuilder, message: Any, here: str) -> list[Turn]:
    """Add the turns of one Messages API message to ``builder``."""
    if not isinstance(message, dict):
        raise InputError(f"{here}: expected a message object, got {type(message).__name__}")
    role = name_of(message.get("role"))
    blocks = _blocks(message.get("content"), here)
    if role == "assistant":
        texts, calls, thought = [], CallList(), False
        for j, b in enumerate(blocks):
            where = f"{here}, block {j}"
            if b["type"] == "tool_use":
                calls.append(tool_call(b.get("id"), b.get("name"), b.get("input"), where, calls))
            elif b["type"] in _THINKING:
                thought = True
            else:
                texts.append(_text(b, where))
        if thought and not texts and not calls:
            return []
        return [builder.assistant(join_parts(texts), calls, here)]
    if role != "user":
        raise InputError(f"{here}: a message with role {message.get('role')!r}; expected user "
                         "or assistant (system instructions go in the top-level 'system')")
    turns, texts = [], []
    for j, b in enumerate(blocks):
        where = f"{here}, block {j}"
        if b["type"] == "tool_result":
            text = _result_text(b.get("content"), where)
            turns.append(builder.tool(b.get("tool_use_id"), text, where, fix=_FIX))
        else:
            texts.append(_text(b, where))
    if texts or not turns:
        turns.append(builder.user(join_parts(texts), here))
    return turns


def system_text(system: Any, here: str) -> str:
    return "" if system is None else _result_text(system, here)


def is_message(message: Any) -> bool:
    """Whether a message has Anthropic's marks (blocks of its own types)."""
    content = message.get("content") if isinstance(message, dict) else None
    return isinstance(content, list) and any(
        isinstance(b, dict) and name_of(b.get("type")) in MARKS for b in content)


def _sniff(source: Source) -> int:
    value = source.value
    messages = chat_messages(value)
    if messages is None or value == [] or (isinstance(value, dict) and "input" in value):
        return NO
    if not all(isinstance(m, dict) and "role" in m and m.get("type", "message") == "message"
               for m in messages):
        return NO
    marked = (isinstance(value, dict) and "system" in value) or any(map(is_message, messages))
    return SURE if marked else PLAUSIBLE


def _read(source: Source) -> list[Conversation]:
    where = f"{source.label} ({TITLE})"
    messages = chat_messages(source.value)
    if messages is None:
        raise InputError(f"{where}: expected {{system, messages: [...]}} or a list of messages")
    builder = TurnBuilder(where)
    if isinstance(source.value, dict):
        system = system_text(source.value.get("system"), f"{where}, system")
        if system:
            builder.system(system, f"{where}, system")
    for k, m in enumerate(messages):
        read_message(builder, m, f"{where}, message {k}")
    return [builder.conversation(id=source.stem, source=TRANSCRIPT_SOURCE, domain="transcript",
                                 metadata=conversation_metadata(origin=source.origin(NAME)))]


def _sniff_message(message: Any) -> int:
    """A message with Anthropic's own blocks is surely one; a plain text message reads alike
    in every format (the chat reader takes it)."""
    return SURE if is_message(message) else NO


register_format(LogFormat(
    NAME, TITLE, "{system, messages: [...]} with text / tool_use / tool_result / thinking "
    "blocks", _sniff, _read, order=30, sniff_message=_sniff_message, read_message=read_message))
