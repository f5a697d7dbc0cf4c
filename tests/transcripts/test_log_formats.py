"""Agent logs in every format (no model): one support conversation of our own written as an
OpenAI chat list, an OpenAI Responses request, an Anthropic Messages request, an OTLP JSON
export of OpenTelemetry GenAI spans (written out of order) and an Inspect AI log (.json and
.eval) reads to the same records and the same explain graphs; TauBench runs converted to the
four other formats read back to `ingest taubench`'s turns; every bad log is one line, exit 3,
no output."""

from __future__ import annotations

import copy
import json
import re
import sys
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode, InputError
from mtcabench.explainer import explain_conversation, resolve_targets
from mtcabench.ingest import read_taubench
from mtcabench.io import load_conversations
from mtcabench.model import Role
from mtcabench.transcripts import (
    LiveReader,
    Source,
    conversations_from_value,
    detect,
    formats,
    load,
    read_conversations,
    read_transcript,
)

ROOT = Path(__file__).resolve().parents[2]
LOGS = Path(__file__).parent / "logs"
FILES = {"openai-chat": LOGS / "support.chat.json",
         "openai-responses": LOGS / "support.responses.json",
         "anthropic-messages": LOGS / "support.anthropic.json",
         "otel-genai": LOGS / "support.otel.json",
         "inspect-ai": LOGS / "support.inspect.json"}
runner = CliRunner()


def inspect_archive(tmp_path: Path) -> Path:
    """support.inspect.json as Inspect writes a .eval archive: a header, one file per sample."""
    log = json.loads(FILES["inspect-ai"].read_text())
    path = tmp_path / "support.eval"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("header.json", json.dumps({k: v for k, v in log.items() if k != "samples"}))
        for s in log["samples"]:
            z.writestr(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s))
    return path


def all_logs(tmp_path: Path) -> dict[str, Path]:
    return {**FILES, "inspect-ai (.eval)": inspect_archive(tmp_path)}


def record(conv) -> dict:
    """A conversation record less what names its file (the id and metadata.origin) and, for
    a trace, the turns' spans (metadata.otel_spans)."""
    data = conv.model_dump(mode="json")
    meta = data.pop("metadata")
    meta.pop("otel_spans", None)
    assert meta == {"origin": conv.metadata["origin"]}
    data.pop("id")
    return data


def test_each_format_is_recognised_and_reads_the_same_records(tmp_path):
    logs = all_logs(tmp_path)
    for fmt, path in FILES.items():
        assert detect(load(path)).name == fmt
    records = {name: [record(c) for c in read_conversations(p)] for name, p in logs.items()}
    chat = records["openai-chat"]
    assert len(chat) == 1 and all(r == chat for r in records.values())
    conv = read_transcript(FILES["anthropic-messages"])
    # system turn 0; parallel calls in one turn; each result its own turn, named after its
    # call; content parts joined one per line; thinking dropped; the user's text after results
    assert [t.role for t in conv.turns] == [Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.TOOL,
                                            Role.ASSISTANT, Role.TOOL, Role.TOOL, Role.USER,
                                            Role.ASSISTANT]
    assert [c.id for c in conv.turns[4].tool_calls] == ["call_b1", "call_b2"]
    assert [(t.tool_call_id, t.name) for t in conv.turns[5:7]] == [
        ("call_b1", "get_booking"), ("call_b2", "get_booking")]
    assert conv.turns[1].content == "Hi, I am customer C-2044.\nCan you check my two bookings?"
    assert conv.turns[2].text == 'get_customer({"customer_id": "C-2044"})'
    # ids: the file's stem, then the log's own ids; the origin names file and format
    otel = read_transcript(FILES["otel-genai"])
    assert otel.id == "support.otel/4bf92f3577b34da6a3ce929d0e0e4736"
    assert otel.metadata["origin"] == {"file": "support.otel.json", "format": "otel-genai",
                                       "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736"}
    # each turn's span: the chat span that first carried its message, a tool result's own
    # execute_tool span (what explain --otlp-* links and --phoenix annotates)
    assert [s["span_id"][-2:] for s in otel.metadata["otel_spans"]] == [
        "01", "01", "01", "02", "03", "04", "05", "06", "06"]
    assert {s["trace_id"] for s in otel.metadata["otel_spans"]} == {
        "4bf92f3577b34da6a3ce929d0e0e4736"}
    assert read_transcript(logs["inspect-ai (.eval)"]).id == "support/support-1/epoch-1"


def test_ingest_transcripts_writes_one_record_per_conversation(tmp_path):
    out = tmp_path / "conversations.jsonl"
    paths = list(all_logs(tmp_path).values())
    res = runner.invoke(app, ["ingest", "transcripts", *map(str, paths), "--out", str(out),
                              "--domain", "skyway"])
    assert res.exit_code == 0, res.output
    convs = load_conversations(out)
    assert sorted(convs) == sorted(["support.chat", "support.responses", "support.anthropic",
                                    "support.otel/4bf92f3577b34da6a3ce929d0e0e4736",
                                    "support.inspect/support-1/epoch-1",
                                    "support/support-1/epoch-1"])
    assert {c.domain for c in convs.values()} == {"skyway"}
    assert len({json.dumps(record(c)) for c in convs.values()}) == 1
    # a second conversation in one log: two Inspect samples, two ids
    log = json.loads(FILES["inspect-ai"].read_text())
    log["samples"].append(dict(log["samples"][0], epoch=2))
    two = tmp_path / "two.json"
    two.write_text(json.dumps(log))
    assert [c.id for c in read_conversations(two)] == ["two/support-1/epoch-1",
                                                      "two/support-1/epoch-2"]


def test_identical_explain_graphs_model_free(tmp_path):
    graphs = {}
    for name, path in all_logs(tmp_path).items():
        out = tmp_path / name.replace(" ", "_")
        res = runner.invoke(app, ["explain", str(path), "--turn", "8", "--span", "BK-7Q2",
                                  "--method", "recency", "--method", "first-user",
                                  "--out", str(out)])
        assert res.exit_code == 0, res.output
        result = json.loads((out / "explain.json").read_text())
        graphs[name] = [t["graphs"] for t in result["targets"]]
    assert all(g == graphs["openai-chat"] for g in graphs.values())
    assert graphs["openai-chat"][0]["recency"]["edges"]  # a graph with edges, not an empty one
    # the Python API reads every format too, from the log as a value
    for path in FILES.values():
        conv = conversations_from_value(json.loads(path.read_text()))[0]
        targets = resolve_targets(conv, turn=8, span="BK-9Z4")
        result = explain_conversation(conv, targets, methods=["recency"])
        assert [g.model_dump() for g in result.graphs["recency"]] == [
            g.model_dump() for g in explain_conversation(
                read_transcript(FILES["openai-chat"]), targets, methods=["recency"]
            ).graphs["recency"]]


def test_live_reader_reads_each_format_as_it_comes():
    """What an agent loop hands the Tracer, message by message, gives the file's turns."""
    expected = read_transcript(FILES["openai-chat"]).turns
    anthropic = json.loads(FILES["anthropic-messages"].read_text())
    responses = json.loads(FILES["openai-responses"].read_text())
    otel = json.loads(FILES["otel-genai"].read_text())
    chat3 = next(s for r in otel["resourceSpans"] for sc in r["scopeSpans"] for s in sc["spans"]
                 if s["spanId"].endswith("0006"))
    attrs = {a["key"]: json.loads(a["value"]["stringValue"]) for a in chat3["attributes"]
             if a["key"].startswith("gen_ai.") and a["key"].endswith(("messages", "tions"))}
    feeds = {
        "anthropic": [{"role": "system", "content": anthropic["system"][0]["text"]},
                      *anthropic["messages"]],
        # a response's output items together, each input item alone
        "responses": [{"role": "system", "content": responses["instructions"]},
                      *responses["input"][:1], responses["input"][1:3], responses["input"][3],
                      responses["input"][4:7], *responses["input"][7:], responses["output"]],
        "otel": [{"role": "system", "parts": attrs["gen_ai.system_instructions"]},
                 *attrs["gen_ai.input.messages"], *attrs["gen_ai.output.messages"]],
        "inspect": json.loads(FILES["inspect-ai"].read_text())["samples"][0]["messages"],
    }
    for name, messages in feeds.items():
        reader = LiveReader(name)
        for m in messages:
            reader.add(m)
        assert reader.turns == expected, name
    reader = LiveReader("live")
    reader.add(feeds["anthropic"][0])
    reader.add(feeds["anthropic"][1])
    assert reader.read(feeds["anthropic"][2]) and len(reader.turns) == 2  # read records nothing
    reader.add(responses["output"])
    with pytest.raises(InputError, match=r"live, message 3: a model response's item after a "
                                         r"model response; add the output items"):
        reader.add(responses["input"][2])
    with pytest.raises(InputError, match=r"live, message 3, block 0: tool result answers call "
                                         r"'call_b1', which no earlier turn issued"):
        reader.add(anthropic["messages"][4])


def test_format_is_forced_and_unknown_or_ambiguous_files_list_the_formats(tmp_path):
    with pytest.raises(InputError, match=r"support.chat.json \(Anthropic Messages\), message 0: "
                                         r"a message with role 'system'"):
        read_transcript(FILES["openai-chat"], format="anthropic-messages")
    mixed = json.loads(FILES["openai-chat"].read_text())
    mixed[2] = json.loads(FILES["anthropic-messages"].read_text())["messages"][1]
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps({"messages": mixed}))
    with pytest.raises(InputError, match=r"mixed.json: ambiguous agent log"):
        read_transcript(path)
    path.write_text(json.dumps({"spans": []}))
    with pytest.raises(InputError) as err:
        read_transcript(path)
    assert "not a transcript of a known format" in err.value.message
    assert all(f.name in err.value.message for f in formats())
    res = runner.invoke(app, ["explain", "--help"], terminal_width=2000)
    assert all(f.name in res.output for f in formats()), res.output
    with pytest.raises(InputError, match="unknown log format 'xml'; choose one of openai-chat"):
        read_transcript(FILES["openai-chat"], format="xml")


# --------------------------------------------------------------------------- bad logs


def edited(fmt: str, change) -> object:
    value = json.loads(FILES[fmt].read_text())
    change(value)
    return value


def _otel_spans(v):
    return [s for r in v["resourceSpans"] for sc in r["scopeSpans"] for s in sc["spans"]]


def _otel_attr(v, span_end: str, key: str, text: str):
    span = next(s for s in _otel_spans(v) if s["spanId"].endswith(span_end))
    next(a for a in span["attributes"] if a["key"] == key)["value"] = {"stringValue": text}


BAD = {
    "chat-unknown-call": ("openai-chat", lambda v: v[5].update(tool_call_id="call_x"),
                          ["message 5", "tool result answers call 'call_x'", "fix its tool_call_id"]),
    "chat-unknown-part": ("openai-chat", lambda v: v[1]["content"].append({"type": "video"}),
                          ["message 1", "unknown content part type 'video'"]),
    "chat-empty": ("openai-chat", lambda v: v.clear(), ["an empty list"]),
    "responses-unknown-call": ("openai-responses",
                               lambda v: v["input"][3].update(call_id="call_x"),
                               ["(OpenAI Responses), input item 3", "'call_x'", "fix its call_id"]),
    "responses-builtin-item": ("openai-responses", lambda v: v["output"].insert(
        0, {"type": "web_search_call", "id": "ws_1", "status": "completed"}),
        ["output item 0", "a 'web_search_call' item has no place", "function_call_output"]),
    "responses-empty": ("openai-responses", lambda v: (v.pop("instructions"), v.update(
        input=[], output=[])), ["(OpenAI Responses): no messages"]),
    "anthropic-unknown-call": ("anthropic-messages", lambda v: v["messages"][4]["content"][1]
                               .update(tool_use_id="call_x"),
                               ["message 4, block 1", "'call_x'", "fix its tool_use_id"]),
    "anthropic-unknown-block": ("anthropic-messages", lambda v: v["messages"][3]["content"].append(
        {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {}}),
        ["message 3, block 3", "unknown block type 'server_tool_use'"]),
    "anthropic-empty": ("anthropic-messages", lambda v: v.update(system="", messages=[]),
                        ["(Anthropic Messages): no messages"]),
    "otel-broken-json": ("otel-genai", lambda v: _otel_attr(
        v, "0003", "gen_ai.input.messages", '[{"role": "user", "parts": [}'),
        ["span 'chat gpt-4.1' (a1b2c3d4e5f60003)", "gen_ai.input.messages is not JSON"]),
    "otel-unknown-call": ("otel-genai", lambda v: [
        _otel_attr(v, end, "gen_ai.input.messages", json.dumps([
            {"role": "user", "parts": [{"type": "text", "content": "hi"}]},
            {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_x",
                                        "response": "1"}]}])) for end in ("0001",)],
        ["gen_ai.input.messages 1, part 0", "'call_x'"]),
    "otel-unknown-part": ("otel-genai", lambda v: _otel_attr(
        v, "0006", "gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": [
            {"type": "server_tool_call", "id": "x"}]}])),
        ["gen_ai.output.messages, part 0", "a 'server_tool_call' part"]),
    "otel-superscript-start": ("otel-genai", lambda v: _otel_spans(v)[0].update(
        startTimeUnixNano="\u00b2"), ["startTimeUnixNano is '\u00b2'; expected nanoseconds"]),
    "otel-huge-start": ("otel-genai", lambda v: _otel_spans(v)[0].update(
        startTimeUnixNano="9" * 5000), ["startTimeUnixNano is '999", "expected nanoseconds"]),
    "otel-empty": ("otel-genai", lambda v: v.update(resourceSpans=[]),
                   ["(OpenTelemetry GenAI): no GenAI chat spans"]),
    "inspect-unknown-call": ("inspect-ai", lambda v: v["samples"][0]["messages"][6].update(
        tool_call_id="call_x"), ["sample 0 (id support-1, epoch 1), message 6", "'call_x'"]),
    "inspect-unknown-content": ("inspect-ai", lambda v: v["samples"][0]["messages"][7].update(
        content=[{"type": "data", "data": {}}]), ["message 7, content part 0", "a 'data' part"]),
    "inspect-empty": ("inspect-ai", lambda v: v.update(samples=[]), ["no samples in the log"]),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_logs_are_one_line_exit_3_and_no_output(case, tmp_path):
    fmt, change, needles = BAD[case]
    src = tmp_path / f"{case}.json"
    src.write_text(json.dumps(edited(fmt, change)))
    good = FILES["openai-chat"]
    out = tmp_path / "out.jsonl"
    res = runner.invoke(app, ["ingest", "transcripts", str(good), str(src), "--out", str(out)])
    assert res.exit_code == ExitCode.BAD_INPUT, res.output
    errors = [x for x in res.output.splitlines() if x.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in res.output, res.output
    for needle in [src.name, *needles]:
        assert needle in errors[0], errors[0]
    assert not out.exists() and not list(tmp_path.glob(".out.jsonl.*"))


def test_bad_eval_archive(tmp_path):
    path = tmp_path / "broken.eval"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("header.json", "{}")
        z.writestr("samples/1_epoch_1.json", '{"id": 1, "messages": [')
    with pytest.raises(InputError, match=r"broken.eval \(Inspect AI\), samples/1_epoch_1.json: "
                                         "malformed JSON"):
        read_conversations(path)


# --------------------------------------------------------------------------- TauBench runs


def test_taubench_runs_in_every_format_read_back_as_ingest_reads_them(taubench_airline, tmp_path):
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import convert_taubench
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    convs = list(read_taubench(taubench_airline))
    # runs that end with a tool result and with a user turn, and a call id reused in one run
    chosen = [c for c in convs if c.task_id in {"37", "33"} and c.trial == 0] + convs[:3]
    assert {c.turns[-1].role for c in chosen} == {Role.TOOL, Role.USER}
    plan = convert_taubench.write_all(chosen, tmp_path)
    # tau2's results rebuild the system turn from a policy with tau2's template, so a tau-bench
    # run's system prompt has no tau2 form that reads back the same (tests/transcripts/test_tau2*)
    assert set(plan) >= {f.name for f in formats() if f.name not in {
        "openai-chat", "taubench", "tau2", "confetti", "conversations"}}
    for fmt, files in plan.items():
        read = {c.id: c for p in {p for p, _ in files.values()} for c in read_conversations(p)}
        for c in chosen:
            assert convert_taubench.same_turns(c, read[files[c.id][1]]), (fmt, c.id)


def test_the_otel_reader_rebuilds_a_trace_whatever_the_span_order():
    export = json.loads(FILES["otel-genai"].read_text())
    reversed_export = copy.deepcopy(export)
    spans = _otel_spans(reversed_export)[::-1]
    reversed_export["resourceSpans"] = [{"scopeSpans": [{"spans": spans}]}]
    assert conversations_from_value(reversed_export)[0].turns == read_transcript(
        FILES["otel-genai"]).turns


def test_each_turns_span_whatever_the_id_encoding_and_without_tool_spans():
    """metadata.otel_spans: ids written as base64 (a protobuf JSON printer's bytes) read as
    the same hex; where a trace has no execute_tool span, a tool result's span is the chat
    span that first sent it to the model; the span order does not matter."""
    import base64

    export = json.loads(FILES["otel-genai"].read_text())
    hexed = read_transcript(FILES["otel-genai"]).metadata["otel_spans"]
    b64 = copy.deepcopy(export)
    for span in _otel_spans(b64):
        for key in ("traceId", "spanId", "parentSpanId"):
            if span.get(key):
                span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    assert conversations_from_value(b64)[0].metadata["otel_spans"] == hexed
    reordered = copy.deepcopy(export)
    reordered["resourceSpans"] = [{"scopeSpans": [{"spans": _otel_spans(reordered)[::-1]}]}]
    assert conversations_from_value(reordered)[0].metadata["otel_spans"] == hexed
    no_tools = copy.deepcopy(export)
    no_tools["resourceSpans"] = [{"scopeSpans": [{"spans": [
        s for s in _otel_spans(no_tools) if "execute_tool" not in s["name"]]}]}]
    conv = conversations_from_value(no_tools)[0]
    spans = [s["span_id"][-2:] for s in conv.metadata["otel_spans"]]
    # the tool results (turns 3, 5, 6) on the chat spans that sent them (03, then 06)
    assert spans == ["01", "01", "01", "03", "03", "06", "06", "06", "06"]
    assert [t.role for t in conv.turns][3] is Role.TOOL


def test_the_docs_examples_read_in_their_format():
    """docs/ingest.md's example per format is a log of that format (the docs stay in step)."""
    text = (ROOT / "docs" / "ingest.md").read_text()
    blocks = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", text, re.S)]
    formats = [detect(Source(b)).name for b in blocks]
    assert formats == ["openai-chat", "openai-responses", "anthropic-messages", "otel-genai",
                       "inspect-ai"]
    for b in blocks:
        conv = conversations_from_value(b)[0]
        assert conv.turns[0].role is Role.SYSTEM and "C-2044" in conv.turns[1].text


def test_the_older_otel_event_form_reads_as_the_same_conversation():
    """Chat spans with one span event per message (`gen_ai.<role>.message`, `gen_ai.choice`,
    the chat message as JSON in `gen_ai.event.content`, as Azure AI Inference's tracing writes
    them) give the same turns."""
    messages = json.loads(FILES["openai-chat"].read_text())

    def event(name: str, body: dict) -> dict:
        return {"name": name, "timeUnixNano": "1", "attributes": [
            {"key": "gen_ai.system", "value": {"stringValue": "az.ai.inference"}},
            {"key": "gen_ai.event.content", "value": {"stringValue": json.dumps(body)}}]}

    spans = []
    for k, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        events = [event(f"gen_ai.{h['role']}.message", h) for h in messages[:k]]
        choice = {"content": m["content"]} | ({"tool_calls": m["tool_calls"]}
                                               if m.get("tool_calls") else {})
        events.append(event("gen_ai.choice", {"message": choice, "finish_reason": "stop",
                                               "index": 0}))
        spans.append({"traceId": "ab" * 16, "spanId": f"{k:016x}", "name": "chat gpt-4o",
                      "startTimeUnixNano": str(1000 + k), "events": events, "attributes": [
                          {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}]})
    export = {"resourceSpans": [{"scopeSpans": [{"spans": spans[::-1]}]}]}
    assert conversations_from_value(export)[0].turns == read_transcript(FILES["openai-chat"]).turns
    spans[1]["events"][2]["attributes"][1]["value"]["stringValue"] = '{"role": "assistant", '
    with pytest.raises(InputError, match=r"event 2 \(gen_ai.assistant.message\): "
                                         r"gen_ai.event.content is not JSON"):
        conversations_from_value(export)


def _flat_export(messages: list[dict], flatten, *, span_attrs: list[dict]) -> dict:
    """An OTLP export with one chat span per assistant message of ``messages``, its history
    and response flattened by ``flatten(prefix_kind, index, message) -> {key: value}``;
    the spans listed last first (as exporters write them, by end)."""
    spans = []
    for k, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        attrs: dict = {}
        for i, h in enumerate(messages[:k]):
            attrs |= flatten("in", i, h)
        attrs |= flatten("out", 0, m)
        spans.append({"traceId": "cd" * 16, "spanId": f"{k:016x}", "name": "openai.chat",
                      "startTimeUnixNano": str(1000 + k), "attributes": span_attrs + [
                          {"key": key, "value": {"stringValue": str(v)}}
                          for key, v in attrs.items() if v is not None]})
    return {"resourceSpans": [{"scopeSpans": [{"spans": spans[::-1]}]}]}


def _openllmetry(kind: str, i: int, m: dict) -> dict:
    """A message as OpenLLMetry's instrumentations flatten it (non-text content as JSON)."""
    p = f"gen_ai.{'prompt' if kind == 'in' else 'completion'}.{i}"
    content = m.get("content")
    out = {f"{p}.role": m["role"], f"{p}.tool_call_id": m.get("tool_call_id"),
           f"{p}.content": content if isinstance(content, str) or content is None
           else json.dumps(content)}
    for j, c in enumerate(m.get("tool_calls") or []):
        out |= {f"{p}.tool_calls.{j}.id": c["id"], f"{p}.tool_calls.{j}.name":
                c["function"]["name"], f"{p}.tool_calls.{j}.arguments": c["function"]["arguments"]}
    return out


def _openinference(kind: str, i: int, m: dict) -> dict:
    """A message as OpenInference's instrumentations flatten it (content parts one by one)."""
    p = f"llm.{'input' if kind == 'in' else 'output'}_messages.{i}.message"
    content = m.get("content")
    out = {f"{p}.role": m["role"], f"{p}.tool_call_id": m.get("tool_call_id")}
    if isinstance(content, str):
        out[f"{p}.content"] = content
    for j, part in enumerate(content if isinstance(content, list) else []):
        out |= {f"{p}.contents.{j}.message_content.type": part["type"],
                f"{p}.contents.{j}.message_content.text": part["text"]}
    for j, c in enumerate(m.get("tool_calls") or []):
        q = f"{p}.tool_calls.{j}.tool_call"
        out |= {f"{q}.id": c["id"], f"{q}.function.name": c["function"]["name"],
                f"{q}.function.arguments": c["function"]["arguments"]}
    return out


def test_flattened_otel_forms_read_as_the_same_conversation(tmp_path):
    """Chat spans with their messages flattened into indexed attributes, as OpenLLMetry
    (`gen_ai.prompt.<i>.*`, `gen_ai.completion.<i>.*`) and OpenInference
    (`llm.input_messages.<i>.message.*`) write them, give the chat log's turns; OpenInference
    spans are grouped by `session.id`; Claude's content blocks inside OpenLLMetry's JSON
    content give the Anthropic log's turns."""
    messages = json.loads(FILES["openai-chat"].read_text())
    chat = read_transcript(FILES["openai-chat"]).turns
    llm = [{"key": "llm.request.type", "value": {"stringValue": "chat"}}]
    export = _flat_export(messages, _openllmetry, span_attrs=llm)
    [conv] = conversations_from_value(export)
    assert conv.turns == chat and conv.metadata["origin"]["trace_id"] == "cd" * 16
    # As a file, through detection and `ingest transcripts`: the chat log's record.
    path = tmp_path / "run.openllmetry.json"
    path.write_text(json.dumps(export))
    assert detect(load(path)).name == "otel-genai"
    out = tmp_path / "conversations.jsonl"
    res = runner.invoke(app, ["ingest", "transcripts", str(path), str(FILES["openai-chat"]),
                              "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert len({json.dumps(record(c)) for c in load_conversations(out).values()}) == 1

    session = [{"key": "openinference.span.kind", "value": {"stringValue": "LLM"}},
               {"key": "session.id", "value": {"stringValue": "sess-7"}}]
    export = _flat_export(messages, _openinference, span_attrs=session)
    [conv] = conversations_from_value(export)
    assert conv.turns == chat and conv.metadata["origin"]["session_id"] == "sess-7"
    assert conv.id.endswith("/sess-7")

    # Claude through OpenLLMetry: system first, content blocks as JSON, thinking dropped.
    log = json.loads(FILES["anthropic-messages"].read_text())
    claude = [{"role": "system", "content": log["system"][0]["text"]}] + [
        {"role": m["role"], "content": m["content"]} for m in log["messages"]]
    export = _flat_export(claude, _openllmetry, span_attrs=llm)
    [conv] = conversations_from_value(export)
    assert conv.turns == read_transcript(FILES["anthropic-messages"]).turns

    # Embedding and tool spans of the same instrumentations are not chat spans.
    other = _flat_export(messages, _openinference, span_attrs=[
        {"key": "openinference.span.kind", "value": {"stringValue": "EMBEDDING"}}])
    with pytest.raises(InputError, match="no GenAI chat spans with messages"):
        conversations_from_value(other)
    # A message without a role, and a content block that is not read: one line naming it.
    export = _flat_export(messages, _openllmetry, span_attrs=llm)
    span = export["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span["attributes"] = [a for a in span["attributes"] if a["key"] != "gen_ai.prompt.3.role"]
    with pytest.raises(InputError, match=r"gen_ai.prompt.3: a message without a role"):
        conversations_from_value(export)
    export = _flat_export(messages, _openllmetry, span_attrs=llm)
    span = export["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span["attributes"].append({"key": "gen_ai.prompt.1.content", "value": {
        "stringValue": json.dumps([{"type": "server_tool_use", "id": "x"}])}})
    with pytest.raises(InputError, match=r"gen_ai.prompt.1, part 0: a content part of type "
                                         r"'server_tool_use' is not read"):
        conversations_from_value(export)
