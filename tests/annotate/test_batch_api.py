"""The OpenAI Batch API at the HTTP boundary: what is sent, how results are read, resuming."""

from __future__ import annotations

import json
import re

import pytest
from tests.support.annotate_data import good_propose_table, good_verify
from tests.support.annotate_fakes import FakeOpenAI, script_responder

from mtcabench.annotate import annotate_run
from mtcabench.errors import ServiceError
from mtcabench.io import iter_json_lines


def responder():
    return script_responder(good_propose_table(), default_verify=good_verify)


def run(fake, conversations, out, **kw):
    return annotate_run(conversations, out, base_url=fake.base_url, model="gpt-test",
                        annotators="llm", batch_poll_s=0.01, max_attempts=1, backoff_s=0.01,
                        progress=False, **kw)


def records(path):
    out = {}
    for _, obj in iter_json_lines(path):
        obj.pop("created_at", None)
        for key in ("annotator", "proposal_annotator"):  # the two fakes' ports differ
            obj.get(key, {}).pop("endpoint", None)
        out[obj["id"]] = obj
    return out


def multipart_file(body: bytes) -> bytes:
    part = body.split(b'name="file"', 1)[1]
    return part.split(b"\r\n\r\n", 1)[1].rsplit(b"\r\n--", 1)[0]


def test_batch_run_sends_files_and_batches_and_writes_the_same_records(tiny_path, tmp_path):
    with FakeOpenAI(responder(), batch_polls_before_done=1) as fake:
        summary = run(fake, tiny_path, tmp_path / "batch", batch=True)
        sent = [(r.method, re.sub(r"(file|batch)[-_]\w+", r"\1-ID", r.path))
                for r in fake.requests]
        uploads = [r for r in fake.requests if r.path == "/v1/files"]
        creates = [r for r in fake.requests if r.path == "/v1/batches"]
    # Two rounds: the propose requests, then the verify requests of the ok proposals.
    assert sent == [
        ("POST", "/v1/files"), ("POST", "/v1/batches"),
        ("GET", "/v1/batches/batch-ID"), ("GET", "/v1/batches/batch-ID"),
        ("GET", "/v1/files/file-ID/content"),
    ] * 2
    assert not any(r.path.endswith("/chat/completions") for r in fake.requests)
    propose_lines = [json.loads(x) for x in multipart_file(uploads[0].body).splitlines()]
    assert b'name="purpose"\r\n\r\nbatch' in uploads[0].body
    assert len(propose_lines) == 3 and len(multipart_file(uploads[1].body).splitlines()) == 6
    for line in propose_lines:
        assert set(line) == {"custom_id", "method", "url", "body"}
        assert re.fullmatch(r"[0-9a-f]{64}", line["custom_id"])
        assert line["method"] == "POST" and line["url"] == "/v1/chat/completions"
        assert line["body"]["model"] == "gpt-test"
        assert line["body"]["response_format"]["type"] == "json_schema"
    create = creates[0].json()
    assert create["endpoint"] == "/v1/chat/completions" and create["completion_window"] == "24h"
    assert create["input_file_id"].startswith("file-")
    assert [b["answered"] for b in summary.batches] == [3, 6]
    assert summary.accounting.requests == 9 and summary.complete
    assert summary.proposals.written == 6 and summary.proposals.already == 0
    assert summary.candidates.written == 6

    # The same records as an online run against the same answers.
    with FakeOpenAI(responder()) as online:
        run(online, tiny_path, tmp_path / "online")
    for name in ("proposals.jsonl", "candidates.jsonl"):
        assert records(tmp_path / "batch" / name) == records(tmp_path / "online" / name)
    assert len(records(tmp_path / "batch" / "candidates.jsonl")) == 6


def test_a_run_stopped_while_polling_resumes_the_same_batch(tiny_path, tmp_path):
    out = tmp_path / "out"
    with FakeOpenAI(responder(), batch_polls_before_done=0) as fake:
        fake.status_faults = 1
        with pytest.raises(ServiceError, match="rerun to resume"):
            run(fake, tiny_path, out, batch=True)
        pending = json.loads((out / "batches.json").read_text())["pending"]
        assert len(pending) == 1 and pending[0]["requests"] == 3
        before = len(fake.requests)
        summary = run(fake, tiny_path, out, batch=True)
        later = fake.requests[before:]
    # The rerun first polls the batch it had submitted, and uploads only the verify round.
    assert later[0].method == "GET" and later[0].path == f"/v1/batches/{pending[0]['batch_id']}"
    assert sum(r.path == "/v1/files" for r in later) == 1
    assert summary.complete and len(records(out / "candidates.jsonl")) == 6
    assert json.loads((out / "batches.json").read_text())["pending"] == []


def test_failed_lines_are_reported_not_looped(tiny_path, tmp_path):
    def respond(body):
        return json.dumps({"spans": []})

    with FakeOpenAI(respond, batch_polls_before_done=0) as fake:
        summary = run(fake, tiny_path, tmp_path / "o", batch=True)
        assert summary.complete and summary.accounting.requests == 3
        assert sum(r.path == "/v1/files" for r in fake.requests) == 1
