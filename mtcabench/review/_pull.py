"""`review pull`: reviewers' annotations out of Label Studio, as ReviewDecision records.

One export request brings every annotated task; each (non-skipped) annotation becomes one
decision by its reviewer. An annotation meant to accept a graph that breaks the rules is
reported with its reasons and left out, never repaired. The reviewed file is written
atomically, and only after everything was read, so a failure writes nothing.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from mtcabench.errors import ServiceError
from mtcabench.io import (
    JSONError,
    check_outputs_are_not_inputs,
    load_conversations,
    loads,
    write_records,
)
from mtcabench.model import (
    Candidate,
    Conversation,
    DecisionSource,
    ReviewDecision,
    SpanKind,
    Verdict,
)
from mtcabench.review._annotations import (
    Problem,
    graph_edit,
    graph_problems,
    read_annotation,
)
from mtcabench.review._client import ReviewClient
from mtcabench.review._export import check_export
from mtcabench.review._push import find_project
from mtcabench.review._summary import ReviewSummary, summarize
from mtcabench.review._users import reviewer_of


@dataclass(frozen=True)
class InvalidAnnotation:
    """An annotation left out of the reviewed file, and why."""

    span_id: str
    task_id: int | None
    annotation_id: int | None
    reviewer: str | None
    problems: tuple[Problem, ...]

    def __str__(self) -> str:
        where = f"task {self.task_id}, annotation {self.annotation_id}"
        who = f" by {self.reviewer}" if self.reviewer else ""
        return f"{self.span_id} ({where}{who}): " + "; ".join(map(str, self.problems))


@dataclass
class PullReport:
    """What a pull found: the decisions, what was left out, and the summary figures."""

    decisions: list[ReviewDecision]
    invalid: list[InvalidAnnotation] = field(default_factory=list)
    skipped: int = 0  # annotations the reviewer skipped (cancelled)
    tasks_annotated: int = 0
    accept_marked_edited: int = 0  # "accept" with a changed graph, recorded as accept_with_edits
    requests: int = 0
    seconds: float = 0.0
    summary: ReviewSummary | None = None
    written: Path | None = None  # the file written (None: nothing written)


def _parse_time(value: Any) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None


def _candidate_of(task: dict[str, Any]) -> Candidate | None:
    stored = task.get("data") or {}
    for key in ("mtcabench", "candidate"):  # any shape of data: a task we did not push
        stored = stored.get(key) if isinstance(stored, dict) else None
    if not isinstance(stored, dict):
        return None
    try:
        return Candidate.model_validate({**stored, "kind": "candidate"})
    except ValueError:
        return None


def decide(
    task: dict[str, Any], annotation: dict[str, Any], conversations: Mapping[str, Conversation],
    reviewers: Mapping[int, str],
) -> ReviewDecision | InvalidAnnotation:
    """One annotation of one task as a decision, or the reasons it cannot be one."""
    task_id, ann_id = task.get("id"), annotation.get("id")
    completed_by = annotation.get("completed_by")
    if isinstance(completed_by, dict):
        completed_by = completed_by.get("id")
    reviewer = reviewers.get(completed_by) if completed_by is not None else None
    if reviewer is None and completed_by is not None:
        reviewer = f"label-studio-user-{completed_by}"
    candidate = _candidate_of(task)
    span_id = (task.get("meta") or {}).get("span_id") or (task.get("data") or {}).get("span_id")

    def invalid(*problems: Problem) -> InvalidAnnotation:
        return InvalidAnnotation(str(span_id or f"task-{task_id}"), task_id, ann_id, reviewer,
                                 tuple(problems))

    if candidate is None or candidate.span is None or candidate.graph is None:
        return invalid(Problem("not-an-mtcabench-task",
                               "the task carries no mtcabench candidate (was it pushed by "
                               "`mtcabench review push`?)"))
    conv = conversations.get(candidate.conversation_id)
    if conv is None:
        return invalid(Problem("conversation-missing",
                               f"conversation {candidate.conversation_id!r} is not in the "
                               "conversations file"))
    read = read_annotation(annotation.get("result") or [], conv)
    # A value stays a value; a claim keeps its kind unless the reviewer chose another.
    claim_kind = candidate.claim_kind
    if read.claim_kind is not None:
        if candidate.span_kind is not SpanKind.CLAIM:
            return invalid(Problem("claim-kind", f"claim kind {read.claim_kind.value!r} chosen "
                                   "for a value span (only a claim has a kind)"))
        claim_kind = read.claim_kind
    base = dict(
        id=candidate.id, conversation_id=candidate.conversation_id, span=candidate.span,
        decision_source=DecisionSource.HUMAN, reviewer=reviewer,
        decided_at=_parse_time(annotation.get("updated_at") or annotation.get("created_at")),
        comment=read.comment, annotator=candidate.annotator,
        review_task=f"label-studio:task/{task_id}/annotation/{ann_id}",
        span_kind=candidate.span_kind, claim_kind=claim_kind,
    )
    if read.verdict == Verdict.REJECT.value:
        # A rejected span leaves the benchmark: its graph is kept as proposed, for the record.
        return ReviewDecision(**base, verdict=Verdict.REJECT,
                              dependency_type=read.dependency_type or candidate.dependency_type,
                              graph=candidate.graph)
    problems = graph_problems(read, conv, candidate.span, record=candidate.id)
    if problems:
        return invalid(*problems)
    assert read.graph is not None and read.dependency_type is not None
    edit = graph_edit(candidate.graph, candidate.dependency_type, read.graph, read.dependency_type)
    verdict = Verdict(read.verdict)
    edited = edit is not None or claim_kind is not candidate.claim_kind
    return ReviewDecision(**base, verdict=verdict, dependency_type=read.dependency_type,
                          graph=read.graph, edited=edited, edit=edit)


def export_annotated(client: ReviewClient, project_id: int) -> list[dict[str, Any]]:
    """Every annotated task of the project, in one export request."""
    def download() -> bytes:
        return b"".join(client.sdk.projects.exports.download_sync(
            id=project_id, export_type="JSON", download_all_tasks=False))
    raw = client.call(f"exporting project {project_id}", download)
    try:
        tasks = loads(raw)
    except JSONError as exc:
        raise ServiceError(f"Label Studio at {client.url} sent an export that is not JSON "
                           f"({exc.reason})") from None
    if not isinstance(tasks, list):
        raise ServiceError(f"Label Studio at {client.url} sent an export that is not a task list")
    check_export(tasks, client.url)  # its shape, before any of it is read
    return tasks


def reviewer_names(client: ReviewClient) -> dict[int, str]:
    """User id -> e-mail (or username) of every user of the server; a pseudonym's account
    (``p2@pseudonym.invalid``, see :mod:`mtcabench.review._users`) as the pseudonym."""
    users = client.call("listing users", client.sdk.users.list)
    return {u.id: reviewer_of(u.email) if u.email else (u.username or f"label-studio-user-{u.id}")
            for u in users}


def pull_decisions(
    client: ReviewClient,
    conversations: Mapping[str, Conversation],
    *,
    project: str | int,
) -> PullReport:
    """Read every annotation of the project as decisions (nothing is written here)."""
    start, first_request = time.perf_counter(), client.requests
    client.check()
    project_id = find_project(client, project)
    if project_id is None:
        raise ServiceError(f"Label Studio at {client.url} has no project titled {project!r}; "
                           "push candidates first or give --project")
    tasks = export_annotated(client, project_id)
    reviewers = reviewer_names(client)
    report = PullReport(decisions=[])
    for task in tasks:
        annotations = task.get("annotations") or []
        if annotations:
            report.tasks_annotated += 1
        for ann in annotations:
            if ann.get("was_cancelled"):
                report.skipped += 1
                continue
            out = decide(task, ann, conversations, reviewers)
            if isinstance(out, InvalidAnnotation):
                report.invalid.append(out)
                continue
            if out.verdict is Verdict.ACCEPT and out.edited:
                # The reviewer changed the graph but ticked "accept": the record must say
                # that the gold graph is not the proposal. Counted and printed.
                out = out.model_copy(update={"verdict": Verdict.ACCEPT_WITH_EDITS})
                report.accept_marked_edited += 1
            report.decisions.append(out)
    report.decisions.sort(key=lambda d: (d.id, d.decided_at.isoformat() if d.decided_at else "",
                                         d.review_task or ""))
    report.summary = summarize(report.decisions)
    report.requests = client.requests - first_request
    report.seconds = time.perf_counter() - start
    return report


def pull_to_file(
    client: ReviewClient, conversations: Mapping[str, Conversation] | str | Path,
    out: str | Path, *, project: str | int, strict: bool = False,
) -> PullReport:
    """:func:`pull_decisions`, then write the decisions atomically to ``out``.

    ``conversations`` is the conversations file (refused as ``out``) or the loaded records.
    With ``strict``, a pull that left an annotation out writes nothing (``report.written`` is
    None) and the caller refuses it (``review pull --strict`` exits 5).
    """
    if not isinstance(conversations, Mapping):
        check_outputs_are_not_inputs([conversations], [out])
        conversations = load_conversations(conversations)
    report = pull_decisions(client, conversations, project=project)
    if strict and report.invalid:
        return report
    write_records(out, report.decisions)
    report.written = Path(out)
    return report


