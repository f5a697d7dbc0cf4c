"""The published JSON schema of a submission line: generated from the models, and it agrees
with the reader on what a line may be."""

from __future__ import annotations

import json

import jsonschema
import pytest

from mtcabench.results.schema import SCHEMA_PATH, schema_text, submission_schema

VALID = [
    {"kind": "submission", "method": "tokengeist", "scorer": "avg-attention",
     "model": "SmolLM2-135M-Instruct", "parameters": {"top_k": 3, "alpha": 0.5}},
    {"kind": "prediction", "span_id": "c#4:0-5", "edges": [{"child": 4, "parent": 3,
                                                           "score": 0.8}]},
    {"span_id": "c#4:0-5", "edges": [{"child": 4, "parent": 3}]},  # kind left out
    {"span_id": "c#4:0-5", "edges": [], "skipped": "longer than the model's context"},
    {"span_id": "c#4:0-5", "edges": [{"child": 4, "parent": 3, "score": 0.8, "sentences": [
        {"start": 10, "end": 42, "score": 0.8}, {"start": 0, "end": 9, "score": 0.1}]}]},
    {"span_id": "c#4:0-5", "schema_version": 2, "edges": [{"child": 4, "parent": 3}]},
    # a span attributed in a context window (version 3)
    {"span_id": "c#4:0-5", "edges": [{"child": 4, "parent": 3}], "window": {
        "limit": 8192, "end_token": 9120,
        "turns": [{"turn": 3, "tokens": 2400, "tokens_left_out": 1000, "left_out": False}]}},
]
INVALID = [
    {"kind": "submission"},  # no method
    {"edges": []},  # no span id
    {"span_id": "x", "edges": [{"child": 4}]},  # no parent
    {"span_id": "x", "edges": [{"child": 4, "parent": 3, "weight": 1}]},  # unknown field
    {"span_id": "x", "edges": [], "kind": "conversation"},
    {"method": "flat"},  # a header must say kind
    {"span_id": "x", "schema_version": 4},
    # a window came with version 3
    {"span_id": "x", "schema_version": 2, "window": {"limit": 10, "end_token": 12}},
    {"span_id": "x", "window": {"limit": 10, "end_token": 12, "turns": [{"turn": 1}]}},
    # sentences came with version 2
    {"span_id": "x", "schema_version": 1, "edges": [{"child": 4, "parent": 3, "sentences": []}]},
    {"span_id": "x", "edges": [{"child": 4, "parent": 3, "sentences": [{"start": 1, "end": 2}]}]},
]


def test_published_schema_is_up_to_date():
    # If this fails after a model change: python -m mtcabench.results.schema --write
    assert SCHEMA_PATH.read_text(encoding="utf-8") == schema_text()


@pytest.mark.parametrize("line", VALID)
def test_valid_lines(line):
    jsonschema.Draft202012Validator(submission_schema()).validate(line)


@pytest.mark.parametrize("line", INVALID)
def test_invalid_lines(line):
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text()))
    assert not validator.is_valid(line)


def test_schema_is_a_valid_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(submission_schema())
