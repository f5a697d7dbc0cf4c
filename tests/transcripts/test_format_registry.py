"""The log-format registry (no model): each format declares, in its one LogFormat, how it
recognises and reads its whole files and its single messages, and the two agree: every
message of a format's sample file is recognised by the registry as that format (or, for a
plain message every format reads alike, as OpenAI chat, giving the same turns); the Tracer's
LiveReader takes the messages of any registered format, a new one included; ConFETTI is a
format like the others; and a second format, method, provider or phase under a taken name
is refused by the registry's one rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mtcabench.errors import InputError
from mtcabench.model import Role, Turn
from mtcabench.transcripts import (
    BUILT_IN,
    FORMATS,
    NO,
    SURE,
    LiveReader,
    LogFormat,
    TurnBuilder,
    detect,
    detect_message,
    format_names,
    formats,
    get_format,
    load,
    read_conversations,
    read_transcript,
    register_format,
)

from mtcabench.transcripts._tau2 import system_turn

ROOT = Path(__file__).resolve().parents[2]
#: The sample file of each format with messages of its own: support.<this>.json.
FILES = {"openai-chat": "chat", "openai-responses": "responses",
         "anthropic-messages": "anthropic", "otel-genai": "otel", "inspect-ai": "inspect",
         "tau2": "tau2"}


def sample(name: str) -> Path:
    """One support conversation of ours, logged in each format (tests/.../logs/; tau2's,
    whose system turn is rebuilt from the policy, in tests/transcripts/tau2/)."""
    return next((ROOT / "tests").rglob(f"support.{name}.json"))


def _response_item(item: dict) -> bool:
    kind = item.get("type", "message")
    return kind in {"function_call", "reasoning"} or (kind == "message"
                                                      and item.get("role") == "assistant")


def _grouped(items: list[dict]) -> list:
    """Responses items as an agent hands them over: a model response's items together."""
    out: list = []
    for item in items:
        if _response_item(item) and out and isinstance(out[-1], list):
            out[-1].append(item)
        else:
            out.append([item] if _response_item(item) else item)
    return out


def _otel_messages(log: dict) -> tuple[str, list]:
    spans = [s for r in log["resourceSpans"] for sc in r["scopeSpans"] for s in sc["spans"]]
    attrs = [{a["key"]: a["value"].get("stringValue") for a in s["attributes"]} for s in spans]
    last = max((a for a in attrs if a.get("gen_ai.operation.name") == "chat"),
               key=lambda a: len(json.loads(a["gen_ai.input.messages"])))
    system = json.loads(last["gen_ai.system_instructions"])
    return (system[0]["content"], [*json.loads(last["gen_ai.input.messages"]),
                                   *json.loads(last["gen_ai.output.messages"])])


def messages_of(name: str) -> tuple[str | None, list]:
    """The system text kept outside the messages (None: it is a message), and the messages of
    a format's sample file, as an agent loop holds them."""
    log = json.loads(sample(FILES[name]).read_text())
    if name == "openai-chat":
        return None, log
    if name == "openai-responses":
        return log["instructions"], _grouped(log["input"] + log["output"])
    if name == "anthropic-messages":
        return log["system"][0]["text"], log["messages"]
    if name == "otel-genai":
        return _otel_messages(log)
    if name == "tau2":  # the system prompt is rebuilt from the policy, as the reader does
        info = log["info"]
        system, _ = system_turn(info["environment_info"]["policy"],
                                info["agent_info"]["implementation"], info["git_commit"])
        return system, log["simulations"][0]["messages"]
    return None, log["samples"][0]["messages"]


MESSAGE_FORMATS = list(FILES)


def test_every_format_with_messages_is_listed_and_declares_both_readers():
    with_messages = [f.name for f in formats() if f.sniff_message is not None]
    assert with_messages == MESSAGE_FORMATS
    assert all(f.read_message is not None for f in formats() if f.sniff_message is not None)
    # Files of whole runs or records have no messages of their own.
    assert {f.name for f in formats()} - set(with_messages) == {"taubench", "confetti",
                                                                "conversations"}
    assert format_names() == list(BUILT_IN)


@pytest.mark.parametrize("name", MESSAGE_FORMATS)
def test_a_formats_messages_are_recognised_as_its_own_and_read_to_its_files_turns(name):
    """File recognition and message recognition agree: the file is this format, each of its
    messages is this format or a plain message (OpenAI chat) that this format's own message
    reader reads to the same turns, and the messages read one by one give the file's turns."""
    fmt = get_format(name)
    path = sample(FILES[name])
    assert detect(load(path)) is fmt
    system, messages = messages_of(name)
    own, detected = TurnBuilder("own"), TurnBuilder("detected")
    if system is not None:
        own.system(system, "system")
        detected.system(system, "system")
    seen = []
    for k, m in enumerate(messages):
        found = detect_message(m, f"message {k}")
        seen.append(found.name)
        assert found.name in {name, "openai-chat"}, (k, found.name)
        assert fmt.read_message(own, m, f"message {k}") == \
            found.read_message(detected, m, f"message {k}"), k
    assert name in seen  # the format's marks are recognised, not only the plain fallback
    assert own.turns == read_transcript(path).turns


def test_each_formats_marked_messages_are_no_other_formats():
    """No message of one format's sample has the marks of another (detect_message would
    refuse it as ambiguous); plain messages are chat's alone, as PLAUSIBLE."""
    for name in MESSAGE_FORMATS:
        for m in messages_of(name)[1]:
            sure = [f.name for f in formats()
                    if f.sniff_message is not None and f.sniff_message(m) == SURE]
            assert sure in ([name], []), (name, m, sure)


def test_a_message_with_the_marks_of_two_formats_or_none_is_refused():
    both = {"role": "assistant", "parts": [{"type": "text", "content": "hi"}],
            "content": [{"type": "tool_use", "id": "c1", "name": "f", "input": {}}]}
    with pytest.raises(InputError, match=r"live, message 0: ambiguous message: it has the "
                                         r"marks of Anthropic Messages and OpenTelemetry GenAI"):
        LiveReader("live").add(both)
    with pytest.raises(InputError, match=r"live, message 0: expected a message object or a "
                                         r"list of Responses items, got str"):
        LiveReader("live").add("hello")


@pytest.fixture
def toy_format():
    """A format of one's own: ``{"speaker": ..., "said": ...}`` messages, one per line."""
    roles = {"agent": "assistant", "human": "user"}

    def sniff_message(message):
        return SURE if isinstance(message, dict) and "speaker" in message else NO

    def read_message(builder: TurnBuilder, message, here: str) -> list[Turn]:
        if message["speaker"] not in roles:
            raise InputError(f"{here}: speaker {message['speaker']!r}; expected agent or human")
        if roles[message["speaker"]] == "user":
            return [builder.user(message["said"], here)]
        return [builder.assistant(message["said"], [], here)]

    def sniff(source):
        value = source.value
        return SURE if isinstance(value, list) and value and all(
            sniff_message(m) == SURE for m in value) else NO

    def read(source):
        builder = TurnBuilder(source.label)
        for k, m in enumerate(source.value):
            read_message(builder, m, f"{source.label}, message {k}")
        return [builder.conversation(id=source.stem, source="transcript", domain="transcript")]

    fmt = register_format(LogFormat("toy-speakers", "Toy speakers", "{speaker, said} lines",
                                    sniff, read, order=90, sniff_message=sniff_message,
                                    read_message=read_message))
    yield fmt
    FORMATS.unregister(fmt.name)


def test_a_registered_format_is_read_from_files_and_taken_message_by_message(toy_format,
                                                                             tmp_path):
    lines = [{"speaker": "human", "said": "Where is my parcel?"},
             {"speaker": "agent", "said": "It left Lyon today."}]
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in lines))
    (conv,) = read_conversations(path)
    assert [t.role for t in conv.turns] == [Role.USER, Role.ASSISTANT]
    reader = LiveReader("live")
    for m in lines:
        reader.add(m)
    reader.add({"role": "user", "content": "Thanks."})  # formats mix: a chat message after
    assert reader.turns[:2] == conv.turns and reader.turns[2].content == "Thanks."
    with pytest.raises(InputError, match=r"live, message 3: speaker 'bot'"):
        reader.add({"speaker": "bot", "said": "?"})
    assert "toy-speakers" in format_names()


def test_a_second_format_under_a_taken_name_is_refused_the_same_one_is_harmless():
    chat = get_format("openai-chat")
    assert register_format(chat) is chat
    with pytest.raises(ValueError, match="log format 'openai-chat' registered twice"):
        register_format(LogFormat("openai-chat", "Another chat", "?", chat.sniff, chat.read))
    assert get_format("openai-chat") is chat


def test_confetti_is_a_format_like_the_others(tmp_path):
    """A ConFETTI file is recognised from its shape and read as `ingest confetti` reads it."""
    from mtcabench.ingest import read_confetti as ingest_reader
    from mtcabench.transcripts import read_confetti

    assert ingest_reader is read_confetti
    turns = [{"role": "user", "content": "Weather in Paris?", "content_type": "text"},
             {"role": "assistant", "content": 'get_weather(city="Paris")',
              "content_type": "function_call"},
             {"role": "tool", "content": "sunny", "content_type": "function_output"}]
    lines = [{"id": f"conversationsclean_{k}", "dialog_id": f"u-1_{k}",
              "question": turns[: k + 1], "function": []} for k in range(3)]
    path = tmp_path / "confetti.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert detect(load(path)).name == "confetti"
    (conv,) = read_conversations(path)
    assert conv == next(read_confetti(path))
    assert conv.id == "confetti/u-1" and [t.role for t in conv.turns] == [
        Role.USER, Role.ASSISTANT, Role.TOOL]
    lines[1]["question"] = [turns[0], {**turns[1], "content": "not(a call"}]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    with pytest.raises(InputError, match=r"confetti.jsonl.*line 3"):
        read_conversations(path)


@pytest.mark.parametrize("kind", ["method", "provider", "phase"])
def test_methods_providers_and_phases_follow_the_one_duplicate_rule(kind):
    """A second class under a taken name used to replace the built-in silently."""
    if kind == "method":
        from mtcabench.evaluate import METHODS as registry
        from mtcabench.evaluate import register_method as register
        name = "tokengeist"
    elif kind == "provider":
        from mtcabench.annotate.llm import PROVIDERS as registry
        from mtcabench.annotate.llm import register_provider as register
        name = "openai"
    else:
        from mtcabench.annotate.phases import PHASES as registry
        from mtcabench.annotate.phases import register_phase as register
        name = "verify"
    built_in = registry.get(name)
    assert register(built_in) is built_in
    impostor = type("Impostor", (built_in,), {"name": name})
    with pytest.raises(ValueError, match=f"'{name}' registered twice"):
        register(impostor)
    assert registry.get(name) is built_in
