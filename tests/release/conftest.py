"""Fixtures of the release tests: the sample's conversations and hand-written decisions on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from mtcabench.io import write_records
from tests.support import fake_hub, sample_reviews


@pytest.fixture(scope="session")
def reviews():
    """The sample_reviews module (hand-written decisions on the sample conversations)."""
    return sample_reviews


@pytest.fixture(scope="session")
def fake_hub_module():
    return fake_hub


@pytest.fixture()
def sample_inputs(tmp_path: Path, reviews) -> dict[str, Path]:
    """conversations.jsonl and reviewed.jsonl of the sample, and an output folder path."""
    convs = reviews.sample_conversations()
    conv_path = tmp_path / "conversations.jsonl"
    rev_path = tmp_path / "reviewed.jsonl"
    write_records(conv_path, convs.values())
    write_records(rev_path, reviews.sample_decisions(convs))
    return {"conversations": conv_path, "reviewed": rev_path, "out": tmp_path / "release",
            "cache": tmp_path / "cache"}


@pytest.fixture(autouse=True)
def _private_datasets_cache(tmp_path, monkeypatch):
    """Keep `datasets`' prepared tables out of the user's cache (load_benchmark uses the default)."""
    import datasets.config

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-datasets-cache")
