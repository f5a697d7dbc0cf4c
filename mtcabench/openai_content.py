"""OpenAI chat message content as one text: the single place that normalises it.

The Chat Completions API gives a message's ``content`` as a string, as null (an assistant
turn that only calls tools), or as a list of *content parts*; agent logs hold all three. A
turn of ours has one text (all offsets refer to it), so parts become one string:

- text parts (``{"type": "text", "text": ...}``; the Responses API's ``input_text`` and
  ``output_text``; an assistant's ``{"type": "refusal", "refusal": ...}``) give their text;
- parts that carry no text (images, audio, files) are kept as a placeholder, ``[image]``,
  ``[audio]`` or ``[file]``, so that the turn shows that something was there, and where,
  without inventing words for it (no attribution can point inside an image anyway);
- parts are joined in order, one per line (``\\n``).

Anything else (a part of an unknown type, a part that is not an object, content that is
neither a string, null nor a list) is refused with :class:`ContentError`, naming the part:
guessing at an unknown shape could silently change a turn's text and every offset in it.
Each reader adds where the message was (file, run, message) to the error.
"""

from __future__ import annotations

from typing import Any

#: Part types whose text is read, and the key that holds it.
TEXT_PARTS: dict[str, str] = {
    "text": "text",
    "input_text": "text",
    "output_text": "text",
    "refusal": "refusal",
}

#: Part types that carry no text, and the placeholder each becomes.
PLACEHOLDERS: dict[str, str] = {
    "image_url": "[image]",
    "input_image": "[image]",
    "image": "[image]",
    "input_audio": "[audio]",
    "audio": "[audio]",
    "file": "[file]",
    "input_file": "[file]",
}

#: How parts are joined.
SEPARATOR = "\n"


class ContentError(ValueError):
    """Message content of a shape that is not read; the message names the part and why."""


def message_text(content: Any) -> str:
    """The text of an OpenAI chat message's ``content`` (a string, null or a list of parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise ContentError(f"content is {type(content).__name__}; expected text, null or a list "
                           "of content parts")
    texts = []
    for i, part in enumerate(content):
        if not isinstance(part, dict):
            raise ContentError(f"content part {i}: expected an object with a type, got "
                               f"{type(part).__name__}")
        kind = part.get("type")
        if kind is None:
            raise ContentError(f"content part {i}: a content part without a type")
        if not isinstance(kind, str):
            raise ContentError(f"content part {i}: its type is a {type(kind).__name__}, not text")
        if kind in TEXT_PARTS:
            text = part.get(TEXT_PARTS[kind])
            if not isinstance(text, str):
                raise ContentError(f"content part {i}: a {kind} part whose "
                                   f"{TEXT_PARTS[kind]} is {type(text).__name__}, not text")
            texts.append(text)
        elif kind in PLACEHOLDERS:
            texts.append(PLACEHOLDERS[kind])
        else:
            known = sorted(TEXT_PARTS) + sorted(PLACEHOLDERS)
            raise ContentError(f"content part {i}: unknown content part type {kind!r} (known: "
                               f"{', '.join(known)})")
    return SEPARATOR.join(texts)
