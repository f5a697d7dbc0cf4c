"""Fixtures of the peer tests (run in the peers' venv): the real model, the sample conversations."""

from __future__ import annotations

import pytest

from mtcabench.ingest import read_taubench


@pytest.fixture(scope="session")
def loaded():
    """The default model (SmolLM2-135M-Instruct), loaded once per session."""
    from mtcabench.evaluate import load_model

    return load_model()


@pytest.fixture(scope="session")
def sample_conversations(sample_path):
    return list(read_taubench(sample_path))
