"""Human review in Label Studio: push candidates, edit in the browser, pull decisions.

``push`` imports each candidate as a task whose prediction is the proposed graph;
reviewers accept, edit or reject it in the browser; ``pull`` turns their annotations back
into validated :class:`~mtcabench.model.ReviewDecision` records. ``auto_accept`` makes
clearly marked non-human decisions for runs without a reviewer, and ``open_review`` pushes
to an embedded local Label Studio when no server is configured. ``read_checks`` reads pass 2
of the annotated claims set (a second person's checks) as decisions, and ``agreement`` says how
far the two passes agree; ``post_checks`` posts those checks to Label Studio as their checkers'
annotations, for ``pull`` to read as every reviewer's.
"""

from mtcabench.review._annotations import Problem, graph_edit, read_annotation
from mtcabench.review._claims import Agreement, agreement, iter_checks, read_checks
from mtcabench.review._auto import AUTO_COMMENT, AutoAcceptReport, auto_accept, auto_accept_file
from mtcabench.review._client import Connection, ReviewClient
from mtcabench.review._local import ReviewSession, open_review
from mtcabench.review._post_checks import (
    PostReport,
    post_check_files,
    post_checks,
    read_check_lines,
)
from mtcabench.review._pull import (
    InvalidAnnotation,
    PullReport,
    pull_decisions,
    pull_to_file,
)
from mtcabench.review._push import (
    DEFAULT_BATCH_SIZE,
    PushReport,
    ensure_project,
    push_candidates,
    push_files,
    read_candidates,
)
from mtcabench.review._summary import ReviewSummary, summarize
from mtcabench.review._tasks import build_task, disagreement, review_order
from mtcabench.review._ui import DEFAULT_PROJECT, label_config

__all__ = [
    "AUTO_COMMENT",
    "Agreement",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_PROJECT",
    "AutoAcceptReport",
    "Connection",
    "InvalidAnnotation",
    "Problem",
    "PostReport",
    "PullReport",
    "PushReport",
    "ReviewClient",
    "ReviewSession",
    "ReviewSummary",
    "agreement",
    "auto_accept",
    "auto_accept_file",
    "build_task",
    "disagreement",
    "ensure_project",
    "graph_edit",
    "iter_checks",
    "label_config",
    "open_review",
    "post_check_files",
    "post_checks",
    "pull_decisions",
    "pull_to_file",
    "push_candidates",
    "push_files",
    "read_annotation",
    "read_candidates",
    "read_check_lines",
    "read_checks",
    "review_order",
    "summarize",
]
