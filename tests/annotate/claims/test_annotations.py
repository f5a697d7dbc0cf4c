"""The annotated claims set's two passes: read as candidates and review decisions, checked as
every graph is, and their agreement."""

from __future__ import annotations

import json

import pytest

from mtcabench.annotate.claims import read_annotations
from mtcabench.graph import graph_from_pairs
from mtcabench.review import agreement, read_checks
from mtcabench.errors import InputError
from mtcabench.model import (
    Candidate,
    ClaimKind,
    DecisionSource,
    EdgeKind,
    SpanKind,
    Verdict,
)
from mtcabench.io import dump_record

CID = "test/airline/agent/task-1/trial-0"
REFUSAL = "According to our policy, basic economy flights cannot be modified"
#: The refusal: the policy, the reservation's cabin (its lookup, whose id the user gave), and
#: the user's request it answers.
REFUSAL_EDGES = [[6, 0], [6, 3], [6, 1], [3, 2], [2, 1]]


def line(**fields) -> str:
    base = {"conversation_id": CID, "turn": 6, "text": REFUSAL, "edges": REFUSAL_EDGES,
            "type": "multi-source", "claim_kind": "decision", "rationale": "r", "annotator": "p1"}
    return json.dumps({**base, **fields}) + "\n"


def write(tmp_path, name: str, *lines: str):
    path = tmp_path / name
    path.write_text("".join(lines))
    return path


def test_pass_one_becomes_claim_candidates_with_structural_edges(tmp_path, conversation):
    path = write(tmp_path, "p1.jsonl", line())
    [cand] = read_annotations(path, {CID: conversation})
    assert cand.span_kind is SpanKind.CLAIM and cand.claim_kind is ClaimKind.DECISION
    assert conversation.turns[6].text[cand.span.start:cand.span.end] == REFUSAL
    assert cand.annotator.name == "human" and cand.annotator.person == "p1"
    kinds = {e.pair: e.kind for e in cand.graph.edges}
    assert kinds[(3, 2)] is EdgeKind.STRUCTURAL and kinds[(6, 3)] is EdgeKind.CONTENT
    # Written and read back, the claim keeps its kinds; a value candidate writes neither.
    data = dump_record(cand)
    assert data["span_kind"] == "claim" and data["claim_kind"] == "decision"
    assert Candidate.model_validate(data) == cand
    value = cand.model_copy(update={"span_kind": SpanKind.VALUE, "claim_kind": None})
    assert "span_kind" not in dump_record(value) and "claim_kind" not in dump_record(value)


@pytest.mark.parametrize(("fields", "message"), [
    ({"text": "basic economy flights can be modified"}, "is not in turn 6's content"),
    ({"turn": 5}, "turn 5 is a tool turn"),
    ({"edges": [[6, 0], [6, 3]]}, "tool turn 3 needs one structural edge to 2"),
    ({"edges": [[6, 0], [0, 6]]}, "does not point backwards"),
    ({"claim_kind": "refusal"}, "claim_kind"),
    ({"conversation_id": "nope"}, "conversation 'nope' is not in the conversations given"),
])
def test_a_slip_in_pass_one_is_one_line_naming_the_file_and_line(tmp_path, conversation,
                                                                 fields, message):
    path = write(tmp_path, "p1.jsonl", line(turn=10, text="has been cancelled",
                                            edges=[[10, 9], [9, 8], [8, 7]],
                                            claim_kind="confirmation"), line(**fields))
    with pytest.raises(InputError) as err:
        read_annotations(path, {CID: conversation})
    assert str(err.value).startswith(f"{path}:2") and message in str(err.value)
    assert "\n" not in str(err.value)


def test_pass_two_decisions_and_the_agreement(tmp_path, conversation):
    p1 = write(tmp_path, "p1.jsonl", line(),
               line(turn=10, text="has been cancelled", edges=[[10, 9], [9, 8], [8, 7]],
                    type="chained", claim_kind="confirmation"))
    candidates = {c.id: c for c in read_annotations(p1, {CID: conversation})}
    check = {"conversation_id": CID, "checker": "p2"}
    p2 = write(tmp_path, "p2.jsonl",
               json.dumps({**check, "turn": 6, "text": REFUSAL, "verdict": "accept"}) + "\n",
               json.dumps({**check, "turn": 10, "text": "has been cancelled",
                           "verdict": "accept_with_edits",
                           "edges": [[10, 9], [9, 8], [8, 7], [8, 1]], "type": "multi-source",
                           "notes": "added 8->1: the id ABC123 comes from the user"}) + "\n")
    decisions = {d.span.turn: d for d in read_checks(p2, {CID: conversation}, candidates)}
    assert decisions[6].verdict is Verdict.ACCEPT and not decisions[6].edited
    assert decisions[6].graph.pairs() == {tuple(e) for e in REFUSAL_EDGES}
    edit = decisions[10]
    assert edit.verdict is Verdict.ACCEPT_WITH_EDITS and edit.edited
    assert edit.edit.edges_added == [(8, 1)] and edit.edit.edges_removed == []
    assert edit.edit.type_changed == ("chained", "multi-source")
    assert edit.decision_source is DecisionSource.HUMAN and edit.reviewer == "p2"
    assert edit.claim_kind is ClaimKind.CONFIRMATION and edit.comment.startswith("added 8->1")
    a = agreement(candidates.values(), decisions.values())
    assert (a.claims, a.graphs_changed, a.types_changed, a.rejected) == (2, 1, 1, 0)
    # 5 + 3 edges in pass 1, 5 + 4 in pass 2, 8 shared: F1 = 16 / 17.
    assert a.edge_f1 == pytest.approx(16 / 17)


def test_a_claim_is_never_checked_by_its_own_annotator(tmp_path, conversation):
    candidates = {c.id: c for c in read_annotations(write(tmp_path, "p1.jsonl", line()),
                                                    {CID: conversation})}
    p2 = write(tmp_path, "p2.jsonl", json.dumps({"conversation_id": CID, "turn": 6,
                                                 "text": REFUSAL, "checker": "p1",
                                                 "verdict": "accept"}) + "\n")
    with pytest.raises(InputError, match="checked by its own annotator 'p1'"):
        read_checks(p2, {CID: conversation}, candidates)


def test_graph_from_pairs_orders_edges_and_nodes(conversation):
    graph = graph_from_pairs(conversation, 6, [[2, 1], [6, 3], [3, 2], [6, 3]])
    assert [e.pair for e in graph.edges] == [(6, 3), (3, 2), (2, 1)]
    assert graph.nodes == [1, 2, 3, 6]
