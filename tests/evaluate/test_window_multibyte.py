"""A context window over multi-byte text (Japanese, emoji) gives the evidence units its ASCII
twin gives (issue 48): a cut tool result is no longer JSON, so its units are its sentences,
and Chinese and Japanese sentences end at a full stop with no space after it."""

from __future__ import annotations

import json

import pytest

from mtcabench.evaluate import render_conversation
from mtcabench.evaluate.attribution._sentences import split_sentences
from mtcabench.evaluate.attribution._window import Window, fit_window
from mtcabench.model import Conversation, Role, ToolCall, Turn

FILLERS = {"ascii": "Lorem ipsum dolor sit amet, consectetur adipiscing. ",
           "japanese": "東京の天気は晴れです。😀ありがとう！"}


def conversation(filler: str) -> Conversation:
    records = [{"id": f"r{i}", "note": filler * 3} for i in range(25)]
    records.insert(12, {"id": "r-x", "confirmation": "HAT136"})
    return Conversation(id="t/x/task-1/trial-0", source="tau2", domain="airline", turns=[
        Turn(index=0, role=Role.SYSTEM, content="You are an agent."),
        Turn(index=1, role=Role.USER, content="Find my confirmation."),
        Turn(index=2, role=Role.ASSISTANT, content="",
             tool_calls=[ToolCall(id="c1", name="find", arguments={"q": "x"})]),
        Turn(index=3, role=Role.TOOL, content=json.dumps(records, ensure_ascii=False),
             tool_call_id="c1", name="find"),
        Turn(index=4, role=Role.ASSISTANT, content="Your confirmation is HAT136.")])


@pytest.mark.parametrize("twin", sorted(FILLERS))
def test_the_value_s_unit_in_a_window_is_its_field_not_a_whole_piece(tiny_loaded, twin):
    conv = conversation(FILLERS[twin])
    end = render_conversation(conv, tiny_loaded.tokenizer).full.turn_tokens(4)[1]
    window = fit_window(conv, 4, tiny_loaded.tokenizer, end - 150, end)
    assert isinstance(window, Window) and set(window.cuts) == {3}
    text = window.conversation.turns[3].text
    assert "HAT136" in text  # the window keeps the value
    at = text.index("HAT136")
    [(a, b)] = [(a, b) for a, b in split_sentences(text) if a <= at < b]
    # the value's unit reaches from the sentence before it to the one after, as in ASCII;
    # before, the Japanese twin's was the whole kept piece (hundreds of characters)
    assert b - a < 160, text[a:b]
    back = window.from_window(3, a, b)
    assert back is not None and "HAT136" in conv.turns[3].text[back[0]:back[1]]


def test_cjk_sentences_end_at_their_full_stops():
    text = "東京の天気は晴れです。😀ありがとう！ Next. ok"
    assert [text[a:b] for a, b in split_sentences(text)] == [
        "東京の天気は晴れです。", "😀ありがとう！ ", "Next. ", "ok"]
