"""`review push`: candidates into a Label Studio project, one task per span, idempotently.

Everything is checked before the first request (each candidate's conversation exists, its
graph follows the rules), so bad input stops the push before anything reaches the server.
A rerun imports only the spans the project does not hold yet (matched on span id, kept in
each task's ``meta``), in batches.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from mtcabench.errors import InputError
from mtcabench.graph import check_graph
from mtcabench.io import ascii_int, format_validation_error, iter_json_lines, load_conversations
from mtcabench.model import Candidate, Conversation
from mtcabench.progress import progress_bar
from mtcabench.review import _ui as ui
from mtcabench.review._client import ReviewClient
from mtcabench.review._tasks import build_task, review_order

DEFAULT_BATCH_SIZE = 500
_PAGE_SIZE = 1000


@dataclass
class PushReport:
    """What a push did."""

    project_id: int
    project_url: str
    created_project: bool
    imported: int = 0
    already_present: int = 0
    not_pushed: list[tuple[str, str]] = field(default_factory=list)  # (span id, why)
    batches: int = 0
    batch_size: int = DEFAULT_BATCH_SIZE
    requests: int = 0
    seconds: float = 0.0

    def lines(self) -> list[str]:
        out = [
            f"project {self.project_id} ({'created' if self.created_project else 'updated'}): "
            f"{self.project_url}",
            f"imported {self.imported} task(s) in {self.batches} batch(es) of up to "
            f"{self.batch_size}; {self.already_present} already present",
            f"{self.requests} request(s) in {self.seconds:.1f} s",
        ]
        if self.not_pushed:
            out.append(f"not pushed: {len(self.not_pushed)} candidate(s)")
            out += [f"  {sid}: {why}" for sid, why in self.not_pushed[:50]]
            if len(self.not_pushed) > 50:
                out.append(f"  ... and {len(self.not_pushed) - 50} more")
        return out


def read_candidates(path: str | Path) -> list[Candidate]:
    """All candidates of a file; a duplicate span id is an error naming the line."""
    seen: dict[str, int] = {}
    out: list[Candidate] = []
    for lineno, obj in iter_json_lines(path):
        try:
            cand = Candidate.model_validate(obj)
        except ValidationError as exc:
            rid = obj.get("id")
            raise InputError.at(path, format_validation_error(exc), line=lineno,
                                record=str(rid) if rid else None) from None
        if cand.id in seen:
            raise InputError.at(path, f"duplicate span id (first on line {seen[cand.id]})",
                                line=lineno, record=cand.id)
        seen[cand.id] = lineno
        out.append(cand)
    return out


def reviewable(
    candidates: Iterable[Candidate], conversations: Mapping[str, Conversation], *,
    source: str = "candidates",
) -> tuple[list[Candidate], list[tuple[str, str]]]:
    """Candidates that can be reviewed, and (span id, why) for those that cannot.

    A candidate whose conversation is missing is bad input (the wrong conversations file):
    that stops everything. A rejected candidate or an invalid graph is left out, named.
    """
    ok: list[Candidate] = []
    left_out: list[tuple[str, str]] = []
    for cand in candidates:
        conv = conversations.get(cand.conversation_id)
        if conv is None:
            raise InputError(
                f"{source}: record {cand.id}: conversation {cand.conversation_id!r} is not in the "
                "conversations file; give the file the candidates were made from"
            )
        if cand.status != "ok" or cand.span is None or cand.graph is None or (
            cand.dependency_type is None
        ):
            why = "; ".join(r.reason for r in cand.rejections) or "no graph or dependency type"
            left_out.append((cand.id, f"rejected by annotation ({why})"))
            continue
        violations = check_graph(cand.graph, conv, cand.span, record=cand.id)
        if violations:
            left_out.append((cand.id, "invalid graph: " + "; ".join(
                f"[{v.rule}] {v.detail}" for v in violations)))
            continue
        ok.append(cand)
    return ok, left_out


def find_project(client: ReviewClient, project: str | int) -> int | None:
    """Id of the project given by id or exact title; None if no project has that title."""
    pid = project if isinstance(project, int) else ascii_int(str(project))
    if pid is not None:
        client.call(f"reading project {pid}", client.sdk.projects.get, id=pid)
        return pid
    found = [p for p in client.call("listing projects", lambda: list(
        client.sdk.projects.list(title=str(project), page_size=100))) if p.title == project]
    if len(found) > 1:
        ids = ", ".join(str(p.id) for p in found)
        raise InputError(f"several Label Studio projects are titled {project!r} (ids {ids}): "
                         "give --project with the id")
    return found[0].id if found else None


def ensure_project(client: ReviewClient, project: str | int, *, overlap: int = 1) -> tuple[int, bool]:
    """The project's id, created with our interface if needed, else brought up to date."""
    config, instructions = ui.label_config(), ui.instructions()
    pid = find_project(client, project)
    if pid is None:
        if ascii_int(str(project)) is not None:
            raise InputError(f"no Label Studio project with id {project}")
        created = client.call(
            "creating the project", client.sdk.projects.create,
            title=str(project),
            description="mtcabench: provenance graphs of target spans, for human review",
            label_config=config,
            expert_instruction=instructions,
            show_instruction=True,
            show_collab_predictions=True,  # the proposal pre-fills every reviewer's annotation
            maximum_annotations=overlap,
            overlap_cohort_percentage=100,
        )
        return created.id, True
    current = client.call(f"reading project {pid}", client.sdk.projects.get, id=pid)
    changes = {}
    if (current.label_config or "").strip() != config.strip():
        changes["label_config"] = config
    if (current.expert_instruction or "").strip() != instructions.strip():
        changes["expert_instruction"] = instructions
    if overlap > 1 and (current.maximum_annotations or 1) != overlap:
        changes.update(maximum_annotations=overlap, overlap_cohort_percentage=100)
    if changes:
        client.call(f"updating project {pid}", client.sdk.projects.update, id=pid, **changes)
    return pid, False


def existing_span_ids(client: ReviewClient, project_id: int) -> set[str]:
    """Span ids of the project's tasks, read from task meta only (not the conversations)."""
    return set(task_ids_by_span(client, project_id))


def task_ids_by_span(client: ReviewClient, project_id: int) -> dict[str, int]:
    """Span id -> task id of the project's tasks, from task meta only (not the
    conversations), 1,000 tasks a request."""
    ids: dict[str, int] = {}
    page = 1
    while True:
        body = client.raw_get("listing tasks", "/api/tasks/", project=project_id,
                              include="id,meta", fields="task_only", page=page,
                              page_size=_PAGE_SIZE)
        tasks = body.get("tasks", []) if isinstance(body, dict) else body
        for t in tasks:
            sid = (t.get("meta") or {}).get("span_id")
            if sid:
                ids.setdefault(sid, t.get("id"))
        total = body.get("total", 0) if isinstance(body, dict) else len(tasks)
        if not tasks or page * _PAGE_SIZE >= total:
            return ids
        page += 1


def _clear_model_version(client: ReviewClient, project_id: int) -> None:
    # Label Studio sets the project's model version to the last imported prediction's and
    # then shows only predictions of that version. Candidates from several annotators must
    # all pre-fill their tasks, so the filter is cleared.
    current = client.call(f"reading project {project_id}", client.sdk.projects.get, id=project_id)
    if current.model_version:
        client.call(f"updating project {project_id}", client.sdk.projects.update,
                    id=project_id, model_version="")


def push_candidates(
    client: ReviewClient,
    candidates: list[Candidate],
    conversations: Mapping[str, Conversation],
    *,
    project: str | int = ui.DEFAULT_PROJECT,
    batch_size: int = DEFAULT_BATCH_SIZE,
    overlap: int = 1,
    progress: bool = True,
    source: str = "candidates",
) -> PushReport:
    """Create or update the project and import the candidates not there yet."""
    if batch_size < 1:
        raise InputError(f"batch size must be at least 1, got {batch_size}")
    start, first_request = time.perf_counter(), client.requests
    ok, left_out = reviewable(candidates, conversations, source=source)

    client.check()
    project_id, created = ensure_project(client, project, overlap=overlap)
    present = set() if created else existing_span_ids(client, project_id)
    todo = [c for c in review_order(ok) if c.id not in present]
    report = PushReport(
        project_id=project_id, project_url=f"{client.url}/projects/{project_id}/data",
        created_project=created, already_present=len(ok) - len(todo), not_pushed=left_out,
        batch_size=batch_size,
    )
    with progress_bar("importing tasks", len(todo), enabled=progress) as bar:
        for i in range(0, len(todo), batch_size):
            # Tasks are built per batch: a task carries its whole conversation.
            batch = [build_task(c, conversations[c.conversation_id])
                     for c in todo[i : i + batch_size]]
            client.call(f"importing tasks {i + 1}-{i + len(batch)}",
                        client.sdk.projects.import_tasks, id=project_id, request=batch)
            report.imported += len(batch)
            report.batches += 1
            bar.advance(len(batch))
    if report.imported:
        _clear_model_version(client, project_id)
    report.requests = client.requests - first_request
    report.seconds = time.perf_counter() - start
    return report


def push_files(
    client: ReviewClient, candidates_path: str | Path, conversations_path: str | Path, **kwargs,
) -> PushReport:
    """:func:`push_candidates` on files (everything read and checked before any request)."""
    conversations = load_conversations(conversations_path)
    candidates = read_candidates(candidates_path)
    return push_candidates(client, candidates, conversations, source=str(candidates_path),
                           **kwargs)
