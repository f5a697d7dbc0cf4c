"""OpenAI Responses API logs: ``{"instructions", "input": [items], "output": [items]}`` (a
request with each response's output appended), or a JSON list of items (one per line too).

Items: ``message`` (role user, system, developer or assistant; content a string or parts
``input_text`` / ``output_text`` / ``refusal`` / ``input_image`` ..., read as chat content
is), ``function_call`` (``call_id``, ``name``, ``arguments`` a JSON string),
``function_call_output`` (``call_id``, ``output`` a string or parts) and ``reasoning``
(dropped). Items without ``type`` are messages. The assistant's ``message`` and
``function_call`` items between two inputs are one model response: one assistant turn.
Built-in tool items (``web_search_call``...) and ``item_reference`` are refused: they have
no tool turn to become.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mtcabench.errors import InputError
from mtcabench.model import Conversation, Role, Turn, conversation_metadata
from mtcabench.transcripts._anthropic import is_message as is_anthropic
from mtcabench.transcripts._chat import TRANSCRIPT_SOURCE, content_text
from mtcabench.transcripts._registry import NO, PLAUSIBLE, SURE, LogFormat, register_format
from mtcabench.transcripts._source import Source
from mtcabench.transcripts._turns import CallList, TurnBuilder, join_parts, name_of, tool_call

NAME, TITLE = "openai-responses", "OpenAI Responses"
ITEM_TYPES = {"message", "function_call", "function_call_output", "reasoning"}
_ROLES = {"user", "assistant", "system", "developer"}
_FIX = "fix its call_id"


def is_response_item(item: Any) -> bool:
    """Whether ``item`` belongs to a model response (becomes part of an assistant turn)."""
    if not isinstance(item, dict):
        return False
    kind = name_of(item.get("type", "message"))
    return kind in {"function_call", "reasoning"} or (kind == "message"
                                                      and item.get("role") == "assistant")


def _input_item(builder: TurnBuilder, item: Any, here: str) -> Turn:
    if not isinstance(item, dict):
        raise InputError(f"{here}: expected an item object, got {type(item).__name__}")
    kind = name_of(item.get("type", "message" if "role" in item else None))
    if kind == "function_call_output":
        output = item.get("output")
        return builder.tool(item.get("call_id"), content_text(output, here), here, fix=_FIX)
    if kind == "message":
        role = name_of(item.get("role"))
        if role not in _ROLES:
            raise InputError(f"{here}: a message with role {role!r}; expected user, assistant, "
                             "system or developer")
        text = content_text(item.get("content"), here)
        return builder.user(text, here) if role == "user" else builder.system(text, here)
    if kind is None:
        raise InputError(f"{here}: an item with neither a type nor a role; expected a message, "
                         "function_call, function_call_output or reasoning item")
    raise InputError(f"{here}: a {kind!r} item has no place in a conversation of turns (read: "
                     f"{', '.join(sorted(ITEM_TYPES))}); log the tool as a function_call and its "
                     "function_call_output, or remove the item")


def _response(builder: TurnBuilder, items: Sequence[tuple[str, dict]]) -> Turn | None:
    """One assistant turn from a model response's items (None: reasoning only)."""
    texts, calls = [], CallList()
    for here, item in items:
        if item.get("type", "message") == "message":
            texts.append(content_text(item.get("content"), here))
        elif item.get("type") == "function_call":
            calls.append(tool_call(item.get("call_id"), item.get("name"), item.get("arguments"),
                                   here, calls))
    if not texts and not calls:
        return None
    return builder.assistant(join_parts(texts), calls, items[0][0])


def read_items(builder: TurnBuilder, items: Sequence[tuple[str, Any]]) -> list[Turn]:
    """Add the turns of ``(where, item)`` pairs to ``builder``: runs of response items are
    one assistant turn each, every other item a turn of its own."""
    turns: list[Turn] = []
    k = 0
    while k < len(items):
        if is_response_item(items[k][1]):
            end = k
            while end < len(items) and is_response_item(items[end][1]):
                end += 1
            turn = _response(builder, items[k:end])
            turns += [turn] if turn is not None else []
            k = end
        else:
            turns.append(_input_item(builder, items[k][1], items[k][0]))
            k += 1
    return turns


def _anthropic_blocks(item: dict) -> bool:
    content = item.get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and name_of(b.get("type")) in {"tool_use", "tool_result", "thinking"}
        for b in content)


def _sniff(source: Source) -> int:
    value = source.value
    if isinstance(value, dict):
        return SURE if "input" in value or value.get("object") == "response" else NO
    if not isinstance(value, list) or not value or not all(isinstance(i, dict) for i in value):
        return NO
    if any(name_of(i.get("role", "user")) not in _ROLES or "tool_calls" in i or "tool_call_id" in i
           or ("type" not in i and "role" not in i) or _anthropic_blocks(i) for i in value):
        return NO
    return SURE if any("type" in i for i in value) else PLAUSIBLE


def _read(source: Source) -> list[Conversation]:
    value = source.value
    where = f"{source.label} ({TITLE})"
    builder = TurnBuilder(where)
    if isinstance(value, dict):
        instructions = value.get("instructions")
        if instructions is not None and not isinstance(instructions, str):
            raise InputError(f"{where}: instructions are a {type(instructions).__name__}; "
                             "expected text (or put them in input as a system message)")
        if instructions:
            builder.system(instructions, f"{where}, instructions")
        given = value.get("input", [])
        given = [{"role": "user", "content": given}] if isinstance(given, str) else given
        output = value.get("output") or []
        if not isinstance(given, list) or not isinstance(output, list):
            raise InputError(f"{where}: input and output must be lists of items")
        items = ([(f"{where}, input item {k}", i) for k, i in enumerate(given)]
                 + [(f"{where}, output item {k}", i) for k, i in enumerate(output)])
    elif isinstance(value, list):
        items = [(f"{where}, item {k}", i) for k, i in enumerate(value)]
    else:
        raise InputError(f"{where}: expected {{instructions, input, output}} or a list of items")
    read_items(builder, items)
    return [builder.conversation(id=source.stem, source=TRANSCRIPT_SOURCE, domain="transcript",
                                 metadata=conversation_metadata(origin=source.origin(NAME)))]


def _sniff_message(message: Any) -> int:
    """A list is a model response's items (given together: they are one turn); an object with
    an item ``type`` is one item, unless Anthropic's blocks say it is an Anthropic message
    (whose API responses carry ``type: message`` too)."""
    if isinstance(message, list):
        return SURE
    return SURE if isinstance(message, dict) and isinstance(message.get("type"), str) \
        and not is_anthropic(message) else NO


def read_message(builder: TurnBuilder, message: Any, here: str) -> list[Turn]:
    """The turns of one item, or of a model response's items given as a list."""
    items = message if isinstance(message, list) else [message]
    pairs = [(f"{here}, item {k}" if isinstance(message, list) else here, i)
             for k, i in enumerate(items)]
    if items and is_response_item(items[0]) and builder.last_role is Role.ASSISTANT:
        raise InputError(f"{here}: a model response's item after a model response; add "
                         "the output items of one response together (add(response.output))")
    return read_items(builder, pairs)


register_format(LogFormat(
    NAME, TITLE, "{instructions, input: [items], output: [items]} or a list of message / "
    "function_call / function_call_output / reasoning items", _sniff, _read, order=20,
    sniff_message=_sniff_message, read_message=read_message))
