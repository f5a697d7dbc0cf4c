"""The file readers outside the record readers parse JSON with io's one parser too.

Each is given a deeply nested document: the answer is one InputError (or, inside a record,
the parser's ValueError) saying "nested more than 200 levels", never a RecursionError. The
CLI's readers are covered by test_nesting_folders_and_signals.py; these are the readers a command reaches
only deep inside a run (the batch state, the released tables' rows, the package's resources).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mtcabench import resources
from mtcabench.annotate.llm.batch import BatchState
from mtcabench.benchmark.tables import conversation_from_row, conversation_row
from mtcabench.errors import InputError
from mtcabench.io import JSONError
from mtcabench.model import Conversation, Role, ToolCall, Turn
from mtcabench.raw import load_manifest

DEEP = "[" * 100_000 + "]" * 100_000


def test_batch_state_deep_file_is_one_line(tmp_path):
    path = tmp_path / "batches.json"
    path.write_text('{"pending":\n' + DEEP + "}", encoding="utf-8")
    with pytest.raises(InputError, match=r"batches\.json:2: .*nested more than 200 levels"):
        BatchState(path).pending()


def test_batch_state_that_is_not_one_is_named(tmp_path):
    path = tmp_path / "batches.json"
    path.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(InputError, match=r"batches\.json: not a batch state file"):
        BatchState(path).pending()
    state = BatchState(tmp_path / "fresh.json")
    state.add({"batch_id": "b1"})
    assert state.pending() == [{"batch_id": "b1"}]


def test_raw_manifest_deep_file_is_one_line(tmp_path):
    path = tmp_path / "manifest.json"
    path.write_text('{"files":\n' + DEEP + "}", encoding="utf-8")
    with pytest.raises(InputError, match=r"manifest\.json:2: not a valid raw manifest "
                                         r"\(nested more than 200 levels"):
        load_manifest(path)
    path.write_text('{"files": [}', encoding="utf-8")
    with pytest.raises(InputError, match=r"manifest\.json:1: not a valid raw manifest "
                                         r"\(malformed JSON"):
        load_manifest(path)
    assert load_manifest()  # the shipped one reads


def _conversation() -> Conversation:
    return Conversation(id="t/1", source="taubench", domain="d", metadata={"a": [1, {"b": 2}]},
                        turns=[Turn(index=0, role=Role.USER, content="hi"),
                               Turn(index=1, role=Role.ASSISTANT, content="",
                                    tool_calls=[ToolCall(id="c1", name="f",
                                                         arguments={"x": [1]})])])


def test_released_row_round_trips_and_refuses_deep_json():
    # The parser's JSONError is a ValueError: the release loader turns it into one line
    # naming the folder and the conversation.
    conv = _conversation()
    assert conversation_from_row(conversation_row(conv)) == conv
    deep_metadata = {**conversation_row(conv), "metadata": DEEP}
    with pytest.raises(JSONError, match="nested more than 200 levels"):
        conversation_from_row(deep_metadata)
    row = conversation_row(conv)
    row["turns"][1]["tool_calls"][0]["arguments"] = DEEP
    with pytest.raises(JSONError, match="nested more than 200 levels"):
        conversation_from_row(row)


def test_lineage_handcheck_deep_file_is_refused(tmp_path, monkeypatch):
    (tmp_path / "lineage").mkdir()
    (tmp_path / "lineage" / "handcheck-lineage-v9.json").write_text(DEEP, encoding="utf-8")
    monkeypatch.setattr(resources, "files", lambda name: Path(tmp_path))
    with pytest.raises(JSONError, match="nested more than 200 levels"):
        resources.lineage_handcheck("lineage-v9")
    (tmp_path / "lineage" / "handcheck-lineage-v9.json").write_text(
        json.dumps({"spans": []}), encoding="utf-8")
    assert resources.lineage_handcheck("lineage-v9+abc") == {"spans": []}
    assert resources.lineage_handcheck("lineage-v0") is None
