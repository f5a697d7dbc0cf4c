"""The split by task: which of train, dev and test a conversation belongs to, by its id.

One rule for the studies (:mod:`mtcabench.studies`, which tune on dev and report on test) and
for a release built with ``--split-by-task``: a release's train split then never holds a task
that a study's dev or test holds. The task is read from the id's ``.../task-<task>/trial-<n>``
part, so every agent's and every source's runs of one task land in one split, and a
counterfactual conversation (``<real id>/counterfactual-...``) in its real conversation's:

- a numeric task id (TauBench, tau2-bench airline and retail): its value mod 5;
- any other task id (tau2-bench telecom names its tasks): the CRC-32 of the task's name mod 5;
- an id without a task: the CRC-32 of the whole id mod 5.

Buckets 2, 3, 4 are train, 0 dev, 1 test. The studies use trials 0 and 1 of a dev or test task
only (the model pass is their cost) and leave the others unused; a release keeps every
conversation and puts all trials of a task in the task's split (``all_trials``).
"""

from __future__ import annotations

import re
import zlib

#: The split: task id mod 5 of each split, and the trials of dev and test the studies use
#: (every trial of a training task is a training conversation: only weights are learned there).
DEV_BUCKETS, TEST_BUCKETS, TRIALS = frozenset({0}), frozenset({1}), frozenset({0, 1})
TRAIN_BUCKETS = frozenset({2, 3, 4})
SPLITS = ("train", "dev", "test")
#: ``/task-<task>/trial-<n>`` at the end of an id, or before a further part: a counterfactual
#: conversation (``<real id>/counterfactual-<turn>-<offset>``) is in its real one's split.
_TASK = re.compile(r"/task-([^/]+)/trial-(\d+)(?=/|$)")


def task_of(conversation_id: str) -> str | None:
    """The task named by a conversation id's ``/task-<task>/trial-<n>`` tail, or None."""
    m = _TASK.search(conversation_id)
    return m[1] if m else None


def bucket_of(conversation_id: str) -> int:
    """0-4: the task's bucket (numeric task id mod 5, else CRC-32 of the task, else of the id)."""
    task = task_of(conversation_id)
    if task is None:
        return zlib.crc32(conversation_id.encode()) % 5
    # A number's value mod 5 is its last digit's: never int() of the whole, which refuses
    # a task id of more than 4,300 digits (and would read one of millions slowly).
    return int(task[-1]) % 5 if task.isdecimal() else zlib.crc32(task.encode()) % 5


def _is_used_trial(digits: str) -> bool:
    """Whether a trial's digits name one the studies use (0 or 1), read without int() of a
    number of any length."""
    value = digits.lstrip("0") or "0"
    return len(value) == 1 and int(value) in TRIALS


def split_of(conversation_id: str, *, all_trials: bool = False) -> str | None:
    """``train``, ``dev``, ``test``, or None for a trial of a dev or test task that the
    studies leave unused (trials 2 and later); with ``all_trials`` never None."""
    bucket = bucket_of(conversation_id)
    if bucket in TRAIN_BUCKETS:
        return "train"
    m = _TASK.search(conversation_id)
    if m and not _is_used_trial(m[2]) and not all_trials:
        return None
    return "dev" if bucket in DEV_BUCKETS else "test"
