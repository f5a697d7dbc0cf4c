"""`review post-checks`: a second person's checks of claims, as their annotations in Label Studio.

Each line of a pass-2 file of the annotated claims set (a :class:`~mtcabench.model.ClaimCheck`)
becomes the annotation its checker would have submitted in the browser on the pushed task of
its claim (the pass-1 candidate, pushed with `review push`): the graph after the check as
regions and relations, the dependency type, the claim's kind, the verdict, and the notes as
the comment, completed by the checker's Label Studio user (a pseudonym's account is
``p2@pseudonym.invalid``, :mod:`mtcabench.review._users`). `review pull` then reads them as it
reads every reviewer's: the decisions it writes are those `review checks` reads from the
files.

Everything is read and checked before the first annotation is written: each line is read as
`review checks` reads it, its annotation is read back offline as `review pull` will read it
(it must give the line's decision), every claim must have a task, and no task may hold two
annotations by the same checker. A rerun writes nothing that is there already; an annotation
by the checker that says something else than its line (a check corrected since) is updated.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtcabench.errors import InputError, ServiceError
from mtcabench.io import load_conversations
from mtcabench.model import Candidate, Conversation, ReviewDecision
from mtcabench.progress import progress_bar
from mtcabench.review import _ui as ui
from mtcabench.review._claims import iter_checks
from mtcabench.review._client import ReviewClient
from mtcabench.review._pull import InvalidAnnotation, decide, export_annotated
from mtcabench.review._push import find_project, read_candidates, task_ids_by_span
from mtcabench.review._tasks import build_task, graph_result
from mtcabench.review._users import account_email, ensure_users, reviewer_of

#: model.Verdict value -> the verdict choice a reviewer ticks.
_VERDICT_CHOICE = {v: k for k, v in ui.VERDICTS.items()}


@dataclass(frozen=True)
class CheckLine:
    """One pass-2 line: where it is, and the decision it makes."""

    path: Path
    line: int
    decision: ReviewDecision


@dataclass
class PostReport:
    """What a post did."""

    project_id: int
    project_url: str
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    users_created: list[str] = field(default_factory=list)  # checkers given an account now
    requests: int = 0
    seconds: float = 0.0

    def lines(self) -> list[str]:
        out = [f"project {self.project_id}: {self.project_url}",
               f"annotations: {self.created} created, {self.updated} updated (the check "
               f"changed since), {self.unchanged} already there"]
        if self.users_created:
            out.append(f"Label Studio users created for {len(self.users_created)} checker(s): "
                       + ", ".join(account_email(n) for n in self.users_created))
        out.append(f"{self.requests} request(s) in {self.seconds:.1f} s")
        return out


def read_check_lines(paths: Iterable[str | Path], conversations: Mapping[str, Conversation],
                     candidates: Mapping[str, Candidate]) -> list[CheckLine]:
    """Every line of the pass-2 files, read as `review checks` reads them; a claim checked
    in two files is an error naming both lines."""
    seen: dict[str, CheckLine] = {}
    for path in paths:
        for lineno, d in iter_checks(path, dict(conversations), dict(candidates)):
            first = seen.get(d.id)
            if first is not None:
                raise InputError.at(path, f"this claim is checked in {first.path}:{first.line} "
                                    "too", line=lineno, record=d.id)
            seen[d.id] = CheckLine(Path(path), lineno, d)
    return list(seen.values())


def annotation_result(decision: ReviewDecision, conversation: Conversation) -> list[dict[str, Any]]:
    """The result a reviewer's browser submits for ``decision``: the graph's regions and
    relations, the type, the claim's kind, the verdict and the comment."""
    result = graph_result(conversation, decision.span, decision.graph, decision.dependency_type,
                          decision.claim_kind)
    result.append({"id": "verdict", "from_name": ui.VERDICT, "to_name": ui.DIALOGUE,
                   "type": "choices",
                   "value": {"choices": [_VERDICT_CHOICE[decision.verdict.value]]}})
    if decision.comment:
        result.append({"id": "comment", "from_name": ui.COMMENT, "to_name": ui.DIALOGUE,
                       "type": "textarea", "value": {"text": [decision.comment]}})
    return result


def decision_key(d: ReviewDecision) -> tuple:
    """What a decision says (not when, nor where it was read from): the fields two readings
    of one check must agree on."""
    return (d.id, d.verdict, d.dependency_type, tuple(sorted(d.graph.pairs())),
            tuple(sorted(set(d.graph.nodes))), d.span_kind, d.claim_kind, d.edited, d.comment,
            d.reviewer)


def _differences(a: ReviewDecision, b: ReviewDecision) -> str:
    names = ("id", "verdict", "dependency type", "edges", "nodes", "span kind", "claim kind",
             "edited", "comment", "reviewer")
    return ", ".join(n for n, x, y in zip(names, decision_key(a), decision_key(b)) if x != y)


def _completed_by(annotation: dict[str, Any]) -> int | None:
    by = annotation.get("completed_by")
    return by.get("id") if isinstance(by, dict) else by


def post_checks(
    client: ReviewClient,
    checks: list[CheckLine],
    candidates: Mapping[str, Candidate],
    conversations: Mapping[str, Conversation],
    *,
    project: str | int = ui.DEFAULT_PROJECT,
    progress: bool = True,
) -> PostReport:
    """Post each check as its checker's annotation on its claim's task (see the module)."""
    start, first_request = time.perf_counter(), client.requests
    # Offline first: each annotation must read back, as pull reads it, as its line's decision.
    results: dict[str, list[dict[str, Any]]] = {}
    for chk in checks:
        d = chk.decision
        cand, conv = candidates[d.id], conversations[d.conversation_id]
        result = annotation_result(d, conv)
        back = decide({"id": None, "data": build_task(cand, conv)["data"]},
                      {"id": None, "completed_by": 0, "result": result}, conversations,
                      {0: reviewer_of(account_email(d.reviewer or ""))})
        if isinstance(back, InvalidAnnotation):
            raise InputError.at(chk.path, f"its annotation would not be read back: {back}",
                                line=chk.line, record=d.id)
        if decision_key(back) != decision_key(d):
            raise InputError.at(chk.path, "its annotation would be read back with another "
                                f"{_differences(back, d)}", line=chk.line, record=d.id)
        results[d.id] = result

    client.check()
    project_id = find_project(client, project)
    if project_id is None:
        raise ServiceError(f"Label Studio at {client.url} has no project titled {project!r}; "
                           "push the pass-1 candidates first (`mtcabench review push`) or give "
                           "--project")
    tasks = task_ids_by_span(client, project_id)
    missing = [chk for chk in checks if chk.decision.id not in tasks]
    if missing:
        first = missing[0]
        more = f"; {len(missing) - 1} more check(s) have none" if len(missing) > 1 else ""
        raise InputError.at(first.path, f"this claim has no task in Label Studio project "
                            f"{project_id}: push its pass-1 candidate first (`mtcabench review "
                            f"push --candidates ...`){more}", line=first.line,
                            record=first.decision.id)
    users, created_users = ensure_users(client, {c.decision.reviewer or "" for c in checks})
    exported = {t.get("id"): t for t in export_annotated(client, project_id)}

    # Plan every write before the first: what is there, what changes.
    todo: list[tuple[CheckLine, int, int | None]] = []  # (check, task id, annotation to update)
    report = PostReport(project_id=project_id,
                        project_url=f"{client.url}/projects/{project_id}/data",
                        users_created=created_users)
    for chk in sorted(checks, key=lambda c: tasks[c.decision.id]):
        d = chk.decision
        task_id, uid = tasks[d.id], users[d.reviewer or ""]
        task = exported.get(task_id) or {}
        mine = [a for a in task.get("annotations") or []
                if _completed_by(a) == uid and not a.get("was_cancelled")]
        if len(mine) > 1:
            raise InputError.at(chk.path, f"task {task_id} holds {len(mine)} annotations by "
                                f"{d.reviewer}: delete all but one in Label Studio, then post "
                                "again", line=chk.line, record=d.id)
        if not mine:
            todo.append((chk, task_id, None))
            continue
        there = decide(task, mine[0], conversations, {uid: d.reviewer or ""})
        if isinstance(there, ReviewDecision) and decision_key(there) == decision_key(d):
            report.unchanged += 1
        else:
            todo.append((chk, task_id, mine[0].get("id")))

    with progress_bar("posting checks", len(todo), enabled=progress and bool(todo)) as bar:
        for chk, task_id, ann_id in todo:
            d = chk.decision
            uid = users[d.reviewer or ""]
            if ann_id is None:
                client.call(f"annotating task {task_id}", client.sdk.annotations.create,
                            id=task_id, result=results[d.id], completed_by=uid,
                            was_cancelled=False, ground_truth=False)
                report.created += 1
            else:
                client.call(f"updating annotation {ann_id} of task {task_id}",
                            client.sdk.annotations.update, id=ann_id, result=results[d.id])
                report.updated += 1
            bar.advance(1)
    report.requests = client.requests - first_request
    report.seconds = time.perf_counter() - start
    return report


def post_check_files(
    client: ReviewClient, candidates_path: str | Path, conversations_path: str | Path,
    checks_paths: Iterable[str | Path], **kwargs: Any,
) -> PostReport:
    """:func:`post_checks` on files (everything read and checked before any request)."""
    conversations = load_conversations(conversations_path)
    candidates = {c.id: c for c in read_candidates(candidates_path)}
    checks = read_check_lines(checks_paths, conversations, candidates)
    return post_checks(client, checks, candidates, conversations, **kwargs)
