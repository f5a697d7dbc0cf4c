"""Fixtures of the release tests: the sample's conversations and hand-written decisions on disk."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from mtcabench.io import write_records

_HERE = Path(__file__).resolve().parent


def _load_as(stem: str):
    # Tests run with --import-mode=importlib: load sibling helper modules by path, once.
    name = f"_mtcabench_release_tests_{stem}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, _HERE / f"{stem}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="session")
def reviews():
    """The sample_reviews module (hand-written decisions on the sample conversations)."""
    return _load_as("sample_reviews")


@pytest.fixture(scope="session")
def fake_hub_module():
    return _load_as("fake_hub")


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
