"""Hostile exports and annotations (issue 22), no server needed: a broken export is one line
naming the task, the annotation and the field (exit 4, nothing written); an annotation with two
readings (two verdicts, a region at turn 1.9, an unknown label) is left out with its reason,
never read one way; span offsets reach the browser in UTF-16 code units."""

from __future__ import annotations

import copy

import pytest

from mtcabench.errors import ExitCode, ServiceError
from mtcabench.model import Conversation, DependencyType, Role, TargetSpan, Turn
from mtcabench.review import build_task, read_annotation
from mtcabench.review._annotations import graph_problems
from mtcabench.review._export import check_export
from mtcabench.review._tasks import browser_offset

URL = "http://ls.example"


def task(**over):
    base = {"id": 12, "data": {"span_id": "s"}, "meta": {"span_id": "s"}, "annotations": [
        {"id": 5, "completed_by": 1, "was_cancelled": False, "result": [
            {"id": "v", "type": "choices", "from_name": "verdict", "value": {"choices": ["accept"]}}]}]}
    base.update(over)
    return base


def ann(**over):
    a = copy.deepcopy(task()["annotations"][0])
    a.update(over)
    return a


BROKEN = {
    "null result item": ([task(annotations=[ann(result=[None])])], "task 12, annotation 5, result[0]"),
    "completed_by a list": ([task(annotations=[ann(completed_by=[3])])],
                            "task 12, annotation 5, completed_by"),
    "meta a string": ([task(meta="x")], "task 12, meta is 'x'"),
    "annotations a string": ([task(annotations="nope")], "task 12, annotations is 'nope'"),
    "a task that is a number": ([task(), 7], "item 2 of the task list is int '7'"),
    "result a dict": ([task(annotations=[ann(result={"a": 1})])], "annotation 5, result"),
    "labels a string": ([task(annotations=[ann(result=[{"id": "r", "type": "paragraphlabels",
                                                        "value": {"start": "1", "end": "1",
                                                                  "paragraphlabels": "Target"}}])])],
                        "result[0]: its value.paragraphlabels is 'Target'"),
    "choices a number": ([task(annotations=[ann(result=[{"type": "choices", "from_name": "verdict",
                                                         "value": {"choices": 3}}])])],
                         "result[0]: its value.choices is 3"),
    "an annotation that is a string": ([task(annotations=["x"])], "annotation #1 is 'x'"),
}


@pytest.mark.parametrize("name", BROKEN)
def test_a_broken_export_is_one_line_naming_where(name):
    tasks, where = BROKEN[name]
    with pytest.raises(ServiceError) as info:
        check_export(tasks, URL)
    line = info.value.message
    assert info.value.exit_code == ExitCode.SERVICE
    assert "\n" not in line and line.startswith(f"Label Studio at {URL} sent a broken export: ")
    assert where in line, line


def test_a_well_formed_export_passes_with_fields_we_do_not_read():
    tasks = [task(total_annotations=1, annotations=[ann(completed_by={"id": 3, "email": "a@b"},
                                                        lead_time=1.5, result=[])]), task(id=13)]
    assert [t.id for t in check_export(tasks, URL)] == [12, 13]
    assert check_export(tasks, URL)[0].annotations[0].reviewer_id == 3


# ---------------------------------------------------------------- two readings of one annotation
def _base(candidates, conversations):
    cand = candidates[1]
    conv = conversations[cand.conversation_id]
    result = copy.deepcopy(build_task(cand, conv)["predictions"][0]["result"])
    return cand, conv, result


def _problems(cand, conv, result):
    read = read_annotation(result, conv)
    return {p.rule: p.detail for p in graph_problems(read, conv, cand.span, cand.id)}


def verdict(*choices):
    return {"id": "v", "from_name": "verdict", "to_name": "dialogue", "type": "choices",
            "value": {"choices": list(choices)}}


def test_two_verdicts_are_refused_not_read_one_way(candidates, conversations):
    cand, conv, result = _base(candidates, conversations)
    for extra in ([verdict("accept", "reject")], [verdict("accept"), verdict("reject")]):
        found = _problems(cand, conv, result + extra)
        assert "several verdicts chosen: 'accept', 'reject'" in found["verdict"]
        assert "no-verdict" not in found
    assert _problems(cand, conv, result + [verdict("accept"), verdict("accept")]) == {}


def test_two_dependency_types_are_refused(candidates, conversations):
    cand, conv, result = _base(candidates, conversations)
    result.append({"from_name": "dependency_type", "type": "choices",
                   "value": {"choices": ["direct"]}})
    assert "several dependency types" in _problems(cand, conv, result + [verdict("accept")])[
        "dependency-type"]


@pytest.mark.parametrize("start", [1.9, 10.0, True, "10a", "1e1", " "])
def test_a_region_at_a_turn_that_is_no_whole_index_is_refused(candidates, conversations, start):
    cand, conv, result = _base(candidates, conversations)
    region = next(r for r in result if r.get("id") == "turn8")
    region["value"]["start"] = region["value"]["end"] = start
    found = _problems(cand, conv, result + [verdict("accept")])
    assert "not a whole turn index" in found["region"], found


def test_an_unknown_region_label_is_refused(candidates, conversations):
    cand, conv, result = _base(candidates, conversations)
    region = next(r for r in result if r.get("id") == "turn8")
    region["value"]["paragraphlabels"] = ["Intermediat"]
    found = _problems(cand, conv, result + [verdict("accept")])
    assert "'Intermediat'" in found["unknown-label"]


# ---------------------------------------------------------------- UTF-16 offsets
def test_offsets_reach_the_browser_in_utf16_units():
    text = "🎉 Great 🎉: booking QX7 é\u0301 ok 𝄞"
    units = text.encode("utf-16-le")
    for i in range(len(text) + 1):
        assert units[:2 * browser_offset(text, i)].decode("utf-16-le") == text[:i]
    assert browser_offset(text, text.index("QX7")) == text.index("QX7") + 2


def test_the_prediction_marks_the_span_in_browser_units():
    turns = [Turn(index=0, role=Role.USER, content="Is QX7 🎉 booked?"),
             Turn(index=1, role=Role.ASSISTANT, content="🎉🎉 Yes: booking QX7 is confirmed 🎉")]
    conv = Conversation(id="emoji", source="test", domain="airline", turns=turns)
    from mtcabench.model import Annotator, Candidate, Edge, ProvenanceGraph, span_id
    start = turns[1].content.index("QX7")
    span = TargetSpan(turn=1, start=start, end=start + 3, text="QX7")
    cand = Candidate(id=span_id(conv.id, span), conversation_id=conv.id, span=span,
                     dependency_type=DependencyType.DIRECT,
                     graph=ProvenanceGraph(target=1, nodes=[0, 1], edges=[Edge(child=1, parent=0)]),
                     annotator=Annotator(name="lineage", rules_version="r"))
    regions = {r["id"]: r["value"] for r in build_task(cand, conv)["predictions"][0]["result"]
               if r.get("type") == "paragraphlabels"}
    units = turns[1].content.encode("utf-16-le")
    target = regions["turn1"]
    assert units[2 * target["startOffset"]:2 * target["endOffset"]].decode("utf-16-le") == "QX7"
    assert regions["turn0"]["endOffset"] == len(turns[0].content.encode("utf-16-le")) // 2


@pytest.mark.parametrize("data", [{"mtcabench": "x"}, {"mtcabench": {"candidate": [1]}},
                                  {"mtcabench": {"candidate": {"id": 3}}}, {}])
def test_a_task_whose_data_we_did_not_write_is_not_an_mtcabench_task(conversations, data):
    """Our own case: data of another shape (another tool's task in the project) is an
    annotation left out with its reason, never an AttributeError."""
    from mtcabench.review._pull import InvalidAnnotation, decide

    raw = task(data=data)
    out = decide(raw, raw["annotations"][0], conversations, {1: "a@b"})
    assert isinstance(out, InvalidAnnotation)
    assert [p.rule for p in out.problems] == ["not-an-mtcabench-task"]
