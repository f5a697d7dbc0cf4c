"""Tasks built from candidates, and annotations read back into graphs (no server needed)."""

from __future__ import annotations

import copy

import pytest

from mtcabench.model import DependencyType, EdgeKind, GraphEdit
from mtcabench.review import build_task, disagreement, graph_edit, read_annotation, review_order
from mtcabench.review._annotations import graph_problems
from mtcabench.review._tasks import turn_display_text


def _result_with_verdict(task, verdict="accept"):
    result = copy.deepcopy(task["predictions"][0]["result"])
    result.append({"id": "v", "from_name": "verdict", "to_name": "dialogue", "type": "choices",
                   "value": {"choices": [verdict]}})
    return result


def test_task_shows_every_turn_and_the_proposal(candidates, conversations):
    cand = candidates[1]  # the chained span in S1
    conv = conversations[cand.conversation_id]
    task = build_task(cand, conv)
    dialogue = task["data"]["dialogue"]
    assert len(dialogue) == len(conv.turns)
    assert dialogue[10]["author"] == "#10 assistant"
    assert dialogue[7]["author"] == "#7 tool · get_reservation_details"
    assert [p["text"] for p in dialogue] == [t.text for t in conv.turns]
    assert task["meta"]["span_id"] == cand.id
    pred = task["predictions"][0]
    assert pred["model_version"] == "llm:smollm2-135m@verify-v1"
    regions = [r for r in pred["result"] if r["type"] == "paragraphlabels"]
    target = [r for r in regions if r["value"]["paragraphlabels"] == ["Target"]]
    assert len(target) == 1
    v = target[0]["value"]
    assert (v["start"], v["startOffset"], v["endOffset"], v["text"]) == ("10", cand.span.start,
                                                                         cand.span.end, "HAT136")
    assert dialogue[10]["text"][v["startOffset"]:v["endOffset"]] == "HAT136"
    labels = {int(r["value"]["start"]): r["value"]["paragraphlabels"][0] for r in regions}
    assert labels == {10: "Target", 8: "Intermediate", 7: "Source", 6: "Intermediate"}
    relations = {(r["from_id"], r["to_id"], r["labels"][0]) for r in pred["result"]
                 if r["type"] == "relation"}
    assert ("turn7", "turn6", "answers call") in relations
    assert ("turn10", "turn8", "depends on") in relations


def test_hallucination_sources_are_labelled_as_such(candidates, conversations):
    cand = next(c for c in candidates if c.dependency_type is DependencyType.HALLUCINATION)
    task = build_task(cand, conversations[cand.conversation_id])
    labels = {r["value"]["paragraphlabels"][0] for r in task["predictions"][0]["result"]
              if r["type"] == "paragraphlabels"}
    assert "Hallucinated source" in labels and "Source" not in labels


def test_review_order_puts_disagreement_first(candidates):
    assert disagreement(candidates[1]) == pytest.approx(0.6)
    assert disagreement(candidates[2]) == pytest.approx(0.0)
    assert disagreement(candidates[0]) is None
    ordered = review_order(candidates)
    assert [c.id for c in ordered[:2]] == [candidates[1].id, candidates[2].id]
    assert ordered[2:] == [candidates[0], candidates[3], candidates[4]]


def test_markup_is_kept_verbatim_in_task_data(candidates, conversations):
    task = build_task(candidates[4], conversations[candidates[4].conversation_id])
    texts = [p["text"] for p in task["data"]["dialogue"]]
    assert any("<script>" in t for t in texts) and any("onerror=" in t for t in texts)
    conv = conversations[candidates[4].conversation_id]
    assert [turn_display_text(t) for t in conv.turns] == texts


def test_prediction_reads_back_as_the_candidate_graph(candidates, conversations):
    for cand in candidates:
        conv = conversations[cand.conversation_id]
        read = read_annotation(_result_with_verdict(build_task(cand, conv)), conv)
        assert read.problems == []
        assert read.graph.target == cand.graph.target
        assert read.graph.pairs() == cand.graph.pairs()
        assert set(read.graph.nodes) == set(cand.graph.nodes)
        assert {e.pair for e in read.graph.edges if e.kind is EdgeKind.STRUCTURAL} == {
            e.pair for e in cand.graph.edges if e.kind is EdgeKind.STRUCTURAL}
        assert read.dependency_type is cand.dependency_type and read.verdict == "accept"
        assert graph_problems(read, conv, cand.span, cand.id) == []
        assert graph_edit(cand.graph, cand.dependency_type, read.graph, read.dependency_type) is None


def _rules(cand, conv, result):
    read = read_annotation(result, conv)
    return {p.rule for p in graph_problems(read, conv, cand.span, cand.id)}


def test_cycle_forward_edge_and_removed_target_are_named(candidates, conversations):
    cand = candidates[1]
    conv = conversations[cand.conversation_id]
    base = _result_with_verdict(build_task(cand, conv))
    # A cycle: 8 -> 10 closes 10 -> 8.
    cycle = base + [{"from_id": "turn8", "to_id": "turn10", "type": "relation",
                     "direction": "right", "labels": []}]
    assert {"acyclic", "edge-backwards"} <= _rules(cand, conv, cycle)
    # A forward edge: the relation drawn the wrong way round.
    forward = [r for r in base if not (r.get("from_id") == "turn10" and r.get("to_id") == "turn8")]
    forward.append({"from_id": "turn8", "to_id": "turn10", "type": "relation",
                    "direction": "right", "labels": []})
    assert "edge-backwards" in _rules(cand, conv, forward)
    # Target removed (with its relations, as the editor does).
    no_target = [r for r in base if r.get("id") != "turn10" and r.get("from_id") != "turn10"]
    assert _rules(cand, conv, no_target) == {"target-removed"}
    # A relation drawn as "left" is the same edge read the other way; "bi" is refused.
    flipped = [dict(r, from_id=r["to_id"], to_id=r["from_id"], direction="left")
               if r.get("type") == "relation" else r for r in base]
    assert _rules(cand, conv, flipped) == set()
    both = [dict(r, direction="bi") if r.get("type") == "relation" else r for r in base]
    assert "undirected-relation" in _rules(cand, conv, both)


def test_missing_verdict_and_edit_diff(candidates, conversations):
    cand = candidates[2]  # multi-source in S2: 6 -> 5, 6 -> 3
    conv = conversations[cand.conversation_id]
    result = copy.deepcopy(build_task(cand, conv)["predictions"][0]["result"])
    assert "no-verdict" in _rules(cand, conv, result)
    # Remove source 3 and its call turn 2 (regions and their relations), change the type.
    kept = [r for r in result if r.get("id") not in ("turn3", "turn2")
            and r.get("from_id") not in ("turn3", "turn2") and r.get("to_id") not in ("turn3", "turn2")]
    for r in kept:
        if r.get("from_name") == "dependency_type":
            r["value"] = {"choices": ["direct"]}
    kept.append({"id": "v", "from_name": "verdict", "to_name": "dialogue", "type": "choices",
                 "value": {"choices": ["accept with edits"]}})
    read = read_annotation(kept, conv)
    assert graph_problems(read, conv, cand.span, cand.id) == []
    edit = graph_edit(cand.graph, cand.dependency_type, read.graph, read.dependency_type)
    assert edit == GraphEdit(edges_removed=[(3, 2), (6, 3)], nodes_removed=[2, 3],
                             type_changed=("multi-source", "direct"))
