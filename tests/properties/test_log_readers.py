"""The agent-log reader (every format, detected or forced), given arbitrary JSON shaped a
little like each format's logs, either reads it or raises one InputError line that names the
file (exit 3): never another exception. What it reads is a valid conversation."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mtcabench.errors import ExitCode, InputError
from mtcabench.model import Conversation
from mtcabench.transcripts import format_names, read_conversations

scalars = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
           | st.text(max_size=6))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)
ids = st.sampled_from(["c1", "c2", ""]) | values
parts = st.fixed_dictionaries({"type": st.sampled_from(
    ["text", "tool_call", "tool_call_response", "reasoning", "blob", "input_text", "output_text",
     "tool_use", "tool_result", "thinking", "image", "odd"]) | values}, optional={
    "text": st.text(max_size=5) | values, "content": st.text(max_size=5) | values,
    "id": ids, "name": st.sampled_from(["f", ""]) | values, "arguments": values
    | st.sampled_from(["{}", "{", "[1]"]), "input": values, "tool_use_id": ids,
    "response": values, "modality": st.sampled_from(["image", "x"])})
messages = st.fixed_dictionaries({}, optional={
    "role": st.sampled_from(["system", "user", "assistant", "tool", "developer", "x"]) | values,
    "type": st.sampled_from(["message", "function_call", "function_call_output", "reasoning",
                             "web_search_call"]) | values,
    "content": st.text(max_size=5) | st.lists(parts, max_size=3) | values,
    "parts": st.lists(parts, max_size=3) | values, "call_id": ids, "name": values,
    "arguments": values, "output": values, "tool_call_id": ids, "function": values,
    "tool_calls": st.lists(st.fixed_dictionaries({}, optional={
        "id": ids, "function": values | st.fixed_dictionaries(
            {"name": st.sampled_from(["f", "g"])}, optional={"arguments": values})}),
        max_size=2) | values})


def attr(key: str, value) -> dict:
    return {"key": key, "value": value}


spans = st.fixed_dictionaries({}, optional={
    "traceId": ids, "spanId": ids, "name": values, "startTimeUnixNano": values
    | st.sampled_from(["12", "x"]),
    "attributes": st.lists(st.builds(attr, st.sampled_from(
        ["gen_ai.operation.name", "gen_ai.input.messages", "gen_ai.output.messages",
         "gen_ai.system_instructions", "gen_ai.tool.call.id", "gen_ai.tool.call.result",
         "gen_ai.conversation.id",
         # the flattened forms (OpenLLMetry, OpenInference)
         "gen_ai.prompt.0.role", "gen_ai.prompt.0.content", "gen_ai.prompt.1.tool_call_id",
         "gen_ai.prompt.0.tool_calls.0.name", "gen_ai.completion.0.content",
         "gen_ai.completion.0.tool_calls.0.id", "gen_ai.completion.0.role",
         "llm.input_messages.0.message.role", "llm.input_messages.0.message.content",
         "llm.input_messages.0.message.contents.0.message_content.type",
         "llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
         "llm.output_messages.0.message.role", "openinference.span.kind", "session.id",
         "llm.request.type"]), st.fixed_dictionaries({}, optional={
            "stringValue": st.sampled_from(["chat", "execute_tool", "[", "c1", "user", "tool",
                                            "assistant", "LLM", "thinking"])
            | st.lists(messages, max_size=3).map(json.dumps) | values,
            "intValue": values, "arrayValue": values, "kvlistValue": values})), max_size=8)
    | values,
    "events": st.lists(st.fixed_dictionaries({"name": st.sampled_from(
        ["gen_ai.user.message", "gen_ai.choice", "gen_ai.tool.message"])}, optional={
            "attributes": st.lists(st.builds(attr, st.just("gen_ai.event.content"),
                                             st.fixed_dictionaries({"stringValue": values | st.just("{")})),
                                   max_size=1)}), max_size=2)})
logs = (st.lists(messages, max_size=4)
        | st.fixed_dictionaries({}, optional={"messages": st.lists(messages, max_size=4) | values,
                                              "system": values, "instructions": values,
                                              "input": st.lists(messages, max_size=3) | values,
                                              "output": st.lists(messages, max_size=3) | values})
        | st.fixed_dictionaries({"resourceSpans": st.lists(st.fixed_dictionaries({}, optional={
            "scopeSpans": st.lists(st.fixed_dictionaries({}, optional={
                "spans": st.lists(spans, max_size=4) | values}), max_size=2) | values}),
            max_size=2) | values})
        | st.fixed_dictionaries({"eval": values}, optional={
            "version": values, "samples": st.lists(st.fixed_dictionaries({}, optional={
                "id": values, "epoch": values, "messages": st.lists(messages, max_size=4)
                | values}), max_size=2) | values})
        | values)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(logs, st.sampled_from([None, *format_names()]), st.booleans())
def test_every_format_reads_or_refuses_in_one_line(log, format, lines):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "agent-log.json"
        text = (("\n".join(json.dumps(x) for x in log) + "\n") if lines and isinstance(log, list)
                else json.dumps(log))
        path.write_text(text, encoding="utf-8")
        try:
            convs = read_conversations(path, format)
        except InputError as exc:
            assert exc.exit_code == ExitCode.BAD_INPUT
            assert exc.message.startswith(str(path)), exc.message
            assert "\n" not in exc.message, exc.message
            return
        assert convs and all(isinstance(c, Conversation) and c.turns for c in convs)
