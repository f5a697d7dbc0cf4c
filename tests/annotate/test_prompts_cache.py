"""Prompt templates (versions, hashes), structured-output schemas, cache keys, budget guard."""

from __future__ import annotations

import json

import pytest
from tests.support.annotate_data import tiny_conversation

from mtcabench.annotate.llm import (
    Accounting,
    Answer,
    Budget,
    Endpoint,
    Prices,
    ResponseCache,
    request_key,
)
from mtcabench.annotate.phases import ProposePhase, RequestSettings, Sampling
from mtcabench.annotate.phases.propose import ProposeOut
from mtcabench.annotate.phases.schema import output_schema, response_format
from mtcabench.annotate.phases.templates import PROMPTS_DIR, load_template, parse_template
from mtcabench.annotate.phases.transcript import TranscriptLimits, render_transcript
from mtcabench.annotate.phases.verify import VerifyOut
from mtcabench.errors import InputError


def test_shipped_templates_load_with_version_and_hash():
    import hashlib

    for phase in ("propose", "verify"):
        t = load_template(phase)
        assert t.phase == phase and t.version == f"{phase}-v1"
        assert t.sha256 == hashlib.sha256(t.path.read_bytes()).hexdigest()
        assert "$transcript" in t.user
    msgs = load_template("propose").render(transcript="T", targets="4", max_spans=3)
    assert [m["role"] for m in msgs] == ["system", "user"] and "TARGET TURNS: 4" in msgs[1]["content"]


def test_newest_version_is_default_and_hash_tracks_the_file(tmp_path):
    for name in ("propose-v1.md", "verify-v1.md"):
        (tmp_path / name).write_bytes((PROMPTS_DIR / name).read_bytes())
    v2 = (PROMPTS_DIR / "propose-v1.md").read_text().replace("propose-v1", "propose-v2")
    (tmp_path / "propose-v2.md").write_text(v2 + "\nOne more line.\n")
    newest = load_template("propose", prompts_dir=tmp_path)
    assert newest.version == "propose-v2"
    assert newest.sha256 != load_template("propose", "propose-v1", tmp_path).sha256
    with pytest.raises(InputError, match="known: propose-v1, propose-v2"):
        load_template("propose", "propose-v9", tmp_path)


@pytest.mark.parametrize("text,message", [
    ("no front matter", "front matter"),
    ("---\nphase: propose\n---\n## system\nx\n", "version"),
    ("---\nphase: other\nversion: x\n---\n## system\nx\n## user\ny\n", "phase 'other'"),
    ("---\nphase: propose\nversion: propose-v1\n---\n## system\nx\n", "## user"),
])
def test_bad_templates_name_the_file_and_problem(tmp_path, text, message):
    path = tmp_path / "propose-v1.md"
    path.write_text(text)
    with pytest.raises(InputError, match=message) as info:
        parse_template(path)
    assert str(path) in str(info.value)


def test_schema_is_flat_and_strict_for_both_flavours():
    for model in (ProposeOut, VerifyOut):
        schema = output_schema(model)
        text = json.dumps(schema)
        assert "$ref" not in text and "$defs" not in text

        def objects(node):
            if isinstance(node, dict):
                if node.get("type") == "object":
                    yield node
                for v in node.values():
                    yield from objects(v)
            elif isinstance(node, list):
                for v in node:
                    yield from objects(v)

        for obj in objects(schema):
            assert obj["additionalProperties"] is False
            assert set(obj["required"]) == set(obj["properties"])
    openai = response_format(VerifyOut, "json_schema", name="verify_output")
    assert openai["type"] == "json_schema" and openai["json_schema"]["strict"] is True
    llama = response_format(VerifyOut, "json_object", name="verify_output")
    assert llama["type"] == "json_object" and llama["schema"] == openai["json_schema"]["schema"]
    with pytest.raises(ValueError):
        response_format(VerifyOut, "grammar", name="verify_output")


def test_transcript_shortens_long_turns_and_drops_oldest_with_notes():
    conv = tiny_conversation("t/a", "mia_li_3668", "NO6JO3", 412)
    conv.turns[0].content = "POLICY " * 100
    text = render_transcript(conv, 8, TranscriptLimits(max_turn_chars=100, max_chars=100_000))
    assert "[... shortened: 600 more characters not shown]" in text
    assert text.splitlines()[-1] == "[8 assistant] Reservation NO6JO3 cost $412."
    short = render_transcript(conv, 8, TranscriptLimits(max_turn_chars=100, max_chars=300))
    assert "omitted for length]" in short and short.startswith("[0 system]")
    assert "[8 assistant]" in short and len(short) < len(text)
    assert "[5 user]" not in render_transcript(conv, 4, TranscriptLimits())


def _builder(**kw):
    endpoint = Endpoint(base_url=kw.pop("base_url", "http://x/v1"), model=kw.pop("model", "m"),
                        identity=kw.pop("identity", ""),
                        response_format=kw.pop("flavour", "json_schema"))
    return ProposePhase(endpoint, load_template("propose"), RequestSettings(**kw))


def test_cache_key_depends_on_everything_that_shapes_the_answer():
    conv = tiny_conversation("t/a", "mia_li_3668", "NO6JO3", 412)
    base = _builder().request(conv, (4, 8)).key
    variants = [
        _builder(base_url="http://y/v1"),
        _builder(model="m2"),
        _builder(flavour="json_object"),
        _builder(sampling=Sampling(temperature=0.5)),
        _builder(sampling=Sampling(seed=1)),
        _builder(max_tokens={"propose": 99}),
        _builder(limits=TranscriptLimits(max_turn_chars=100, max_chars=200)),
    ]
    keys = {b.request(conv, (4, 8)).key for b in variants}
    assert base not in keys and len(keys) == len(variants)
    assert _builder().request(conv, (4, 8)).key == base  # stable
    assert _builder().request(conv, (4,)).key != base  # messages
    # Same model file behind another port: the embedded server's identity keeps the key.
    a = _builder(base_url="http://127.0.0.1:1/v1", identity="embedded-llama.cpp:x")
    b = _builder(base_url="http://127.0.0.1:2/v1", identity="embedded-llama.cpp:x")
    assert a.request(conv, (4, 8)).key == b.request(conv, (4, 8)).key
    # The prompt template's version and hash are part of it.
    k = dict(endpoint="e", model="m", body={"a": 1})
    assert request_key(prompt_version="v1", prompt_hash="h", **k) != request_key(
        prompt_version="v1", prompt_hash="h2", **k)


def test_cache_survives_reopening(tmp_path):
    path = tmp_path / "c.sqlite"
    with ResponseCache(path) as cache:
        cache.put("k1", Answer(content="{}", finish_reason="stop", prompt_tokens=3))
    with ResponseCache(path) as cache:
        assert cache.get("k1") == Answer(content="{}", finish_reason="stop", prompt_tokens=3)
        assert cache.get("k2") is None and len(cache) == 1
    (tmp_path / "bad.sqlite").write_text("not a database " * 100)
    with pytest.raises(InputError, match="response cache is damaged"):
        ResponseCache(tmp_path / "bad.sqlite").get("x")


def test_budget_guard_refuses_before_crossing_the_limit():
    acc = Accounting(Budget(max_tokens=1000))
    first = acc.reserve(prompt_chars=2000, max_completion=300)  # ~516 + 300
    assert first is not None
    assert acc.reserve(prompt_chars=2000, max_completion=300) is None  # would cross 1000
    assert acc.stopped_by_budget
    acc.release(first)
    acc.answered(500, 100)
    assert acc.reserve(prompt_chars=400, max_completion=200) is not None  # 600+316 <= 1000
    cost = Accounting(Budget(max_cost=0.01, prices=Prices(input_per_m=10, output_per_m=30)))
    assert cost.reserve(prompt_chars=4000, max_completion=100) is None  # about $0.013
    assert cost.reserve(prompt_chars=1000, max_completion=100) is not None  # about $0.006
    with pytest.raises(ValueError, match="prices"):
        Budget(max_cost=1.0)
