"""What counts as a secret, and where redaction applies: a value that is an ordinary word
(OPENAI_API_KEY=ollama, a local server's placeholder) is not a secret and no word of a user's
records is redacted for it; a real key is redacted in everything a command prints (stdout
included), plainly, base64-encoded and split across a line break; keys of known shapes are
redacted on the terminal even when the process does not hold them."""

from __future__ import annotations

import base64
import json
import sys

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.io import atomic_write, write_records
from mtcabench.redact import REDACTED, looks_secret, redact, redacted_output, scrubber
from mtcabench.transcripts import conversations_from_value

runner = CliRunner()
KEY = "sk-rule3-9fQ2xLm7RtZ0pW4vBn8KdJ6h"


@pytest.mark.parametrize("value", ["ollama", "EMPTY", "lm-studio", "none", "not-needed",
                                   "Placeholder", "localkey", "aaaaaaaaaaaaaaaa"])
def test_ordinary_words_are_not_secrets(value):
    assert not looks_secret(value)


@pytest.mark.parametrize("value", [KEY, "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345",
                                   "0123456789abcdef0123456789abcdef01234567",
                                   "sk-wrong-key-123", "secret-key-never-shown"])
def test_keys_are_secrets(value):
    assert looks_secret(value)


def test_a_word_as_api_key_does_not_redact_that_word_in_records(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "ollama")
    conv = conversations_from_value([{"role": "user", "content": "run it on ollama please"}])[0]
    path = tmp_path / "c.jsonl"
    write_records(path, [conv])
    assert "run it on ollama please" in path.read_text(encoding="utf-8")
    assert redact("ollama serves the model") == "ollama serves the model"


def test_a_held_key_in_base64_is_redacted(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    for prefix in ("", "u:", "us:", "user:"):
        encoded = base64.b64encode((prefix + KEY).encode()).decode()
        assert KEY not in redact(f"Basic {encoded}")
        shown = scrubber()(f"header dump {encoded} end")
        assert encoded not in shown and REDACTED in shown, prefix
    urlsafe = base64.urlsafe_b64encode(("x" + KEY).encode()).decode()
    assert REDACTED in scrubber()(urlsafe)


@pytest.mark.parametrize("split", ["\n", "\r\n  ", "\\n", "\n\t"])
def test_a_held_key_split_across_a_line_break_is_redacted(monkeypatch, split):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    text = f"key: {KEY[:14]}{split}{KEY[14:]} (wrapped)"
    shown = redact(text)
    assert KEY[14:] not in shown and REDACTED in shown


def test_known_key_shapes_are_redacted_on_the_terminal_when_not_held(monkeypatch):
    for name in ("OPENAI_API_KEY", "HF_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    other = "sk-proj-" + "Q7wE9rT1yU3iO5pA2sD4fG6h"
    assert other not in redact(f"the log holds {other} in a tool result")
    assert "hf_" + "a" * 34 not in redact("token hf_" + "a" * 34)


def test_everything_a_command_prints_goes_through_the_redaction(monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with redacted_output():
        print(f"tree: {KEY}")
        sys.stderr.write(f"message {KEY}\n")
    out, err = capsys.readouterr()
    assert KEY not in out and REDACTED in out
    assert KEY not in err


def test_explains_tree_on_stdout_shows_no_held_key(tmp_path, monkeypatch):
    """explain prints the tree (the span's text, the turns' text) to stdout: a key the process
    holds that sits in the log does not reach the terminal."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    log = tmp_path / "chat.json"
    log.write_text(json.dumps([
        {"role": "user", "content": f"my key is {KEY}, store it"},
        {"role": "assistant", "content": f"Stored the key {KEY} for you."}]), encoding="utf-8")
    res = runner.invoke(app, ["explain", str(log), "--method", "recency"])
    assert res.exit_code == 0, res.output
    assert KEY not in res.output and REDACTED in res.output


def test_files_written_still_redact_a_held_key(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with atomic_write(tmp_path / "r.md") as fh:
        fh.write(f"report {KEY}")
    assert KEY not in (tmp_path / "r.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", ["api_key", "apiKey", "x-api-key", "Authorization", "HF_TOKEN",
                                  "token", "password", "db_passwd", "client_secret",
                                  "accessToken", "private-key", "cookie"])
def test_field_names_that_hold_credentials(name):
    from mtcabench.redact import credential_name

    assert credential_name(name)


@pytest.mark.parametrize("name", ["max_tokens", "token_count", "prompt_tokens", "reward",
                                  "sort_key", "keyword", "secretary", "payment_method_id",
                                  "expected_actions", "origin"])
def test_field_names_that_are_no_credentials(name):
    from mtcabench.redact import credential_name

    assert not credential_name(name)


def test_credential_fields_name_where_not_what():
    from mtcabench.redact import credential_fields

    value = {"info": {"api_key": "abc", "headers": ["Authorization: Bearer abcdefghijklmnop"],
                      "note": KEY, "empty_token": ""},
             "reward": 1.0, "max_tokens": 5, "text": "the flight is HAT136"}
    assert credential_fields(value) == ["$.info.api_key", "$.info.headers[0]", "$.info.note"]
