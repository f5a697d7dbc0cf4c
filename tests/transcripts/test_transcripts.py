"""The transcript reader: OpenAI chat messages of our own, TauBench runs, our records, and
every bad input as one line naming the file and message (no model needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode, InputError, UsageError
from mtcabench.explainer import resolve_targets
from mtcabench.ingest import read_taubench
from mtcabench.io import write_records
from mtcabench.model import Role
from mtcabench.openai_content import message_text
from mtcabench.transcripts import (
    MessageReader,
    content_text,
    conversation_from_messages,
    read_transcript,
    target_span,
)

HERE = Path(__file__).parent / "examples"
REFUND = HERE / "refund_agent.json"
WEATHER = HERE / "weather_agent.jsonl"


def write(tmp_path: Path, name: str, value) -> Path:
    path = tmp_path / name
    path.write_text(value if isinstance(value, str) else json.dumps(value), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- OpenAI messages


def test_content_parts_and_parallel_tool_calls():
    conv = read_transcript(REFUND)
    assert conv.id == "refund_agent" and conv.source == "transcript"
    roles = [t.role for t in conv.turns]
    assert roles == [Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.TOOL, Role.TOOL,
                     Role.ASSISTANT, Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]
    # text parts joined with a line break
    assert conv.turns[1].content == ("Hi, I would like a refund for my order A-7731.\n"
                                     "My email is dana.ruiz@example.com.")
    # two calls in one assistant message, arguments parsed from their JSON strings
    calls = conv.turns[2].tool_calls
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("call_order", "lookup_order", {"order_id": "A-7731"}),
        ("call_customer", "lookup_customer", {"email": "dana.ruiz@example.com"})]
    assert conv.turns[2].text == ('lookup_order({"order_id": "A-7731"})\n'
                                  'lookup_customer({"email": "dana.ruiz@example.com"})')
    # each result answers its call; a result without a name takes its call's
    assert [conv.call_turn(3), conv.call_turn(4)] == [2, 2]
    assert (conv.turns[3].name, conv.turns[4].name) == ("lookup_order", "lookup_customer")
    assert conv.turns[7].tool_calls[0].arguments == {"order_id": "A-7731", "amount": 18.4}
    assert json.loads(conv.turns[8].content)["refund_id"] == "R-99120"  # a tool's text part
    assert conv.turns[9].content.endswith("approved.\nIt should reach your card within 5 days.")


def test_json_lines_developer_role_and_results_out_of_order():
    conv = read_transcript(WEATHER)
    assert conv.turns[0].role is Role.SYSTEM  # developer: system instructions
    assert conv.turns[2].content == "Let me check both cities."
    assert [conv.turns[3].tool_call_id, conv.turns[4].tool_call_id] == ["fc_2", "fc_1"]
    assert conv.call_turn(3) == conv.call_turn(4) == 2
    assert "Oslo" in conv.turns[3].content and conv.turns[4].name == "get_forecast"


def test_messages_object_and_python_lists_read_alike(tmp_path):
    messages = json.loads(REFUND.read_text())
    obj = read_transcript(write(tmp_path, "wrapped.json", {"id": "chat-42", "messages": messages}))
    assert obj.id == "chat-42"
    assert obj.turns == read_transcript(REFUND).turns == conversation_from_messages(messages).turns


def test_refusal_and_empty_arguments():
    conv = conversation_from_messages([
        {"role": "user", "content": "Book me a flight to Mars."},
        {"role": "assistant", "content": None, "refusal": "I cannot book flights to Mars."},
        {"role": "user", "content": "Then list my trips."},
        {"role": "assistant", "content": [{"type": "refusal", "refusal": "Not allowed."}],
         "tool_calls": [{"id": "t1", "type": "function",
                         "function": {"name": "list_trips", "arguments": ""}}]},
    ])
    assert conv.turns[1].content == "I cannot book flights to Mars."
    assert conv.turns[3].content == "Not allowed." and conv.turns[3].tool_calls[0].arguments == {}


def test_reader_reads_without_recording_until_appended():
    reader = MessageReader("live")
    turn = reader.read({"role": "user", "content": "hi"})
    assert reader.turns == [] and turn.index == 0
    reader.append(turn)
    reader.add({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]})
    assert reader.read({"role": "tool", "tool_call_id": "c1", "content": "1"}).name == "f"
    with pytest.raises(InputError, match=r"live, message 2: tool result answers call 'c2'"):
        reader.read({"role": "tool", "tool_call_id": "c2", "content": "1"})


def test_content_text_reads_parts_as_ingest_does():
    assert content_text(None, "m") == ""
    assert content_text([{"type": "text", "text": "a"}, {"type": "output_text", "text": "b"}],
                        "m") == "a\nb"
    # The one normaliser (ingest's too): a part without text stays where it was, as a
    # placeholder; an unknown part is refused, naming the message and the part.
    parts = [{"type": "text", "text": "look:"}, {"type": "input_audio", "input_audio": {}}]
    assert content_text(parts, "m") == message_text(parts) == "look:\n[audio]"
    with pytest.raises(InputError, match=r"^m: content part 0: unknown content part type 'video'"):
        content_text([{"type": "video"}], "m")
    with pytest.raises(InputError, match=r"^m: content part 1: expected an object"):
        content_text([{"type": "text", "text": "a"}, "b"], "m")
    with pytest.raises(InputError, match=r"content part 0: a text part whose text is NoneType"):
        content_text([{"type": "text"}], "m")
    with pytest.raises(InputError, match=r"content is int"):
        content_text(3, "m")


def test_an_image_part_is_a_placeholder_in_the_turn():
    conversation = read_transcript(HERE / "image_part.json")
    assert conversation.turns[0].text == "What is in this receipt?\n[image]"


@pytest.mark.parametrize(("messages", "message"), [
    ([{"role": "user", "content": "x"},
      {"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{"}}]}],
     r"message 1, tool call 0: arguments are not JSON"),
    ([{"role": "assistant", "tool_calls": [{"id": "a", "function": {
        "name": "f", "arguments": '{"a": ' * 5000 + "1" + "}" * 5000}}]}],
     r"tool call 0: arguments are not JSON \(nested more than 200 levels deep"),
    ([{"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "[1]"}}]}],
     r"message 0, tool call 0: arguments are a list; expected a JSON object"),
    ([{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]}],
     r"message 0, tool call 0 \(f\): has no id"),
    ([{"role": "assistant", "tool_calls": [
        {"id": "a", "function": {"name": "f", "arguments": "{}"}},
        {"id": "a", "function": {"name": "g", "arguments": "{}"}}]}],
     r"call id 'a' used twice in one message"),
    ([{"role": "function", "name": "f", "content": "1"}], r"message 0: a legacy 'function' message"),
    ([{"role": "robot", "content": "1"}], r"message 0: unknown role 'robot'"),
    ([{"role": "tool", "content": "1"}], r"message 0: a tool message needs the tool_call_id"),
    ([{"role": "user", "content": "x", "tool_calls": []}, "not a message"],
     r"message 1: expected a chat message object, got str"),
    ([], r"no messages"),
])
def test_bad_messages(messages, message):
    with pytest.raises(InputError, match=message):
        conversation_from_messages(messages)


def test_unknown_call_id_names_file_message_and_fix():
    with pytest.raises(InputError) as err:
        read_transcript(HERE / "bad_unknown_call.json")
    text = err.value.message
    assert text.startswith(f"{HERE / 'bad_unknown_call.json'} (OpenAI chat), message 2: tool "
                           "result answers call 'call_b'")
    assert "latest call ids: call_a" in text and "fix its tool_call_id" in text
    assert "\n" not in text


def test_bad_files(tmp_path):
    cases = {
        "not-utf8.json": (b"\xff\xfe[", "UTF-16 text, not UTF-8"),
        "bad-byte.json": (b"[\xff]", "not UTF-8 text"),
        "torn.json": ('[{"role": "user", "content": "hi"}', "malformed JSON"),
        "empty.json": ("  \n", "empty file"),
        "empty-list.json": ("[]", "an empty list"),
        "number.json": ("42", "not a transcript"),
        "mixed.jsonl": ('{"role": "user", "content": "a"}\n{"kind": "span"}\n', "not a transcript of a known format"),
        "bad-line.jsonl": ('{"role": "user", "content": "a"}\n{"role": \n', r"jsonl:2: malformed JSON"),
        "deep.json": ("[" * 100000 + "]" * 100000, "nested more than 200 levels deep"),
    }
    for name, (data, reason) in cases.items():
        path = tmp_path / name
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
        with pytest.raises(InputError, match=reason) as err:
            read_transcript(path)
        assert str(path) in err.value.message, name
    with pytest.raises(InputError, match="no such file"):
        read_transcript(tmp_path / "missing.json")


# --------------------------------------------------------------------------- TauBench, records


def test_taubench_run_file_and_single_run_read_as_ingest_does(sample_path, tmp_path):
    ingested = {c.task_id: c for c in read_taubench(sample_path)}
    with pytest.raises(InputError, match=r"holds 3 conversations; choose one with --conversation"):
        read_transcript(sample_path)
    conv = read_transcript(sample_path, "task-s2")
    assert conv.id == ingested["s2"].id == "taubench/airline/sample/task-s2/trial-0"
    assert conv.turns == ingested["s2"].turns and conv.metadata["reward"] == 1.0
    assert read_transcript(sample_path, "2").id == ingested["s3"].id  # by position
    assert read_transcript(sample_path, ingested["s1"].id).turns == ingested["s1"].turns
    # one run object, as TauBench's runner logs each task
    run = json.loads(sample_path.read_text())[1]
    single = read_transcript(write(tmp_path, "run.json", run))
    assert single.id == "taubench/task-s2/trial-0" and single.turns == ingested["s2"].turns
    with pytest.raises(InputError, match=r"no conversation 'task-s9'"):
        read_transcript(sample_path, "task-s9")
    bad = write(tmp_path, "bad-run.json", [run, {"task_id": 9, "traj": "oops"}])
    with pytest.raises(InputError, match=r"bad-run.json: run 1 \(task 9, trial None\): 'traj' is not a list"):
        read_transcript(bad, "0")


def test_real_taubench_file(taubench_airline):
    conv = read_transcript(taubench_airline, "task-12/trial-3")
    ingested = next(c for c in read_taubench(taubench_airline) if c.id == conv.id)
    assert conv.id == "taubench/airline/gpt-4o/task-12/trial-3"
    assert conv.turns == ingested.turns
    with pytest.raises(InputError, match=r"'task-12' names 4 conversations"):
        read_transcript(taubench_airline, "task-12")


def test_conversation_records(sample_path, tmp_path):
    convs = list(read_taubench(sample_path))
    many = tmp_path / "conversations.jsonl"
    write_records(many, convs)
    assert read_transcript(many, convs[1].id) == convs[1]
    assert read_transcript(many, "task-s3/trial-0") == convs[2]
    with pytest.raises(InputError, match=r"holds 3 conversations.*taubench/airline/sample/task-s1"):
        read_transcript(many)
    one = tmp_path / "one.jsonl"
    write_records(one, convs[:1])
    assert read_transcript(one) == convs[0]
    with pytest.raises(InputError, match="holds one conversation"):
        read_transcript(REFUND, "0")


# --------------------------------------------------------------------------- targets


def test_targets_from_text_offsets_values_and_default():
    conv = read_transcript(REFUND)
    last = conv.turns[9]
    (whole,) = resolve_targets(conv)
    assert (whole.turn, whole.start, whole.end) == (9, 0, len(last.content))
    (by_text,) = resolve_targets(conv, turn=9, span="R-99120")
    assert by_text.text == "R-99120" and last.text[by_text.start:by_text.end] == "R-99120"
    (by_offsets,) = resolve_targets(conv, turn=5, start=0, end=6)
    assert by_offsets.text == "Thanks"
    values = [t.text for t in resolve_targets(conv, turn=9, values=True)]
    assert values == ["R-99120", "18.40", "A-7731"]  # in text order, as the lineage finds them
    # a call-only assistant turn: its whole text (the call lines)
    assert target_span(conv, 7).text.startswith("issue_refund(")


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"turn": 9, "span": "R-1"}, r"'R-1' does not occur in turn 9"),
    ({"turn": 1, "span": "Hi"}, r"turn 1 is a user turn"),
    ({"turn": 40}, r"no turn 40 \(it has 10 turns"),
    ({"turn": 9, "start": 5, "end": 500}, r"span 5-500 is not inside turn 9's text"),
    ({"turn": 2, "values": True}, r"turn 2: no id-, date- or amount-like value"),
])
def test_bad_targets(kwargs, message):
    with pytest.raises(InputError, match=message):
        resolve_targets(read_transcript(REFUND), **kwargs)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"turn": 9, "start": 5}, r"--start and --end go together"),
    ({"turn": 9, "span": "x", "start": 1, "end": 2}, r"not both"),
    ({"turn": 9, "values": True, "span": "x"}, r"leave out --span"),
])
def test_options_that_do_not_go_together_are_usage_errors(kwargs, message):
    with pytest.raises(UsageError, match=message):
        resolve_targets(read_transcript(REFUND), **kwargs)


def test_span_without_turn_is_in_the_last_answer():
    conv = read_transcript(REFUND)
    (by_text,) = resolve_targets(conv, span="R-99120")
    assert by_text.turn == 9 and by_text == resolve_targets(conv, turn=9, span="R-99120")[0]
    (by_offsets,) = resolve_targets(conv, start=0, end=5)
    assert by_offsets.turn == 9 and by_offsets.text == conv.turns[9].text[:5]


def test_cli_usage_mistakes_exit_2_before_any_model_is_loaded():
    runner = CliRunner()
    for args in (["--start", "5"], ["--span", "x", "--start", "1", "--end", "2"],
                 ["--values", "--span", "x"]):
        res = runner.invoke(app, ["explain", str(REFUND), *args])
        assert res.exit_code == ExitCode.USAGE, (args, res.output)
        lines = [x for x in res.output.splitlines() if x.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: "), res.output


def test_cli_bad_input_is_one_line_and_exit_3():
    runner = CliRunner()
    for name, where in (("bad_unknown_call.json", "message 2"),
                        ("bad_unknown_part.json", "message 0")):
        res = runner.invoke(app, ["explain", str(HERE / name)])
        assert res.exit_code == ExitCode.BAD_INPUT, res.output
        lines = [x for x in res.output.splitlines() if x.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: ") and where in lines[0]
    res = runner.invoke(app, ["explain", str(REFUND), "--turn", "9", "--span", "R-0"])
    assert res.exit_code == ExitCode.BAD_INPUT and "does not occur in turn 9" in res.output


def test_a_long_span_that_does_not_occur_is_quoted_as_a_bounded_excerpt():
    """A 100,000-character --span made a 100 KB error line: the message quotes its start."""
    res = CliRunner().invoke(app, ["explain", str(REFUND), "--turn", "9",
                                   "--span", "R-0 " + "x" * 100_000])
    assert res.exit_code == ExitCode.BAD_INPUT, res.output[:300]
    lines = [x for x in res.output.splitlines() if x.strip()]
    assert len(lines) == 1 and len(lines[0]) < 400, lines[0][:300]
    assert "'R-0 xxx" in lines[0] and "does not occur in turn 9" in lines[0]
    conv = read_transcript(REFUND)
    span = target_span(conv, 9, "R-99120").model_copy(update={"text": "y" * 100_000})
    with pytest.raises(InputError, match="is not at") as err:
        target_span(conv, 9, span)
    assert len(str(err.value)) < 400



def test_a_bad_out_is_refused_before_anything_is_explained(tmp_path, monkeypatch):
    """--out naming a file (or a page path that is a folder) was refused only when the pages
    were written, after the model had run."""
    import mtcabench.explainer

    def not_now(*args, **kwargs):
        raise AssertionError("explained before --out was checked")

    monkeypatch.setattr(mtcabench.explainer, "explain_conversation", not_now)
    a_file = tmp_path / "a-file"
    a_file.write_text("mine\n")
    res = CliRunner().invoke(app, ["explain", str(REFUND), "--out", str(a_file)])
    assert res.exit_code == ExitCode.BAD_INPUT, res.output
    assert "exists and is not a folder" in res.output and a_file.read_text() == "mine\n"
    (tmp_path / "out" / "explain.json").mkdir(parents=True)
    res = CliRunner().invoke(app, ["explain", str(REFUND), "--out", str(tmp_path / "out")])
    assert res.exit_code == ExitCode.BAD_INPUT, res.output
    assert "explain.json: is a folder" in res.output

def test_cli_refuses_to_overwrite_its_input(tmp_path):
    copy = tmp_path / "explain.json"
    copy.write_text(REFUND.read_text())
    res = CliRunner().invoke(app, ["explain", str(copy), "--out", str(tmp_path)])
    assert res.exit_code == ExitCode.BAD_INPUT and "this output is the input" in res.output
    assert copy.read_text() == REFUND.read_text()
