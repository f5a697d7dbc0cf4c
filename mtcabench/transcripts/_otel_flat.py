"""Chat spans whose messages are flattened into indexed span attributes, the two forms most
instrumentations wrote before (and beside) the GenAI ``gen_ai.input.messages`` JSON:

- **OpenLLMetry** (Traceloop's instrumentations, and the SDKs built on them):
  ``gen_ai.prompt.<i>.role`` / ``.content`` / ``.tool_call_id`` /
  ``.tool_calls.<j>.{id,name,arguments}``, the response as ``gen_ai.completion.<i>.*`` the
  same way. A content that is not text is written as JSON: a list of OpenAI content parts, or
  of Anthropic content blocks (``tool_use``, ``tool_result``) for Claude.
- **OpenInference** (Arize Phoenix and its instrumentations): ``llm.input_messages.<i>.``
  ``message.role`` / ``.content`` / ``.contents.<j>.message_content.{type,text}`` /
  ``.tool_call_id`` / ``.tool_calls.<j>.tool_call.{id,function.name,function.arguments}``,
  the response as ``llm.output_messages.<i>.message.*``.

Both are turned here into GenAI messages ``{role, parts}``, so :mod:`._otel` rebuilds the
conversation from them exactly as from the JSON form (by start time, each span's history
continuing a conversation). Indices are read as numbers (``10`` after ``9``), whatever the
order of the attributes.
"""

from __future__ import annotations

from typing import Any

from mtcabench.errors import InputError
from mtcabench.io import JSONError, ascii_int, loads
from mtcabench.openai_content import PLACEHOLDERS, TEXT_PARTS
from mtcabench.transcripts._turns import FILE, as_text, join_parts, name_of

OPENLLMETRY_IN, OPENLLMETRY_OUT = "gen_ai.prompt", "gen_ai.completion"
OPENINFERENCE_IN, OPENINFERENCE_OUT = "llm.input_messages", "llm.output_messages"
#: Content part / block types that carry no text, by the placeholder they become: OpenAI's
#: (as the chat reader reads them) and Claude's ``document``.
_MEDIA = {**PLACEHOLDERS, "document": FILE}
_TEXT = TEXT_PARTS
_THINKING = {"thinking", "redacted_thinking", "reasoning"}


def indexed(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """``prefix.<n>.<rest>`` attributes as one dict ``{rest: value}`` per index, by index."""
    items: dict[int, dict[str, Any]] = {}
    head = prefix + "."
    for key, value in attrs.items():
        if not key.startswith(head):
            continue
        index, _, rest = key[len(head):].partition(".")
        if (n := ascii_int(index, 9)) is not None and rest:
            items.setdefault(n, {})[rest] = value
    return [items[k] for k in sorted(items)]


def form(attrs: dict[str, Any]) -> str | None:
    """Which flattened form a span's attributes hold (None: neither)."""
    keys = tuple(attrs)
    for name, prefixes in (("openllmetry", (OPENLLMETRY_IN, OPENLLMETRY_OUT)),
                           ("openinference", (OPENINFERENCE_IN, OPENINFERENCE_OUT))):
        if any(k.startswith(p + ".") and ascii_int(k[len(p) + 1:].split(".")[0], 9) is not None
               for k in keys for p in prefixes):
            return name
    return None


def _parts_of_list(blocks: list, here: str) -> list[dict]:
    """OpenAI content parts or Anthropic content blocks as GenAI parts."""
    parts: list[dict] = []
    for j, b in enumerate(blocks):
        kind = name_of(b.get("type")) if isinstance(b, dict) else None
        where = f"{here}, part {j}"
        if kind in _TEXT:
            text = b.get(_TEXT[kind])
            if not isinstance(text, str):
                raise InputError(f"{where}: a {kind} part without text")
            parts.append({"type": "text", "content": text})
        elif kind in _MEDIA:
            parts.append({"type": "text", "content": _MEDIA[kind]})
        elif kind in _THINKING:
            parts.append({"type": "reasoning"})
        elif kind == "tool_use":
            parts.append({"type": "tool_call", "id": b.get("id"), "name": b.get("name"),
                          "arguments": b.get("input")})
        elif kind == "tool_result":
            inner = b.get("content")
            if isinstance(inner, list):
                inner = join_parts(p["content"] for p in _parts_of_list(inner, where)
                                   if p["type"] == "text")
            parts.append({"type": "tool_call_response", "id": b.get("tool_use_id"),
                          "response": "" if inner is None else inner})
        else:
            raise InputError(f"{where}: a content part of type {kind!r} is not read (read: text, "
                             "image, audio, file, tool_use, tool_result, thinking); remove it "
                             "or convert it")
    return parts


def _content(value: Any, here: str) -> list[dict]:
    """A flattened ``content``: text, or (as these instrumentations write anything else) JSON
    holding a list of content parts. Text that only looks like JSON stays text."""
    if value is None:
        return []
    if isinstance(value, str):
        stripped = value.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            try:
                blocks = loads(stripped)
            except JSONError:
                blocks = None
            if isinstance(blocks, list) and blocks and all(
                    isinstance(b, dict) and isinstance(b.get("type"), str) for b in blocks):
                return _parts_of_list(blocks, here)
        return [{"type": "text", "content": value}]
    if isinstance(value, list):
        return _parts_of_list(value, here)
    return [{"type": "text", "content": as_text(value)}]


def _message(role: Any, parts: list[dict], calls: list[dict], call_id: Any,
             here: str) -> dict:
    """One GenAI message; a tool message's text is the response to the call it names."""
    if role == "tool":
        text = join_parts(p["content"] for p in parts if p["type"] == "text")
        return {"role": "tool", "parts": [{"type": "tool_call_response", "id": call_id,
                                           "response": text}]}
    if role == "thinking":  # OpenLLMetry's name for a Claude response's thinking block
        return {"role": "assistant", "parts": [{"type": "reasoning"}]}
    if not isinstance(role, str):
        raise InputError(f"{here}: a message without a role")
    # Anthropic's results sit in user messages; tool_call_response parts there are read as such.
    return {"role": role, "parts": parts + calls}


def openllmetry(attrs: dict[str, Any], prefix: str, here: str,
                default_role: str | None = None) -> list[tuple[str, dict]]:
    """The messages under ``gen_ai.prompt`` or ``gen_ai.completion``."""
    out = []
    for k, m in enumerate(indexed(attrs, prefix)):
        where = f"{here}, {prefix}.{k}"
        calls = [{"type": "tool_call", "id": c.get("id"), "name": c.get("name"),
                  "arguments": c.get("arguments")} for c in indexed(m, "tool_calls")]
        parts = _content(m.get("content"), where)
        out.append((where, _message(m.get("role") or default_role, parts, calls,
                                    m.get("tool_call_id"), where)))
    return out


def openinference(attrs: dict[str, Any], prefix: str, here: str,
                  default_role: str | None = None) -> list[tuple[str, dict]]:
    """The messages under ``llm.input_messages`` or ``llm.output_messages``."""
    out = []
    for k, m in enumerate(indexed(attrs, prefix)):
        where = f"{here}, {prefix}.{k}"
        parts = _content(m.get("message.content"), where)
        for j, c in enumerate(indexed(m, "message.contents")):
            kind = name_of(c.get("message_content.type"))
            if kind == "text":
                text = c.get("message_content.text", "")
                if not isinstance(text, str):
                    raise InputError(f"{where}, message.contents.{j}: message_content.text is "
                                     f"a {type(text).__name__}; expected text")
                parts.append({"type": "text", "content": text})
            elif kind in _MEDIA:
                parts.append({"type": "text", "content": _MEDIA[kind]})
            else:
                raise InputError(f"{where}, message.contents.{j}: a content of type {kind!r} "
                                 "is not read (read: text, image, audio, file)")
        calls = [{"type": "tool_call", "id": c.get("tool_call.id"),
                  "name": c.get("tool_call.function.name"),
                  "arguments": c.get("tool_call.function.arguments")}
                 for c in indexed(m, "message.tool_calls")]
        out.append((where, _message(m.get("message.role") or default_role, parts, calls,
                                    m.get("message.tool_call_id"), where)))
    return out


def history(kind: str, attrs: dict[str, Any], here: str) -> list[tuple[str, dict]]:
    """The messages a flattened chat span sent (its system message included)."""
    if kind == "openllmetry":
        return openllmetry(attrs, OPENLLMETRY_IN, here)
    return openinference(attrs, OPENINFERENCE_IN, here)


def response(kind: str, attrs: dict[str, Any], here: str) -> list[tuple[str, dict]]:
    """The model response of a flattened chat span, as one assistant message: as for the
    JSON form, every completion of one span is part of one response (OpenLLMetry writes a
    Claude response's thinking, text and tool calls as completions 0, 1, ...)."""
    read = openllmetry if kind == "openllmetry" else openinference
    prefix = OPENLLMETRY_OUT if kind == "openllmetry" else OPENINFERENCE_OUT
    messages = read(attrs, prefix, here, "assistant")
    if not messages:
        return []
    parts = [p for _, m in messages for p in m["parts"]]
    return [(messages[0][0], {"role": "assistant", "parts": parts})]
