"""Push and pull against a real Label Studio server: idempotence, decisions, bad input."""

from __future__ import annotations

import copy

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode, InputError, ServiceError
from mtcabench.io import read_records
from mtcabench.model import DecisionSource, ReviewDecision, Verdict
from mtcabench.review import (
    Connection,
    ReviewClient,
    pull_decisions,
    pull_to_file,
    push_candidates,
    push_files,
)

pytestmark = [pytest.mark.label_studio]


def _tasks_by_span(client: ReviewClient, project_id: int) -> dict[str, dict]:
    body = client.raw_get("test listing", "/api/tasks/", project=project_id, fields="all",
                          page_size=1000)
    return {t["meta"]["span_id"]: t for t in body["tasks"]}


def _annotate(client, task, *, verdict, edit=None, completed_by=None):
    """Submit an annotation through the API: the prediction, edited by ``edit``, plus a verdict."""
    result = copy.deepcopy(task["predictions"][0]["result"])
    if edit:
        result = edit(result)
    result.append({"id": "verdict", "from_name": "verdict", "to_name": "dialogue",
                   "type": "choices", "value": {"choices": [verdict]}})
    kwargs = {"completed_by": completed_by} if completed_by else {}
    return client.sdk.annotations.create(id=task["id"], result=result, **kwargs)


def _drop_turns(*turns):
    ids = {f"turn{t}" for t in turns}

    def edit(result):
        return [r for r in result if r.get("id") not in ids and r.get("from_id") not in ids
                and r.get("to_id") not in ids]
    return edit


def _add_relation(child, parent):
    def edit(result):
        return result + [{"from_id": f"turn{child}", "to_id": f"turn{parent}", "type": "relation",
                          "direction": "right", "labels": ["depends on"]}]
    return edit


def test_push_is_idempotent_and_ordered(client, candidates, conversations, project_title):
    first = push_candidates(client, candidates, conversations, project=project_title,
                            batch_size=2, progress=False)
    assert first.created_project and first.imported == 5 and first.batches == 3
    assert first.already_present == 0 and first.not_pushed == []
    tasks = _tasks_by_span(client, first.project_id)
    assert set(tasks) == {c.id for c in candidates}
    # Most disputed span first: Label Studio serves tasks in id order.
    by_id = sorted(tasks.values(), key=lambda t: t["id"])
    assert by_id[0]["meta"]["span_id"] == candidates[1].id
    assert by_id[0]["predictions"][0]["model_version"] == "llm:smollm2-135m@verify-v1"
    project = client.sdk.projects.get(id=first.project_id)
    assert "<Paragraphs" in project.label_config and not project.model_version

    again = push_candidates(client, candidates, conversations, project=str(first.project_id),
                            progress=False)
    assert not again.created_project and again.imported == 0 and again.already_present == 5
    assert len(_tasks_by_span(client, first.project_id)) == 5
    # A new candidate joins the same project by title; the others stay single.
    more = push_candidates(client, candidates[:1], conversations, project=project_title,
                           progress=False)
    assert more.imported == 0 and more.project_id == first.project_id


def test_pull_writes_decisions_and_leaves_out_invalid(client, candidates, conversations,
                                                      project_title, tmp_path):
    report = push_candidates(client, candidates, conversations, project=project_title,
                             progress=False)
    tasks = _tasks_by_span(client, report.project_id)
    direct, chained, multi, halluc, xss = (tasks[c.id] for c in candidates)
    other = client.sdk.users.create(username=f"second-{project_title}",
                                    email=f"second-{project_title}@example.org",
                                    password="second-reviewer-pw1")
    _annotate(client, direct, verdict="accept")
    _annotate(client, direct, verdict="accept", completed_by=other.id)  # a second reviewer
    _annotate(client, multi, verdict="accept with edits", edit=_drop_turns(3, 2))
    _annotate(client, multi, verdict="reject", completed_by=other.id)
    _annotate(client, halluc, verdict="reject")
    _annotate(client, chained, verdict="accept", edit=_add_relation(8, 10))  # a cycle
    _annotate(client, xss, verdict="accept", edit=_drop_turns(4))  # target removed

    out = tmp_path / "reviewed.jsonl"
    pulled = pull_to_file(client, conversations, out, project=project_title)
    decisions = list(read_records(out, ReviewDecision))
    assert len(decisions) == 5 and decisions == pulled.decisions
    by = {(d.id, d.reviewer): d for d in decisions}
    me_email = client.check()["email"]
    d = by[(candidates[0].id, me_email)]
    assert d.verdict is Verdict.ACCEPT and not d.edited and d.decision_source is DecisionSource.HUMAN
    assert d.graph.pairs() == candidates[0].graph.pairs() and d.decided_at is not None
    assert d.annotator == candidates[0].annotator and d.review_task.startswith("label-studio:task/")
    e = by[(candidates[2].id, me_email)]
    assert e.verdict is Verdict.ACCEPT_WITH_EDITS and e.edited
    assert e.edit.edges_removed == [(3, 2), (6, 3)] and e.edit.nodes_removed == [2, 3]
    assert by[(candidates[2].id, f"second-{project_title}@example.org")].verdict is Verdict.REJECT
    assert by[(candidates[3].id, me_email)].verdict is Verdict.REJECT

    invalid = {i.span_id: {p.rule for p in i.problems} for i in pulled.invalid}
    assert set(invalid) == {candidates[1].id, candidates[4].id}
    assert {"acyclic", "edge-backwards"} <= invalid[candidates[1].id]
    assert invalid[candidates[4].id] == {"target-removed"}
    assert all(d.id not in invalid for d in decisions)

    s = pulled.summary
    assert (s.decisions, s.accepted, s.accepted_with_edits, s.rejected) == (5, 2, 1, 2)
    assert s.acceptance_rate == pytest.approx(3 / 5) and s.edit_rate == pytest.approx(1 / 3)
    assert s.multi_reviewed_spans == 2 and s.pairs == 2
    assert s.verdict_agreement == pytest.approx(0.5)
    assert s.mean_pair_edge_f1 == pytest.approx(1.0)


def test_accept_with_a_changed_graph_is_recorded_as_edited(client, candidates, conversations,
                                                          project_title):
    report = push_candidates(client, candidates[2:3], conversations, project=project_title,
                             progress=False)
    task = _tasks_by_span(client, report.project_id)[candidates[2].id]
    _annotate(client, task, verdict="accept", edit=_drop_turns(5, 4))
    pulled = pull_decisions(client, conversations, project=report.project_id)
    (d,) = pulled.decisions
    assert d.verdict is Verdict.ACCEPT_WITH_EDITS and d.edited and pulled.accept_marked_edited == 1


def test_unreachable_server_is_one_clear_error_and_writes_nothing(candidates_file,
                                                                  conversations_file, tmp_path):
    dead = Connection.resolve("http://127.0.0.1:9", "some-key-1234")
    with ReviewClient(dead) as client:
        with pytest.raises(ServiceError, match="cannot reach Label Studio at http://127.0.0.1:9"):
            push_files(client, candidates_file, conversations_file, project="x", progress=False)
    out = tmp_path / "reviewed.jsonl"
    result = CliRunner().invoke(app, ["review", "pull", "--conversations", str(conversations_file),
                                      "--out", str(out), "--url", "http://127.0.0.1:9",
                                      "--api-key", "secret-key-never-shown"])
    assert result.exit_code == ExitCode.SERVICE
    assert "cannot reach Label Studio" in result.output
    assert "secret-key-never-shown" not in result.output
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_wrong_key_is_one_clear_error_and_writes_nothing(label_studio, candidates_file,
                                                         conversations_file, tmp_path):
    out = tmp_path / "reviewed.jsonl"
    runner = CliRunner()
    for args in (["push", "--candidates", str(candidates_file)],
                 ["pull", "--out", str(out)]):
        result = runner.invoke(app, ["review", *args, "--conversations", str(conversations_file),
                                     "--url", label_studio.url, "--api-key", "wrong-key-xyz"])
        assert result.exit_code == ExitCode.SERVICE, result.output
        assert "refused the API key" in result.output
        assert "wrong-key-xyz" not in result.output
        assert result.output.count("\n") <= 3  # one message, no traceback
    assert list(tmp_path.iterdir()) == []


def test_missing_conversation_stops_before_any_request(candidates, conversations, tmp_path):
    convs = {k: v for k, v in conversations.items() if k != candidates[0].conversation_id}
    dead = Connection.resolve("http://127.0.0.1:9", "k" * 10)
    with ReviewClient(dead) as client:
        with pytest.raises(InputError, match="is not in the conversations file"):
            push_candidates(client, candidates, convs, project="x", progress=False)
        assert client.requests == 0


def test_missing_settings_name_the_variables(monkeypatch, candidates_file, conversations_file):
    monkeypatch.delenv("LABEL_STUDIO_URL", raising=False)
    monkeypatch.delenv("LABEL_STUDIO_API_KEY", raising=False)
    result = CliRunner().invoke(app, ["review", "push", "--candidates", str(candidates_file),
                                      "--conversations", str(conversations_file)])
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "LABEL_STUDIO_URL and LABEL_STUDIO_API_KEY" in result.output


def test_cli_push_and_pull_print_the_acceptance_table(label_studio, client, candidates_file,
                                                      conversations_file, project_title, tmp_path,
                                                      monkeypatch):
    monkeypatch.setenv("LABEL_STUDIO_URL", label_studio.url)
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", label_studio.api_key)
    runner = CliRunner()
    pushed = runner.invoke(app, ["review", "push", "--candidates", str(candidates_file),
                                 "--conversations", str(conversations_file),
                                 "--project", project_title, "--batch-size", "3"])
    assert pushed.exit_code == 0, pushed.output
    assert "imported 5 task(s) in 2 batch(es)" in pushed.output
    assert label_studio.api_key not in pushed.output
    project_id = int(pushed.output.strip().splitlines()[-1].rstrip("/").split("/")[-2])
    task = next(iter(_tasks_by_span(client, project_id).values()))
    _annotate(client, task, verdict="accept")
    out = tmp_path / "reviewed.jsonl"
    pulled = runner.invoke(app, ["review", "pull", "--conversations", str(conversations_file),
                                 "--out", str(out), "--project", project_title])
    assert pulled.exit_code == 0, pulled.output
    assert "acceptance rate" in pulled.output and "100.0%" in pulled.output
    assert "1 decision(s)" in pulled.output
    assert label_studio.api_key not in pulled.output
    assert len(list(read_records(out, ReviewDecision))) == 1


def test_strict_pull_that_leaves_an_annotation_out_writes_nothing(
        label_studio, client, candidates, candidates_file, conversations, conversations_file,
        project_title, tmp_path):
    report = push_candidates(client, candidates, conversations, project=project_title,
                             progress=False)
    tasks = _tasks_by_span(client, report.project_id)
    _annotate(client, tasks[candidates[0].id], verdict="accept")
    _annotate(client, tasks[candidates[1].id], verdict="accept", edit=_add_relation(8, 10))
    out = tmp_path / "reviewed.jsonl"
    result = CliRunner().invoke(app, ["review", "pull", "--conversations", str(conversations_file),
                                      "--out", str(out), "--project", project_title, "--strict",
                                      "--url", label_studio.url, "--api-key",
                                      label_studio.api_key])
    assert result.exit_code == ExitCode.INVALID, result.output
    assert "not written" in result.output and "Traceback" not in result.output
    assert not out.exists() and list(tmp_path.iterdir()) == []
    # Without --strict the same pull writes the valid decision and reports the other.
    pulled = pull_to_file(client, conversations_file, out, project=project_title)
    assert pulled.written == out and len(pulled.decisions) == 1 and len(pulled.invalid) == 1
