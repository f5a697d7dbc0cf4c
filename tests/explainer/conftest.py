"""Fixtures of the explain tests: the real model, loaded once."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def loaded():
    """The default model (SmolLM2-135M-Instruct), loaded once per session."""
    from mtcabench.evaluate import load_model

    return load_model()
