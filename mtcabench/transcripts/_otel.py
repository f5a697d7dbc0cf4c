"""OpenTelemetry GenAI spans as an OTLP JSON file export writes them: ``{"resourceSpans":
[{"scopeSpans": [{"spans": [...]}]}]}``, or one such export per line.

Chat spans (``gen_ai.operation.name`` ``chat``, ``generate_content`` or ``text_completion``)
carry the messages as JSON text attributes: ``gen_ai.system_instructions`` (parts),
``gen_ai.input.messages`` (the history sent) and ``gen_ai.output.messages`` (the response),
messages being ``{role, parts}`` with parts ``text`` (``content``), ``tool_call`` (``id``,
``name``, ``arguments``), ``tool_call_response`` (``id``, ``response``; text as it is, any
other value as compact JSON), ``reasoning`` (dropped) and ``blob`` / ``file_data`` / ``uri``
(placeholders by modality). Every output message of one span is one model response.

A conversation is rebuilt per ``gen_ai.conversation.id`` (else per trace) from its chat spans
taken by start time, whatever order the file lists them in (exporters write spans as they
end): each span's history continues the conversation whose messages it starts with; a span
that continues none starts another one (a sub-agent). An ``execute_tool`` span answers, at
the end, a call that no later chat span's input answers (a run that ended with a tool).

The older event form (Azure AI Inference's tracing, before the message attributes): a chat
span with one event per message, ``gen_ai.<role>.message`` holding the OpenAI chat message as
JSON in ``gen_ai.event.content``, and ``gen_ai.choice`` holding ``{"message": ...}``; read as
the same messages.

Messages flattened into indexed attributes, as OpenLLMetry (``gen_ai.prompt.<i>.*``,
``gen_ai.completion.<i>.*``) and OpenInference (``llm.input_messages.<i>.message.*``,
``llm.output_messages.<i>.message.*``; conversations by ``session.id``) write them: read by
:mod:`._otel_flat` into the same messages.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
from collections.abc import Iterator
from typing import Any

from mtcabench.errors import InputError
from mtcabench.io import JSONError, ascii_int, loads
from mtcabench.model import Conversation, Turn, conversation_metadata
from mtcabench.redact import clip
from mtcabench.openai_content import ContentError, message_text
from mtcabench.transcripts import _otel_flat
from mtcabench.transcripts._chat import TRANSCRIPT_SOURCE
from mtcabench.transcripts._registry import NO, SURE, LogFormat, register_format
from mtcabench.transcripts._source import Source
from mtcabench.transcripts._turns import (
    AUDIO,
    FILE,
    IMAGE,
    CallList,
    TurnBuilder,
    as_text,
    join_parts,
    name_of,
    tool_call,
)

NAME, TITLE = "otel-genai", "OpenTelemetry GenAI"
CHAT_OPERATIONS = {"chat", "generate_content", "text_completion"}
_MEDIA = {"blob", "file_data", "uri", "file"}
_FIX = "fix the tool_call_response part's id"


def otlp_id(value: Any, size: int) -> str | None:
    """A trace (16 bytes) or span (8 bytes) id as OTLP/JSON writes it, lowercase hex; the
    base64 that a protobuf JSON printer writes is decoded to the same hex. Anything else is
    kept as its text (None: absent)."""
    if value is None or value == "":
        return None
    text = str(value)
    if re.fullmatch(rf"[0-9a-fA-F]{{{2 * size}}}", text):
        return text.lower()
    with contextlib.suppress(ValueError):
        raw = base64.b64decode(text, validate=True)
        if len(raw) == size:
            return raw.hex()
    return text


def _objects(value: Any) -> list[dict]:
    """The objects of a list (anything else in it, or a value that is no list: none)."""
    return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []


def _attributes(value: Any) -> dict[str, Any]:
    return {str(a.get("key")): _value(a.get("value")) for a in _objects(value)}


def _value(v: Any) -> Any:
    """An OTLP attribute value ``{stringValue | intValue | ...}`` as a Python value."""
    if not isinstance(v, dict):
        return v
    if "arrayValue" in v:
        inner = v["arrayValue"]
        return [_value(x) for x in _objects(inner.get("values"))] if isinstance(inner, dict) \
            else None
    if "kvlistValue" in v:
        inner = v["kvlistValue"]
        return _attributes(inner.get("values")) if isinstance(inner, dict) else None
    if "intValue" in v:
        return v["intValue"]  # a JSON string in OTLP/JSON; no attribute read needs the number
    for key in ("stringValue", "boolValue", "doubleValue", "bytesValue"):
        if key in v:
            return v[key]
    return None


def _spans(source: Source, where: str) -> Iterator[Any]:
    exports = source.value if isinstance(source.value, list) else [source.value]
    for export in exports:
        if not isinstance(export, dict) or not isinstance(export.get("resourceSpans"), list):
            raise InputError(f"{where}: expected an OTLP JSON export {{\"resourceSpans\": "
                             "[...]}} (one per line in JSON Lines)")
        for resource in _objects(export["resourceSpans"]):
            scopes = resource.get("scopeSpans") or resource.get("instrumentationLibrarySpans")
            for scope in _objects(scopes):
                spans = scope.get("spans")
                yield from spans if isinstance(spans, list) else []


class _Span:
    def __init__(self, raw: Any, order: int, where: str):
        if not isinstance(raw, dict):
            raise InputError(f"{where}, span {order}: expected a span object")
        self.id = str(raw.get("spanId", order))
        # As OTLP/JSON and the servers that take annotations write them (hex).
        self.span_id = otlp_id(raw.get("spanId"), 8) or self.id
        self.here = f"{where}, span {raw.get('name', '?')!r} ({self.id})"
        self.attrs = _attributes(raw.get("attributes"))
        self.trace = str(raw.get("traceId", ""))
        self.trace_id = otlp_id(raw.get("traceId"), 16) or self.trace
        # The conversation: the GenAI id, else OpenInference's session, else the trace.
        self.key = str(self.attrs.get("gen_ai.conversation.id") or self.attrs.get("session.id")
                       or self.trace)
        start = raw.get("startTimeUnixNano")
        start = 0 if start is None or start == "" else start
        # Nanoseconds since 1970: a whole number, never negative (a boolean is no number).
        if isinstance(start, bool) or not ((isinstance(start, int) and 0 <= start < 10**30)
                                           or ascii_int(start, 30) is not None):
            raise InputError(f"{self.here}: startTimeUnixNano is {clip(repr(start), 40)}; "
                             "expected nanoseconds since 1970 (a whole number, not negative)")
        self.start = (int(start), order)  # spans are taken in the order they started
        self.operation = name_of(self.attrs.get("gen_ai.operation.name"))
        # The older event form: one span event per message, its JSON in gen_ai.event.content.
        self.events = [(str(e.get("name")), _attributes(e.get("attributes")))
                       for e in _objects(raw.get("events"))
                       if str(e.get("name", "")).startswith("gen_ai.")]
        # Messages flattened into indexed attributes (OpenLLMetry, OpenInference): _otel_flat.
        self.flat = _otel_flat.form(self.attrs)

    @property
    def is_chat(self) -> bool:
        has = ("gen_ai.input.messages" in self.attrs or "gen_ai.output.messages" in self.attrs
               or bool(self.events) or self.flat is not None)
        kind = self.attrs.get("openinference.span.kind")
        request = self.attrs.get("llm.request.type")  # OpenLLMetry's operation
        kind, request = (None if v is None else name_of(v) or "?" for v in (kind, request))
        return (has and (self.operation is None or self.operation in CHAT_OPERATIONS)
                and (kind is None or kind == "LLM")
                and (request is None or request in {"chat", "completion"}))

    def json(self, key: str) -> list:
        """A JSON attribute holding a list (empty when absent)."""
        value = self.attrs.get(key)
        if isinstance(value, str):
            try:
                value = loads(value)
            except JSONError as exc:
                raise InputError(f"{self.here}: attribute {key} is not JSON ({exc.reason}); "
                                 "the exporter should write it as a JSON string") from None
        if value is None:
            return []
        if not isinstance(value, list):
            raise InputError(f"{self.here}: attribute {key} is a {type(value).__name__}; "
                             "expected a JSON list")
        return value

    def _event(self, k: int, name: str, attrs: dict) -> tuple[str, dict]:
        """A message event (``gen_ai.<role>.message``, ``gen_ai.choice``) as a GenAI message."""
        here = f"{self.here}, event {k} ({name})"
        body = attrs.get("gen_ai.event.content")
        try:
            body = loads(body) if isinstance(body, str) else body
        except JSONError as exc:
            raise InputError(f"{here}: gen_ai.event.content is not JSON ({exc.reason})") from None
        if not isinstance(body, dict):
            raise InputError(f"{here}: no gen_ai.event.content object; turn on message capture "
                             "in the instrumentation")
        message = body.get("message") if name == "gen_ai.choice" else body
        message = message if isinstance(message, dict) else {}
        role = "assistant" if name == "gen_ai.choice" else name.split(".")[1]
        try:
            text = message_text(message.get("content"))
        except ContentError as exc:
            raise InputError(f"{here}: {exc}") from None
        parts = [{"type": "text", "content": text}] if message.get("content") is not None else []
        calls = message.get("tool_calls") or []
        if not isinstance(calls, list):
            raise InputError(f"{here}: tool_calls is a {type(calls).__name__}; expected a list")
        for c in calls:
            fn = c.get("function") if isinstance(c, dict) else None
            fn = fn if isinstance(fn, dict) else {}
            parts.append({"type": "tool_call", "id": c.get("id") if isinstance(c, dict) else None,
                          "name": fn.get("name"), "arguments": fn.get("arguments")})
        if role == "tool":
            parts = [{"type": "tool_call_response", "id": message.get("tool_call_id")
                      or body.get("id"), "response": text}]
        return here, {"role": role, "parts": parts}

    def history(self) -> list[tuple[str, Any]]:
        if self.flat and "gen_ai.input.messages" not in self.attrs:
            return _otel_flat.history(self.flat, self.attrs, self.here)
        if "gen_ai.input.messages" not in self.attrs and self.events:
            return [self._event(k, n, a) for k, (n, a) in enumerate(self.events)
                    if n.endswith(".message")]
        system = self.json("gen_ai.system_instructions")
        out = [(f"{self.here}, gen_ai.system_instructions", {"role": "system", "parts": system})]
        out = out if system else []
        return out + [(f"{self.here}, gen_ai.input.messages {k}", m)
                      for k, m in enumerate(self.json("gen_ai.input.messages"))]

    def response(self) -> list[tuple[str, Any]]:
        if self.flat and "gen_ai.output.messages" not in self.attrs:
            return _otel_flat.response(self.flat, self.attrs, self.here)
        if "gen_ai.output.messages" not in self.attrs and self.events:
            choices = [self._event(k, n, a) for k, (n, a) in enumerate(self.events)
                       if n == "gen_ai.choice"]
            parts = [p for _, m in choices for p in m["parts"]]
            return [(choices[0][0], {"role": "assistant", "parts": parts})] if choices else []
        outputs = self.json("gen_ai.output.messages")
        if not all(isinstance(m, dict) and isinstance(m.get("parts"), list) for m in outputs):
            raise InputError(f"{self.here}, gen_ai.output.messages: expected messages "
                             "{role, parts: [...]}")
        parts = [p for m in outputs for p in m["parts"]]
        return [(f"{self.here}, gen_ai.output.messages", {"role": "assistant", "parts": parts})
                ] if outputs else []


def _key(message: Any) -> str:
    """A message as compared across spans: its role and parts, arguments parsed, reasoning
    left out (an output's reasoning is often not sent back in the next input)."""
    if not isinstance(message, dict):
        return repr(message)
    parts = []
    given = message.get("parts")
    for p in given if isinstance(given, list) else [given]:
        if isinstance(p, dict) and p.get("type") == "reasoning":
            continue
        if isinstance(p, dict) and isinstance(p.get("arguments"), str):
            with contextlib.suppress(JSONError):  # compared as text, then refused when read
                p = {**p, "arguments": loads(p["arguments"])}
        parts.append(p)
    return json.dumps([message.get("role"), parts], sort_keys=True, default=str)


def read_message(builder: TurnBuilder, message: Any, here: str) -> list[Turn]:
    """Add the turns of one GenAI message ``{role, parts}`` to ``builder``."""
    if not isinstance(message, dict) or not isinstance(message.get("parts"), list):
        raise InputError(f"{here}: expected a message {{role, parts: [...]}}")
    role = name_of(message.get("role"))
    texts, calls, turns, thought = [], CallList(), [], False
    for j, p in enumerate(message["parts"]):
        where = f"{here}, part {j}"
        kind = name_of(p.get("type")) if isinstance(p, dict) else None
        if kind == "text":
            if not isinstance(p.get("content"), str):
                raise InputError(f"{where}: a text part without content text")
            texts.append(p["content"])
        elif kind == "tool_call" and role == "assistant":
            calls.append(tool_call(p.get("id"), p.get("name"), p.get("arguments"), where, calls))
        elif kind == "tool_call_response" and role in {"tool", "user"}:
            turns.append(builder.tool(p.get("id"), as_text(p.get("response")), where, fix=_FIX))
        elif kind == "reasoning":
            thought = True
        elif kind in _MEDIA:
            modality = p.get("modality")
            texts.append(IMAGE if modality == "image" else AUDIO if modality == "audio" else FILE)
        else:
            raise InputError(f"{where}: a {kind!r} part in a {role!r} message is not read (read: "
                             "text, tool_call from the assistant, tool_call_response, reasoning, "
                             "blob, file_data, uri); remove it or convert it")
    if role == "assistant":
        return [] if thought and not texts and not calls else [
            builder.assistant(join_parts(texts), calls, here)]
    if role == "system":
        return [builder.system(join_parts(texts), here)]
    if role not in {"user", "tool"}:
        raise InputError(f"{here}: a message with role {role!r}; expected system, user, "
                         "assistant or tool")
    if texts or not turns:
        turns.append(builder.user(join_parts(texts), here))
    return turns


class _Thread:
    """One conversation being rebuilt: its messages, the keys of its messages, the start of
    its last chat span, the bucket it is filed under, and per message the span that first
    carried it (sent it to the model, or returned it)."""

    __slots__ = ("messages", "keys", "last", "bucket", "spans")

    def __init__(self, messages: list[tuple[str, Any]], keys: list[str], last: tuple[int, int],
                 bucket: tuple[int, int], spans: list[_Span]):
        self.messages, self.keys, self.last, self.bucket = messages, keys, last, bucket
        self.spans = spans


def _prefix_hashes(keys: list[str]) -> list[int]:
    """``out[n]``: a hash of ``keys[:n]``, for every n (one pass)."""
    out, h = [0], 0
    for k in keys:
        h = hash((h, k))
        out.append(h)
    return out


def _threads(chats: list[_Span]) -> list[_Thread]:
    """The conversations of one trace's chat spans (taken by start time), each with the start
    of its last chat span and, per message, the span that first carried it.

    A span continues the longest thread whose messages its history starts with (the earliest
    such thread on a tie); the thread then moves to the end of the order. Threads are filed
    by (length, hash of their message keys), so each prefix of a span's history is looked up
    once: time linear in the messages of the spans (comparing every thread with every span
    was quadratic in the spans of a trace).
    """
    order: dict[int, _Thread] = {}  # live threads, in the order they were last continued
    buckets: dict[tuple[int, int], dict[int, None]] = {}
    for made, span in enumerate(sorted(chats, key=lambda s: s.start)):
        history = span.history()
        keys = [_key(m) for _, m in history]
        hashes = _prefix_hashes(keys)
        chosen, carried = None, []
        for n in range(len(keys), -1, -1):
            for t in buckets.get((n, hashes[n]), ()):
                if order[t].keys == keys[:n]:
                    chosen = t
                    break
            if chosen is not None:
                break
        if chosen is not None:
            carried = order[chosen].spans
            del buckets[order[chosen].bucket][chosen]
            del order[chosen]
        response = span.response()
        all_keys = keys + [_key(m) for _, m in response]
        h = hashes[-1]
        for k in all_keys[len(keys):]:
            h = hash((h, k))
        bucket = (len(all_keys), h)
        spans = carried + [span] * (len(all_keys) - len(carried))
        order[made] = _Thread(history + response, all_keys, span.start, bucket, spans)
        buckets.setdefault(bucket, {})[made] = None
    return list(order.values())


def _read(source: Source) -> list[Conversation]:
    where = f"{source.label} ({TITLE})"
    spans = [_Span(raw, k, where) for k, raw in enumerate(_spans(source, where))]
    chats = [s for s in spans if s.is_chat]
    if not chats:
        raise InputError(f"{where}: no GenAI chat spans with messages (gen_ai.input.messages, "
                         "gen_ai.output.messages; OpenLLMetry's gen_ai.prompt.<i>.*; "
                         "OpenInference's llm.input_messages.<i>.*); turn on message capture in the "
                         "instrumentation (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT)")
    groups: dict[str, list[_Span]] = {}
    for s in sorted(chats, key=lambda s: s.start):
        groups.setdefault(s.key, []).append(s)
    # Tool spans by conversation, grouped once (a scan of every span per conversation was
    # quadratic in an export of many traces).
    tools_of: dict[str, list[_Span]] = {}
    for s in sorted((s for s in spans if s.operation == "execute_tool"), key=lambda s: s.start):
        tools_of.setdefault(s.key, []).append(s)
    out = []
    for key, group in groups.items():
        threads = _threads(group)
        tools = tools_of.get(key, [])
        tool_span = {s.attrs["gen_ai.tool.call.id"]: s for s in tools
                     if isinstance(s.attrs.get("gen_ai.tool.call.id"), str)}
        for k, thread in enumerate(threads):
            builder = TurnBuilder(where)
            carried: list[_Span] = []  # per turn, the span it was read from
            for (here, m), span in zip(thread.messages, thread.spans):
                read_message(builder, m, here)
                carried += [span] * (len(builder.turns) - len(carried))
            unanswered = set(builder.unanswered()) if tools else set()
            for s in tools:  # tools run after the last model call: their results end the run
                call_id = s.attrs.get("gen_ai.tool.call.id")
                if s.start > thread.last and isinstance(call_id, str) and call_id in unanswered \
                        and "gen_ai.tool.call.result" in s.attrs:
                    builder.tool(call_id, as_text(s.attrs["gen_ai.tool.call.result"]), s.here,
                                 fix=_FIX)
                    carried.append(s)
                    unanswered.discard(call_id)
            # A tool result's own span is the execute_tool span that ran its call, where one
            # is logged; any other turn's, the chat span that first carried its message.
            turn_spans = [tool_span.get(t.tool_call_id or "", span)
                          for t, span in zip(builder.turns, carried)]
            cid = f"{source.stem}/{key}" + (f"/{k}" if len(threads) > 1 else "")
            ids = ({"conversation_id": key} if "gen_ai.conversation.id" in group[0].attrs
                   else {"session_id": key} if "session.id" in group[0].attrs
                   else {"trace_id": key})
            out.append(builder.conversation(
                id=cid, source=TRANSCRIPT_SOURCE, domain="transcript",
                metadata=conversation_metadata(
                    origin=source.origin(NAME, **ids),
                    otel_spans=[{"trace_id": s.trace_id, "span_id": s.span_id}
                                for s in turn_spans])))
    return out


def _sniff(source: Source) -> int:
    value = source.value
    exports = value if isinstance(value, list) else [value]
    return SURE if exports and all(isinstance(e, dict) and "resourceSpans" in e
                                   for e in exports) else NO


def _sniff_message(message: Any) -> int:
    """A GenAI message ``{role, parts}`` as the instrumented agent holds it."""
    return SURE if isinstance(message, dict) and "parts" in message else NO


register_format(LogFormat(
    NAME, TITLE, "an OTLP JSON export {resourceSpans: [{scopeSpans: [{spans}]}]} of GenAI chat "
    "spans", _sniff, _read, order=40, sniff_message=_sniff_message, read_message=read_message))
