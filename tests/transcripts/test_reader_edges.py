"""Shapes the agent-log readers met from careless or hostile logs: Inspect samples without an
id or with an object id, negative or boolean OTel start times, two logs of one name in
different folders ingested together, thousands of parallel calls and chat spans (linear: the
readers give the same turns as before, the speed is benchmarks/transcript_readers.py's)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode, InputError
from mtcabench.io import load_conversations
from mtcabench.transcripts import LiveReader, conversations_from_value, id_stems, read_conversations

runner = CliRunner()
MESSAGES = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]


def _inspect(tmp_path: Path, samples: list) -> Path:
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"version": 2, "eval": {}, "samples": samples}), encoding="utf-8")
    return path


def test_inspect_samples_without_an_id_are_named_by_position(tmp_path):
    path = _inspect(tmp_path, [{"messages": MESSAGES}, {"id": None, "messages": MESSAGES}])
    ids = [c.id for c in read_conversations(path)]
    assert ids == ["run/sample-0/epoch-1", "run/sample-1/epoch-1"]
    assert "None" not in " ".join(ids)


@pytest.mark.parametrize("sid", [{"a": 1}, [1, 2], True, 1.5])
def test_an_inspect_sample_id_that_is_no_text_or_number_is_refused(tmp_path, sid):
    path = _inspect(tmp_path, [{"id": sid, "messages": MESSAGES}])
    with pytest.raises(InputError, match="sample id is a"):
        read_conversations(path)


def test_inspect_numeric_ids_read_as_before(tmp_path):
    path = _inspect(tmp_path, [{"id": 7, "epoch": 2, "messages": MESSAGES}])
    conv = read_conversations(path)[0]
    assert conv.id == "run/7/epoch-2"
    assert conv.metadata["origin"]["sample_id"] == 7


def _otel(start) -> dict:
    attrs = [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
             {"key": "gen_ai.input.messages", "value": {"stringValue": json.dumps(
                 [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}])}},
             {"key": "gen_ai.output.messages", "value": {"stringValue": json.dumps(
                 [{"role": "assistant", "parts": [{"type": "text", "content": "yo"}]}])}}]
    return {"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "t", "spanId": "s", "name": "chat", "startTimeUnixNano": start,
         "attributes": attrs}]}]}]}


@pytest.mark.parametrize("start", [-5, True, False, "-5", 1.5, "1e9"])
def test_an_otel_start_time_that_is_no_nanosecond_count_is_refused(tmp_path, start):
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(_otel(start)), encoding="utf-8")
    with pytest.raises(InputError, match="startTimeUnixNano"):
        read_conversations(path)


@pytest.mark.parametrize("start", [0, 1700000000000000000, "1700000000000000000", None])
def test_otel_start_times_that_are_counts_read(tmp_path, start):
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(_otel(start)), encoding="utf-8")
    assert read_conversations(path)[0].turns[-1].content == "yo"


def test_two_logs_of_one_name_in_different_folders_ingest_together(tmp_path):
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "trace.json").write_text(json.dumps(MESSAGES), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    res = runner.invoke(app, ["ingest", "transcripts", str(tmp_path / "a" / "trace.json"),
                              str(tmp_path / "b" / "trace.json"), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert sorted(load_conversations(out)) == ["a/trace", "b/trace"]


def test_id_stems_keep_unique_stems_and_refuse_nothing_for_the_same_file(tmp_path):
    assert id_stems([tmp_path / "x" / "one.json", tmp_path / "y" / "two.json"]) == ["one", "two"]
    same = tmp_path / "x" / "one.json"
    assert id_stems([same, same]) == ["one", "one"]
    deep = [tmp_path / "r1" / "logs" / "t.json", tmp_path / "r2" / "logs" / "t.json"]
    assert id_stems(deep) == ["r1/logs/t", "r2/logs/t"]


def test_the_same_log_given_twice_is_still_a_duplicate(tmp_path):
    log = tmp_path / "trace.json"
    log.write_text(json.dumps(MESSAGES), encoding="utf-8")
    res = runner.invoke(app, ["ingest", "transcripts", str(log), str(log), "--out",
                              str(tmp_path / "o.jsonl")])
    assert res.exit_code == ExitCode.BAD_INPUT and "duplicate" in res.output


def test_many_parallel_calls_read_with_a_reused_id_still_refused():
    n = 3000
    calls = [{"id": f"c{k}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
             for k in range(n)]
    results = [{"role": "tool", "tool_call_id": f"c{k}", "content": str(k)} for k in range(n)]
    conv = conversations_from_value([{"role": "user", "content": "go"},
                                     {"role": "assistant", "content": None, "tool_calls": calls},
                                     *results])[0]
    assert len(conv.turns[1].tool_calls) == n and conv.turns[-1].name == "f"
    calls[-1]["id"] = "c0"
    with pytest.raises(InputError, match="used twice in one message"):
        conversations_from_value([{"role": "user", "content": "go"},
                                  {"role": "assistant", "content": None, "tool_calls": calls}])


def test_many_sub_agent_chat_spans_in_one_trace_give_one_conversation_each(tmp_path):
    spans = []
    for k in range(400):
        attrs = [{"key": "gen_ai.input.messages", "value": {"stringValue": json.dumps(
                     [{"role": "user", "parts": [{"type": "text", "content": f"task {k}"}]}])}},
                 {"key": "gen_ai.output.messages", "value": {"stringValue": json.dumps(
                     [{"role": "assistant", "parts": [{"type": "text", "content": f"d{k}"}]}])}}]
        spans.append({"traceId": "t", "spanId": f"s{k}", "startTimeUnixNano": str(k),
                      "attributes": attrs})
    # and one span continuing sub-agent 7's conversation
    history = [{"role": "user", "parts": [{"type": "text", "content": "task 7"}]},
               {"role": "assistant", "parts": [{"type": "text", "content": "d7"}]},
               {"role": "user", "parts": [{"type": "text", "content": "more"}]}]
    spans.append({"traceId": "t", "spanId": "late", "startTimeUnixNano": "1000", "attributes": [
        {"key": "gen_ai.input.messages", "value": {"stringValue": json.dumps(history)}},
        {"key": "gen_ai.output.messages", "value": {"stringValue": json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": "done"}]}])}}]})
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}),
                    encoding="utf-8")
    convs = read_conversations(path)
    assert len(convs) == 400
    # the continued thread moved to the end, with its five turns
    assert [t.content for t in convs[-1].turns] == ["task 7", "d7", "more", "done"]
    assert [t.content for t in convs[0].turns] == ["task 0", "d0"]


def test_the_live_reader_reads_ahead_without_recording():
    reader = LiveReader()
    reader.add({"role": "user", "content": "go"})
    ahead = reader.read({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]})
    assert len(ahead) == 1 and len(reader.turns) == 1
    with pytest.raises(InputError, match="no earlier turn issued"):
        reader.read({"role": "tool", "tool_call_id": "c1", "content": "r"})
    reader.append(ahead[0])
    reader.done()
    assert reader.read({"role": "tool", "tool_call_id": "c1", "content": "r"})[0].name == "f"


LONE = "\ud83d"  # the first half of the pair of "😀": a string cut inside an emoji


@pytest.mark.parametrize("message, what", [
    ({"role": "user", "content": f"My order {LONE} is R-1."}, "content at character 9"),
    ({"role": "assistant", "content": None, "tool_calls": [{
        "id": "c1", "type": "function",
        "function": {"name": "find", "arguments": {"q": f"R-1{LONE}"}}}]},
     "the arguments of call 'c1'"),
])
def test_a_lone_surrogate_in_a_message_is_one_input_error(message, what):
    """Python values can hold half of a UTF-16 pair (a file cannot: the JSON reader refuses
    the escape); a tokenizer failed on it with a TypeError. Every reader, the live one too,
    refuses it where the message's turns are built, naming the message."""
    messages = [{"role": "system", "content": "Be brief."}, message]
    with pytest.raises(InputError, match=rf"message 1: a lone surrogate '\\ud83d' in its {what}"):
        conversations_from_value(messages)
    reader = LiveReader("tracer t")
    reader.add(messages[0])
    with pytest.raises(InputError, match=rf"tracer t, message 1: a lone surrogate .* {what}"):
        reader.add(message)
    assert len(reader.turns) == 1


def test_a_conversation_given_as_it_is_is_checked_too():
    from mtcabench.explainer import as_conversation
    from mtcabench.model import Conversation, Role, Turn

    conv = Conversation(id="c", source="test", domain="d", turns=[
        Turn(index=0, role=Role.USER, content="Hi"),
        Turn(index=1, role=Role.ASSISTANT, content=f"Hello {LONE}")])
    with pytest.raises(InputError, match=r"conversation c, turn 1: a lone surrogate"):
        as_conversation(conv)


USER = {"role": "user", "content": "hi"}
CALL = {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]}


@pytest.mark.parametrize(("value", "fmt", "where", "what"), [
    ([USER, CALL, {"role": "user", "content": 5}], "anthropic-messages", "message 2",
     "content is int; expected text or a list of content blocks"),
    ([{"role": "user", "content": [{"text": "x"}]}], "anthropic-messages", "message 0, block 0",
     "expected a content block object with a type"),
    ([USER, "x"], "anthropic-messages", "message 1", "expected a message object, got str"),
    ([{"type": "message", "role": "user", "content": "hi"}, 3], "openai-responses", "item 1",
     "expected an item object, got int"),
    ([{"type": "message", "role": "tool", "content": "hi"}], "openai-responses", "item 0",
     "a message with role 'tool'; expected user, assistant, system or developer"),
    ("just text", "openai-responses", "(OpenAI Responses)",
     "expected {instructions, input, output} or a list of items"),
])
def test_a_log_of_the_wrong_shape_is_one_error_naming_where(value, fmt, where, what):
    """Each reader's refusals, one by one (the property tests reach them only by chance)."""
    with pytest.raises(InputError) as err:
        conversations_from_value(value, fmt)
    assert f"{where}: {what}" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("epoch", [-1, "2", 1.5, True])
def test_an_inspect_sample_epoch_that_is_no_whole_number_is_refused(tmp_path, epoch):
    path = _inspect(tmp_path, [{"id": "a", "epoch": epoch, "messages": MESSAGES}])
    with pytest.raises(InputError, match=r"sample 0: the sample epoch is .*; expected a whole "):
        read_conversations(path)


def test_a_responses_reasoning_item_alone_makes_no_turn():
    items = [{"type": "message", "role": "user", "content": "hi"},
             {"type": "reasoning", "summary": []},
             {"type": "message", "role": "user", "content": "again"},
             {"type": "message", "role": "assistant", "content": "ok"}]
    turns = conversations_from_value(items, "openai-responses")[0].turns
    assert [(t.role.value, t.text) for t in turns] == [("user", "hi"), ("user", "again"),
                                                        ("assistant", "ok")]
