"""The embedded Label Studio for runs without a server, and automatic (non-human) acceptance."""

from __future__ import annotations

import os
import stat
import tempfile

import httpx
import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode, ServiceError
from mtcabench.io import read_records, write_records
from mtcabench.model import DecisionSource, Edge, ReviewDecision, Verdict
from mtcabench.review import AUTO_COMMENT, auto_accept, open_review
from mtcabench.services.label_studio import start_label_studio


@pytest.mark.label_studio
@pytest.mark.slow
def test_open_review_starts_an_embedded_server_when_none_is_given(
    monkeypatch, candidates, candidates_file, conversations_file,
):
    monkeypatch.delenv("LABEL_STUDIO_URL", raising=False)
    monkeypatch.delenv("LABEL_STUDIO_API_KEY", raising=False)
    with open_review(candidates_file, conversations_file, progress=False) as session:
        server = session.server
        assert server is not None and server.running
        assert session.review_url == f"{server.url}/projects/{session.push.project_id}/data"
        assert session.push.imported == len(candidates)
        assert session.login == (server.username, server.password)
        # The address answers, and the reviewer's login opens the project.
        with httpx.Client(base_url=server.url, follow_redirects=True) as web:
            assert web.get("/health").json()["status"] == "UP"
            login = web.get("/user/login/")
            token = web.cookies.get("csrftoken")
            r = web.post("/user/login/", data={"email": server.username,
                                               "password": server.password,
                                               "csrfmiddlewaretoken": token},
                         headers={"Referer": f"{server.url}/user/login/"})
            assert login.status_code == 200 and "/user/login" not in str(r.url)
            assert web.get(f"/api/projects/{session.push.project_id}").json()["task_number"] == 5
        temp_root = server.data_dir.parent
    assert not server.running
    assert not temp_root.exists()  # the temporary data folder went with the server


@pytest.mark.label_studio
def test_open_review_pushes_to_a_configured_server(label_studio, candidates_file,
                                                    conversations_file, project_title):
    with open_review(candidates_file, conversations_file, url=label_studio.url,
                     api_key=label_studio.api_key, project=project_title,
                     progress=False) as session:
        assert session.server is None and session.login is None
        assert session.review_url.startswith(label_studio.url)
        assert session.push.imported == 5


def test_missing_label_studio_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("MTCABENCH_LABEL_STUDIO_BIN", str(tmp_path / "no-label-studio"))
    with pytest.raises(ServiceError, match="Label Studio is not installed at .*no-label-studio"):
        start_label_studio()


def test_a_server_that_dies_at_start_is_reported_with_its_log(monkeypatch, tmp_path):
    fake = tmp_path / "bin" / "label-studio"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'database is locked' >&2\nexit 3\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("MTCABENCH_LABEL_STUDIO_BIN", str(fake))
    monkeypatch.setenv("MTCABENCH_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    with pytest.raises(ServiceError, match=r"exited with code 3(.|\n)*database is locked"):
        start_label_studio()
    # Nothing half-built is left: no template, no temporary data folder.
    assert not [p for p in (tmp_path / "cache").iterdir() if p.name.startswith("label-studio-template")]
    assert list((tmp_path / "tmp").iterdir()) == []


def test_auto_accept_marks_decisions_as_not_human(candidates, conversations):
    bad = candidates[0].model_copy(deep=True)
    bad.id += "-forward"
    bad.graph.edges.append(Edge(child=2, parent=4))  # points forwards
    bad.graph.nodes = sorted(set(bad.graph.nodes))
    rejected = candidates[1].model_copy(update={"id": candidates[1].id + "-rejected",
                                                "status": "rejected"})
    report = auto_accept([*candidates, bad, rejected], conversations)
    assert [d.id for d in report.decisions] == [c.id for c in candidates]
    for d, c in zip(report.decisions, candidates):
        assert d.decision_source is DecisionSource.AUTO and d.reviewer is None
        assert d.verdict is Verdict.ACCEPT and not d.edited and d.comment == AUTO_COMMENT
        assert d.graph == c.graph and d.dependency_type is c.dependency_type
    left = dict(report.left_out)
    assert "edge-backwards" in left[bad.id] and "rejected" in left[rejected.id]


def test_auto_accept_cli_writes_marked_decisions(candidates_file, conversations_file, tmp_path):
    out = tmp_path / "reviewed.jsonl"
    result = CliRunner().invoke(app, ["review", "auto-accept", "--candidates", str(candidates_file),
                                      "--conversations", str(conversations_file),
                                      "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "automatic decisions (not human)" in result.output
    decisions = list(read_records(out, ReviewDecision))
    assert len(decisions) == 5
    assert {d.decision_source for d in decisions} == {DecisionSource.AUTO}


def test_auto_accept_refuses_candidates_of_unknown_conversations(candidates, tmp_path,
                                                                 conversations_file):
    cands = tmp_path / "candidates.jsonl"
    write_records(cands, [candidates[0].model_copy(update={"conversation_id": "nope"})])
    out = tmp_path / "reviewed.jsonl"
    result = CliRunner().invoke(app, ["review", "auto-accept", "--candidates", str(cands),
                                      "--conversations", str(conversations_file),
                                      "--out", str(out)])
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "conversation 'nope' is not in the conversations file" in result.output
    assert not out.exists()
    assert os.listdir(tmp_path) == ["candidates.jsonl"]
