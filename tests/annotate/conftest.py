"""Fixtures for the annotation tests: the real llama.cpp server, HTTP fakes, tiny conversations."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.support.annotate_data import TINY, good_propose_table, good_verify, tiny_conversation
from tests.support.annotate_fakes import FakeOpenAI

from mtcabench.errors import ServiceError
from mtcabench.io import write_records
from mtcabench.model import Conversation


@pytest.fixture
def tiny_convs() -> list[Conversation]:
    return [tiny_conversation(*args) for args in TINY]


@pytest.fixture
def tiny_path(tmp_path, tiny_convs) -> Path:
    path = tmp_path / "conversations.jsonl"
    write_records(path, tiny_convs)
    return path


@pytest.fixture
def fake_openai():
    """A fake OpenAI API answering the tiny conversations correctly (faults set per test)."""
    from tests.support.annotate_fakes import script_responder

    with FakeOpenAI(script_responder(good_propose_table(), default_verify=good_verify)) as fake:
        yield fake


@pytest.fixture(scope="session")
def llm_server():
    """The real llama.cpp server with SmolLM2, started once; fails loudly if it cannot start."""
    from mtcabench.services.llm_server import LocalLLMServer

    server = LocalLLMServer()
    try:
        server.start()
    except ServiceError as exc:
        pytest.fail(f"the llama.cpp server (SmolLM2) could not start: {exc}")
    yield server
    server.stop()
