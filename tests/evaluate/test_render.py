"""Chat-template rendering: exact token ranges of turns, sentences and spans (real tokenizer)."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from mtcabench.errors import InputError
from mtcabench.evaluate import render_conversation
from mtcabench.evaluate.attribution._render import tool_results_apart
from mtcabench.ingest import read_taubench
from mtcabench.model import Conversation, Role

pytestmark = pytest.mark.model


def check_exact(conv: Conversation, tokenizer) -> int:
    """Assert every turn's and sentence's token range is exact; returns the token count."""
    r = render_conversation(conv, tokenizer)
    lay = r.full
    # segments tile the rendered string
    assert r.segments[0][0] == 0 and r.segments[-1][1] == len(lay.text)
    assert all(a[1] == b[0] for a, b in zip(r.segments, r.segments[1:]))
    prev_end = 0
    for turn in conv.turns:
        ca, cb = lay.turn_chars[turn.index]
        assert lay.text[ca:cb] == turn.text  # the template shows the text verbatim
        seg = r.segments[turn.index]
        assert seg[0] <= ca <= cb <= seg[1]
        if not turn.text:
            continue
        a, b = lay.turn_tokens(turn.index)
        # the first token starts where the text starts, the last ends where it ends
        assert lay.offsets[a, 0] == ca and lay.offsets[b - 1, 1] == cb, (conv.id, turn.index)
        assert a >= prev_end
        prev_end = b
        assert tokenizer.decode(lay.input_ids[a:b]) == turn.text
        # every token of the text belongs to a sentence of this turn
        sids = set(lay.token_sentence[a:b].tolist())
        assert -1 not in sids
        assert {r.sentences[s].turn for s in sids} == {turn.index}
    return lay.num_tokens


def test_sample_turn_ranges_are_exact(loaded, sample_path):
    for conv in read_taubench(sample_path):
        check_exact(conv, loaded.tokenizer)


def test_taubench_turn_ranges_are_exact(loaded, taubench_conversations):
    sizes = [check_exact(c, loaded.tokenizer) for c in taubench_conversations[:10]]
    assert max(sizes) > 4000  # long, real conversations were covered


def test_tool_calls_and_results_are_rendered(loaded, sample_path):
    conv = next(iter(read_taubench(sample_path)))
    r = render_conversation(conv, loaded.tokenizer)

    def seg(i):
        return r.full.text[slice(*r.segments[i])]

    assert seg(2) == '<|im_start|>assistant\nget_user_details({"user_id": "sara_doe_496"})<|im_end|>\n'
    assert seg(3).startswith("<|im_start|>tool\n{\"name\": {\"first_name\": \"Sara\"")
    assert conv.turns[3].role is Role.TOOL


def test_span_tokens(loaded, sample_path):
    conv = next(iter(read_taubench(sample_path)))
    text = conv.turns[10].text
    start = text.index("$151")
    lay = render_conversation(conv, loaded.tokenizer).full
    a, b = lay.span_tokens(10, start, start + 4)
    ta, tb = lay.turn_tokens(10)
    assert ta <= a < b <= tb
    assert loaded.tokenizer.decode(lay.input_ids[a:b]).strip() == "$151"


def with_template(tokenizer, template):
    tok = copy.deepcopy(tokenizer)
    tok.chat_template = template
    return tok


TRIM = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] | trim }}"
        "<|im_end|>\n{% endfor %}")


def test_trimming_template_maps_offsets(loaded):
    conv = Conversation.model_validate({
        "id": "t", "source": "hand", "domain": "d",
        "turns": [{"index": 0, "role": "user", "content": "  hello there  "},
                  {"index": 1, "role": "assistant", "content": "\n It is HAT136.\n"}]})
    tok = with_template(loaded.tokenizer, TRIM)
    lay = render_conversation(conv, tok).full
    start = conv.turns[1].text.index("HAT136")
    ca, cb = lay.chars_of(1, start, start + 6)
    assert lay.text[ca:cb] == "HAT136"
    assert lay.text[slice(*lay.turn_chars[0])] == "hello there"


@pytest.mark.parametrize("template, message", [
    ("{{ messages | length }}{% for m in messages %}{{ m['content'] }}{% endfor %}",
     "concatenation of its turns"),
    ("{% for m in messages %}<|im_start|>{{ m['content'] | replace(' the ', ' THE ') }}<|im_end|>{% endfor %}",
     "rewrites the turn's text"),
    ("{% for m in messages %}<|im_start|>{{ m['role'] }}<|im_end|>{% endfor %}",
     "does not show the turn's text"),
])
def test_templates_we_cannot_map_are_refused(loaded, sample_path, template, message):
    conv = next(iter(read_taubench(sample_path)))
    with pytest.raises(InputError, match=message):
        render_conversation(conv, with_template(loaded.tokenizer, template))


def test_dropping_sentences_keeps_every_other_position(loaded, taubench_conversations):
    conv = taubench_conversations[0]
    r = render_conversation(conv, loaded.tokenizer)
    drop = {i for i, s in enumerate(r.sentences) if conv.turns[s.turn].role is not Role.ASSISTANT}
    drop = set(sorted(drop)[::2])
    lay = r.layout(drop)
    assert len(lay.text) < len(r.full.text)
    for i, s in enumerate(r.sentences):
        text = conv.turns[s.turn].text[s.start:s.end]
        if i in drop:
            assert lay.sentence_chars[i] is None
        else:
            assert lay.text[slice(*lay.sentence_chars[i])] == text
    for turn in conv.turns:
        if turn.role is Role.ASSISTANT and turn.text:
            a, b = lay.turn_tokens(turn.index)
            assert loaded.tokenizer.decode(lay.input_ids[a:b]) == turn.text
    assert not drop & set(lay.token_sentence.tolist())


#: Qwen2.5's tool block, as its chat template writes it: one block for consecutive results.
MERGING = (
    "{%- for message in messages %}"
    "{%- if message.role == 'tool' %}"
    "{%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != \"tool\") %}"
    "{{- '<|im_start|>user' }}{%- endif %}"
    "{{- '\\n<tool_response>\\n' }}{{- message.content }}{{- '\\n</tool_response>' }}"
    "{%- if loop.last or (messages[loop.index0 + 1].role != \"tool\") %}"
    "{{- '<|im_end|>\\n' }}{%- endif %}"
    "{%- else %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endif %}{%- endfor %}")


def two_results_in_a_row() -> Conversation:
    """The refund example: the agent calls two tools at once, their results stand together."""
    from mtcabench.transcripts import read_transcript

    conv = read_transcript(Path(__file__).parents[1] / "transcripts" / "examples"
                           / "refund_agent.json")
    roles = [t.role for t in conv.turns]
    assert any(a is b is Role.TOOL for a, b in zip(roles, roles[1:]))
    return conv


def test_a_template_merging_tool_results_renders_each_in_its_own_block(loaded, sample_path):
    # Qwen2.5's template opens one block before consecutive tool results and closes it after
    # the last: two results in a row could not be rendered turn by turn (the Qwen models were
    # refused on most tau2 runs). The loader rewrites it to a block per result.
    conv = two_results_in_a_row()
    with pytest.raises(InputError, match="concatenation of its turns"):
        render_conversation(conv, with_template(loaded.tokenizer, MERGING))
    apart = with_template(loaded.tokenizer, tool_results_apart(MERGING))
    check_exact(conv, apart)
    r = render_conversation(conv, apart)
    tools = [t.index for t in conv.turns if t.role is Role.TOOL]
    assert [r.full.text[slice(*r.segments[i])] for i in tools] == [
        f"<|im_start|>user\n<tool_response>\n{conv.turns[i].text}\n</tool_response><|im_end|>\n"
        for i in tools]
    # Where no two results stand together, the rendering is the template's own, byte for byte.
    for c in read_taubench(sample_path):
        assert (render_conversation(c, apart).full.text
                == render_conversation(c, with_template(loaded.tokenizer, MERGING)).full.text)
    # Other templates are left as they are.
    assert tool_results_apart(TRIM) == TRIM and tool_results_apart(None) is None


def test_the_packaged_qwen_template_is_the_one_rewritten():
    # The rewrite matches the real template (scripts/setup.sh installs the 0.5B Qwen model):
    # it changes the two conditions and nothing else.
    from gguf import GGUFReader

    from mtcabench.services.models import gguf_path

    field = GGUFReader(gguf_path("qwen2.5-coder-0.5b")).fields["tokenizer.chat_template"]
    template = bytes(field.parts[field.data[0]]).decode()
    apart = tool_results_apart(template)
    assert apart != template and apart.count("{%- if true %}") == 2
    assert apart.replace("{%- if true %}", "") == re.sub(
        r"\{%- if (\(loop\.index0 == 0\) or \(messages\[loop\.index0 - 1\]\.role != \"tool\"\)"
        r"|loop\.last or \(messages\[loop\.index0 \+ 1\]\.role != \"tool\"\)) %\}", "", template)
