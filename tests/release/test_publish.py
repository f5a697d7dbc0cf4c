"""release publish: the dry run for real; the upload at the HTTP boundary (a local fake Hub
that records requests), including loading the published release back by its Hub id."""

from __future__ import annotations

import base64
import logging
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from mtcabench.benchmark import load_release
from mtcabench.cli import app
from mtcabench.errors import ExitCode
from mtcabench.release import build_release, publish_release

runner = CliRunner()
TOKEN = "hf_test_secret_token_0123456789"


@pytest.fixture()
def built(sample_inputs):
    return build_release("0.1.0", sample_inputs["reviewed"], sample_inputs["conversations"],
                         out=sample_inputs["out"])


@pytest.fixture()
def hub(fake_hub_module):
    with fake_hub_module.FakeHub() as h:
        yield h


def _files(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in folder.rglob("*") if p.is_file()}


def test_dry_run_lists_the_files_and_sends_nothing(built, hub, monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)  # a dry run needs no token
    res = runner.invoke(app, ["release", "publish", str(built.folder), "--repo-id",
                              "my-org/mtcabench", "--dry-run", "--endpoint", hub.url])
    assert res.exit_code == 0, res.output
    for rel, data in _files(built.folder).items():
        assert f"{len(data):>12}  {rel}" in res.output
    assert "dry run, nothing sent" in res.output
    assert "commit 'Release MTCABench 0.1.0', tag 0.1.0" in res.output
    assert hub.requests == []


def test_publish_sends_one_commit_and_a_tag(built, hub, monkeypatch, caplog):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    caplog.set_level(logging.DEBUG)
    res = runner.invoke(app, ["release", "publish", str(built.folder), "--repo-id",
                              "my-org/mtcabench", "--endpoint", hub.url])
    assert res.exit_code == 0, res.output
    # The token went in the Authorization header of every request, and nowhere else.
    assert hub.requests
    assert all(r.headers.get("authorization") == f"Bearer {TOKEN}" for r in hub.requests)
    assert TOKEN not in res.output and TOKEN not in caplog.text
    for r in hub.requests:
        assert TOKEN.encode() not in r.body

    create = hub.find("POST", r"^/api/repos/create$")
    assert len(create) == 1
    assert create[0].json()["type"] == "dataset" and create[0].json()["name"] == "mtcabench"
    commits = hub.find("POST", r"^/api/datasets/my-org/mtcabench/commit/main$")
    assert len(commits) == 1  # one commit for the whole folder
    items = commits[0].ndjson()
    assert items[0] == {"key": "header", "value": {
        "summary": "Release MTCABench 0.1.0",
        "description": items[0]["value"]["description"]}}
    assert "6 decided by a person, 1 accepted automatically" in items[0]["value"]["description"]
    sent = {i["value"]["path"]: base64.b64decode(i["value"]["content"])
            for i in items[1:] if i["key"] == "file"}
    assert sent == _files(built.folder)
    tags = hub.find("POST", r"^/api/datasets/my-org/mtcabench/tag/")
    assert len(tags) == 1 and tags[0].json()["tag"] == "0.1.0"
    oid = hub.repos["my-org/mtcabench"].head["oid"]
    assert tags[0].path.endswith(f"/tag/{oid}")  # the tag points at that commit
    assert "uploaded 6 files" in res.output and oid in res.output


def test_republishing_a_version_is_refused_and_a_new_one_deletes_dropped_files(
        built, hub, monkeypatch, sample_inputs, reviews, tmp_path):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    publish_release(built.folder, "my-org/mtcabench", endpoint=hub.url)
    res = runner.invoke(app, ["release", "publish", str(built.folder), "--repo-id",
                              "my-org/mtcabench", "--endpoint", hub.url])
    assert res.exit_code == ExitCode.SERVICE and "0.1.0 is already published" in res.output
    assert len(hub.find("POST", "/commit/")) == 1
    # A later release without a file of the earlier one: the commit deletes it.
    hub.repos["my-org/mtcabench"].commits[-1]["files"]["data/spans/old.parquet"] = b"x"
    newer = build_release("0.2.0", sample_inputs["reviewed"], sample_inputs["conversations"],
                          out=sample_inputs["out"])
    result = publish_release(newer.folder, "my-org/mtcabench", endpoint=hub.url)
    assert result.plan.deletions == ["data/spans/old.parquet"]
    last = hub.find("POST", "/commit/")[-1].ndjson()
    assert {"key": "deletedFile", "value": {"path": "data/spans/old.parquet"}} in last
    assert set(hub.repos["my-org/mtcabench"].tags) == {"0.1.0", "0.2.0"}


@pytest.mark.slow
def test_published_release_loads_back_by_hub_id(built, hub, monkeypatch, sample_inputs):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    publish_release(built.folder, "my-org/mtcabench", endpoint=hub.url)
    bench = load_release("my-org/mtcabench@0.1.0", endpoint=hub.url,
                         cache_dir=sample_inputs["cache"] / "hub-load")
    assert bench.spans == built.spans
    assert list(bench.conversations.values()) == built.conversations
    assert bench.origin == "hf://datasets/my-org/mtcabench@0.1.0"
    assert hub.find("GET", r"^/api/datasets/my-org/mtcabench/revision/0.1.0$")
    assert hub.find("GET", r"^/datasets/my-org/mtcabench/resolve/.+/data/spans/taubench.parquet$")
    # The evaluator's entry point takes the same Hub id, with the Hub address from HF_ENDPOINT
    # as a user would set it (read when huggingface_hub is imported: a fresh process).
    code = ("from mtcabench.benchmark import load_benchmark\n"
            "b = load_benchmark('my-org/mtcabench')\n"
            "print(b.origin, len(b.spans), len(b.conversations))\n")
    env = {**os.environ, "HF_ENDPOINT": hub.url, "HF_HUB_CACHE": str(sample_inputs["cache"] / "hf"),
           "HF_DATASETS_CACHE": str(sample_inputs["cache"] / "ds")}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["hf://datasets/my-org/mtcabench", "7", "3"]


def test_publish_errors_are_one_clear_line(built, hub, monkeypatch, tmp_path):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    res = runner.invoke(app, ["release", "publish", str(built.folder), "--repo-id",
                              "my-org/mtcabench", "--endpoint", hub.url])
    assert res.exit_code == ExitCode.BAD_INPUT and "HF_TOKEN is not set" in res.output
    assert hub.requests == []
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    res = runner.invoke(app, ["release", "publish", str(built.folder), "--repo-id", "nope",
                              "--endpoint", hub.url])
    assert res.exit_code == ExitCode.BAD_INPUT and "expected ORG/NAME" in res.output
    (built.folder / "README.md").write_text("edited\n")
    res = runner.invoke(app, ["release", "publish", str(built.folder), "--repo-id",
                              "my-org/mtcabench", "--endpoint", hub.url])
    assert res.exit_code == ExitCode.BAD_INPUT and "README.md: sha256 differs" in res.output
    assert hub.requests == []


def test_unreachable_hub_is_a_service_error(built, monkeypatch):
    import socket

    with socket.socket() as s:  # a port with nothing listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    monkeypatch.setenv("HF_HUB_ETAG_TIMEOUT", "2")
    res = runner.invoke(app, ["release", "publish", str(built.folder), "--repo-id",
                              "my-org/mtcabench", "--endpoint", f"http://127.0.0.1:{port}"])
    assert res.exit_code == ExitCode.SERVICE, res.output
    assert "my-org/mtcabench" in res.output and TOKEN not in res.output


def test_hub_id_that_cannot_be_downloaded_is_a_service_error(hub, sample_inputs):
    from mtcabench.errors import ServiceError

    with pytest.raises(ServiceError, match="no such local folder, and as a Hub dataset id "
                                           "my-org/missing@1.0: download failed"):
        load_release("my-org/missing@1.0", endpoint=hub.url, cache_dir=sample_inputs["cache"])
