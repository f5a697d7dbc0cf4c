"""Inspect AI eval logs: the ``.json`` log (``{version, eval, samples: [...]}``) and the
``.eval`` zip archive (one ``samples/<id>_epoch_<n>.json`` per sample), each sample's
``messages`` read as one conversation.

Messages have role system, user, assistant (``tool_calls`` as ``{id, function, arguments}``,
``function`` the tool's name and ``arguments`` an object) or tool (``tool_call_id``,
``function``, ``error``); content is a string or parts: ``text``, ``reasoning`` (dropped),
``image`` / ``audio`` / ``video`` / ``document`` (placeholders). A tool message with no
content and an ``error`` reads as the error's message. Ids: ``<file stem>/<sample id>/
epoch-<n>``.
"""

from __future__ import annotations

import zipfile
import zlib
from typing import Any

from mtcabench.errors import InputError
from mtcabench.io import JSONError, loads, not_utf8
from mtcabench.model import Conversation, Turn, conversation_metadata
from mtcabench.redact import clip
from mtcabench.transcripts._chat import TRANSCRIPT_SOURCE
from mtcabench.transcripts._registry import NO, SURE, LogFormat, register_format
from mtcabench.transcripts._source import Source
from mtcabench.transcripts._turns import (
    AUDIO,
    FILE,
    IMAGE,
    CallList,
    TurnBuilder,
    join_parts,
    name_of,
    tool_call,
)

NAME, TITLE = "inspect-ai", "Inspect AI"
_PLACEHOLDERS = {"image": IMAGE, "audio": AUDIO, "video": FILE, "document": FILE}
_FIX = "fix its tool_call_id"


def _content(content: Any, here: str) -> tuple[str, bool]:
    """The text of a message's content, and whether reasoning was dropped from it."""
    if content is None or isinstance(content, str):
        return content or "", False
    if not isinstance(content, list):
        raise InputError(f"{here}: content is {type(content).__name__}; expected text or a "
                         "list of content parts")
    texts, thought = [], False
    for j, part in enumerate(content):
        kind = name_of(part.get("type")) if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind == "reasoning":
            thought = True
        elif kind in _PLACEHOLDERS:
            texts.append(_PLACEHOLDERS[kind])
        else:
            raise InputError(f"{here}, content part {j}: a {kind!r} part is not read (read: "
                             "text, reasoning, image, audio, video, document); remove it")
    return join_parts(texts), thought


def read_message(builder: TurnBuilder, message: Any, here: str) -> list[Turn]:
    """Add the turn of one Inspect chat message to ``builder``."""
    if not isinstance(message, dict):
        raise InputError(f"{here}: expected a message object, got {type(message).__name__}")
    role = name_of(message.get("role"))
    text, thought = _content(message.get("content"), here)
    if role == "assistant":
        calls = CallList()
        raw_calls = message.get("tool_calls")
        if raw_calls is not None and not isinstance(raw_calls, list):
            raise InputError(f"{here}: tool_calls is a {type(raw_calls).__name__}; expected a "
                             "list of {id, function, arguments}")
        for k, c in enumerate(raw_calls or []):
            if not isinstance(c, dict):
                raise InputError(f"{here}, tool call {k}: expected {{id, function, arguments}}")
            calls.append(tool_call(c.get("id"), c.get("function"), c.get("arguments"),
                                   f"{here}, tool call {k}", calls))
        return [] if thought and not text and not calls else [
            builder.assistant(text, calls, here)]
    if role == "tool":
        error = message.get("error")
        if not text and isinstance(error, dict) and isinstance(error.get("message"), str):
            text = error["message"]
        return [builder.tool(message.get("tool_call_id"), text, here, fix=_FIX)]
    if role == "system":
        return [builder.system(text, here)]
    if role == "user":
        return [builder.user(text, here)]
    raise InputError(f"{here}: a message with role {message.get('role')!r}; expected system, "
                     "user, assistant or tool")


def _samples(source: Source, where: str) -> list[tuple[str, Any]]:
    if not source.archive:
        samples = source.value.get("samples") if isinstance(source.value, dict) else None
        if not isinstance(samples, list):
            raise InputError(f"{where}: no samples (a log written with --no-log-samples, or a "
                             "header only); expected 'samples': [...]")
        return [(f"{where}, sample {k}", s) for k, s in enumerate(samples)]
    out = []
    try:
        with zipfile.ZipFile(source.path) as z:
            for info in z.infolist():
                name = info.filename
                if name.startswith("samples/") and name.endswith(".json"):
                    here = f"{where}, {name}"
                    data = read_member(z, info, here)
                    try:
                        out.append((here, loads(data.decode("utf-8"))))
                    except UnicodeDecodeError as exc:
                        raise InputError(f"{here}: {not_utf8(data, exc)}") from None
                    except JSONError as exc:
                        raise InputError(f"{here}: {exc.reason}") from None
    except (zipfile.BadZipFile, OSError) as exc:
        raise InputError(f"{where}: not a readable .eval archive ({exc})") from None
    return out


#: The most bytes one member of an ``.eval`` archive may unpack to (docs/ingest.md, "Bounds"):
#: a sample is read whole, so a member that unpacks to gigabytes (a zip bomb, a broken size)
#: is refused as it streams, before it fills the memory.
MAX_MEMBER_BYTES = 256 * 1024 * 1024
_CHUNK = 1 << 20


def read_member(z: zipfile.ZipFile, info: zipfile.ZipInfo, here: str,
                limit: int | None = None) -> bytes:
    """One archive member's bytes, streamed and refused past ``limit`` (default
    :data:`MAX_MEMBER_BYTES`) whatever size its header claims; an encrypted member, an
    unsupported compression method, broken compressed data or a wrong checksum is one line
    naming the member."""
    limit = MAX_MEMBER_BYTES if limit is None else limit
    if info.flag_bits & 0x1:
        raise InputError(f"{here}: the member is encrypted; Inspect writes plain archives: "
                         "decrypt it (or rewrite the log with inspect) first")
    if info.file_size > limit:
        raise InputError(f"{here}: the member unpacks to {info.file_size} bytes, more than the "
                         f"{limit} read from one sample; split the log")
    chunks, size = [], 0
    try:
        with z.open(info) as fh:
            while chunk := fh.read(_CHUNK):
                size += len(chunk)
                if size > limit:
                    raise InputError(f"{here}: the member unpacks to more than the {limit} bytes "
                                     "read from one sample (its header says "
                                     f"{info.file_size}); split the log")
                chunks.append(chunk)
    except NotImplementedError as exc:  # zipfile: compression method not supported
        raise InputError(f"{here}: {str(exc).lower().rstrip('.')}; Inspect writes deflate or "
                         "stored members: rewrite the archive with those") from None
    except (zipfile.BadZipFile, zlib.error, EOFError, RuntimeError, ValueError) as exc:
        raise InputError(f"{here}: damaged member ({exc or type(exc).__name__}); the archive is "
                         "broken: copy or export the log again") from None
    return b"".join(chunks)


def _sample_key(sample: dict, k: int, here: str) -> tuple[str, int]:
    """A sample's id and epoch as they go into the conversation id: an id is text or a number
    (Inspect's), a sample without one is named by its position (``sample-<k>``); an id of any
    other kind (an object, a list) is refused rather than written as a Python repr."""
    sid, epoch = sample.get("id"), sample.get("epoch")
    epoch = 1 if epoch is None else epoch
    if sid is None or sid == "":
        sid = f"sample-{k}"
    elif isinstance(sid, bool) or not isinstance(sid, (str, int)):
        raise InputError(f"{here}: the sample id is a {type(sid).__name__}; expected text or "
                         "a number")
    if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
        raise InputError(f"{here}: the sample epoch is {clip(repr(epoch), 40)}; expected a "
                         "whole number")
    return str(sid), epoch


def _read(source: Source) -> list[Conversation]:
    where = f"{source.label} ({TITLE})"
    samples = _samples(source, where)
    if not samples:
        raise InputError(f"{where}: no samples in the log; nothing to read")
    out = []
    for k, (here, sample) in enumerate(samples):
        if not isinstance(sample, dict) or not isinstance(sample.get("messages"), list):
            raise InputError(f"{here}: a sample without 'messages'")
        sid, epoch = _sample_key(sample, k, here)
        here = f"{here} (id {sid}, epoch {epoch})"
        builder = TurnBuilder(here)
        for j, m in enumerate(sample["messages"]):
            read_message(builder, m, f"{here}, message {j}")
        out.append(builder.conversation(
            id=f"{source.stem}/{sid}/epoch-{epoch}", source=TRANSCRIPT_SOURCE,
            domain="transcript",
            metadata=conversation_metadata(origin=source.origin(
                NAME, sample_id=sample.get("id") or sid, epoch=epoch))))
    return out


def _sniff(source: Source) -> int:
    if source.archive:
        try:
            with zipfile.ZipFile(source.path) as z:
                names = z.namelist()
        except (zipfile.BadZipFile, OSError):
            return SURE  # the only archive format: its reader names the damage
        return SURE if "header.json" in names or any(n.startswith("samples/") for n in names) \
            else NO
    value = source.value
    return SURE if isinstance(value, dict) and "eval" in value and (
        "samples" in value or "version" in value) else NO


def _sniff_message(message: Any) -> int:
    """An Inspect message has its marks when its tool calls name their function as text
    (``{id, function: "name", arguments}``) or its content holds ``reasoning``; its other
    messages (a tool result, plain text) read alike as chat messages."""
    if not isinstance(message, dict):
        return NO
    calls, content = message.get("tool_calls"), message.get("content")
    marked = (isinstance(calls, list) and any(
        isinstance(c, dict) and isinstance(c.get("function"), str) for c in calls)) or (
        isinstance(content, list) and any(
            isinstance(p, dict) and p.get("type") == "reasoning" for p in content))
    return SURE if marked else NO


register_format(LogFormat(
    NAME, TITLE, "an eval log {version, eval, samples: [{messages}]} (.json) or a .eval "
    "archive", _sniff, _read, order=50, sniff_message=_sniff_message, read_message=read_message))
