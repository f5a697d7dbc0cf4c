"""The split by task (mtcabench.benchmark.split_of), shared by the studies and a release built
--split-by-task: one task's runs on one side, whatever the agent, source, trial or edit."""

from __future__ import annotations

import zlib

from mtcabench import studies
from mtcabench.benchmark import split_of, task_of

TELECOM = "[mms_issue]break_app_both_permissions[PERSONA:Hard]"


def test_a_named_task_is_split_by_its_name_not_by_the_agent():
    """tau2-bench telecom names its tasks: every agent's run of one lands in one split (the
    CRC-32 of the whole id put the runs of one task on several sides)."""
    ids = [f"tau2/telecom/{m}/llm_agent/task-{TELECOM}/trial-0"
           for m in ("gpt-4o", "gpt-4.1", "ft:gpt-4.1-2025-04-14:sierra:x", "o3", "whissle")]
    assert task_of(ids[0]) == TELECOM
    assert {split_of(i, all_trials=True) for i in ids} == {
        {2: "train", 3: "train", 4: "train", 0: "dev", 1: "test"}[zlib.crc32(TELECOM.encode()) % 5]}
    names = [f"[x]task_{i}" for i in range(40)]
    sides = {split_of(f"tau2/telecom/a/llm_agent/task-{n}/trial-0", all_trials=True)
             for n in names}
    assert sides == {"train", "dev", "test"}


def test_a_counterfactual_is_in_its_real_conversations_split():
    for task in range(10):
        real = f"taubench/airline/gpt-4o/task-{task}/trial-0"
        assert split_of(f"{real}/counterfactual-8-233") == split_of(real)
        assert task_of(f"{real}/counterfactual-8-233") == str(task)


def test_numeric_tasks_across_sources_and_all_trials_for_a_release():
    assert split_of("tau2/retail/gpt-4.1/llm_agent/task-5/trial-0") == "dev"
    assert split_of("taubench/airline/gpt-4o/task-5/trial-3") is None  # the studies: unused
    assert split_of("taubench/airline/gpt-4o/task-5/trial-3", all_trials=True) == "dev"
    assert split_of("taubench/airline/gpt-4o/task-6/trial-4", all_trials=True) == "test"
    assert split_of("taubench/airline/gpt-4o/task-7/trial-4", all_trials=True) == "train"


def test_the_studies_re_export_the_one_rule():
    assert studies.split_of is split_of
