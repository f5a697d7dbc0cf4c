"""The LLM phases on claims: claim-propose gives a claim's graph and kind, claim-verify checks
it; targets from a file or from the claim proposer; every answer checked like the others."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tests.support.annotate_fakes import FakeOpenAI
from typer.testing import CliRunner

from mtcabench.annotate import annotate_run
from mtcabench.annotate.claims import (
    ClaimTarget,
    claim_targets,
    propose_claims,
    read_claim_targets,
)
from mtcabench.annotate.claims._phases import proposal_from_claim_answer
from mtcabench.cli import app
from mtcabench.errors import ExitCode, InputError
from mtcabench.graph import check_graph
from mtcabench.io import iter_json_lines, write_records
from mtcabench.model import (
    Annotator,
    Candidate,
    ClaimKind,
    Conversation,
    Proposal,
    Role,
    SpanKind,
    ToolCall,
    Turn,
)

POLICY = "Basic economy flights cannot be modified. Refunds take 5 to 7 business days."
CLAIM = "your reservation is in basic economy, so it cannot be changed"
ANNOTATOR = Annotator(name="llm", model="test")


def refusal(cid: str = "claims/a", cabin: str = "basic_economy") -> Conversation:
    call = ToolCall(id=f"{cid}-c1", name="get_reservation_details",
                    arguments={"reservation_id": "ABC123"})
    return Conversation(id=cid, source="test", domain="airline", turns=[
        Turn(index=0, role=Role.SYSTEM, content=POLICY),
        Turn(index=1, role=Role.USER, content="Please change my flight ABC123 to May 20."),
        Turn(index=2, role=Role.ASSISTANT, tool_calls=[call]),
        Turn(index=3, role=Role.TOOL, tool_call_id=call.id, name=call.name,
             content=f'{{"reservation_id": "ABC123", "cabin": "{cabin}"}}'),
        Turn(index=4, role=Role.ASSISTANT, content=f"I'm sorry, {CLAIM}. Anything else?"),
    ])


GOOD = {"claim_kind": "decision", "dependency_type": "multi-source", "edges": [
    {"child": 4, "parent": 3, "evidence": '"cabin": "basic_economy"'},
    {"child": 4, "parent": 0, "evidence": "Basic economy flights cannot be modified."},
    {"child": 4, "parent": 1, "evidence": "Please change my flight ABC123"},
    {"child": 2, "parent": 1, "evidence": "ABC123"}], "rationale": "record, rule, request"}


def _span(conv):
    return ClaimTarget(4, CLAIM, 1, Path("targets.jsonl"), 1).span(conv)


def test_a_good_answer_is_an_ok_claim_proposal_with_its_kind_and_checked_graph():
    conv = refusal()
    span = _span(conv)
    p = proposal_from_claim_answer(conv, span, json.dumps(GOOD), "stop", ANNOTATOR)
    assert p.status == "ok" and p.span_kind is SpanKind.CLAIM
    assert p.claim_kind is ClaimKind.DECISION and p.span.text == CLAIM
    # the tool result's structural edge to its call is added by code
    assert p.graph.pairs() == {(4, 3), (4, 0), (4, 1), (2, 1), (3, 2)}
    assert check_graph(p.graph, conv, p.span) == []


@pytest.mark.parametrize("change, reason", [
    ({"edges": [{"child": 4, "parent": 0, "evidence": "Refunds are never given."}]},
     "evidence-not-found"),
    ({"claim_kind": "refusal"}, "schema"),
    ({"edges": [], "dependency_type": "direct"}, "no-source"),
])
def test_a_wrong_answer_is_a_rejected_claim_proposal_with_its_reason(change, reason):
    conv = refusal()
    p = proposal_from_claim_answer(conv, _span(conv), json.dumps({**GOOD, **change}), "stop",
                                   ANNOTATOR)
    assert p.status == "rejected" and p.raw_output
    assert reason in {r.reason for r in p.rejections}


def test_targets_file_names_the_line_of_a_bad_target(tmp_path):
    path = tmp_path / "targets.jsonl"
    path.write_text(json.dumps({"conversation_id": "claims/a", "turn": 4, "text": CLAIM}) + "\n"
                    + json.dumps({"conversation_id": "claims/a", "turn": "4"}) + "\n")
    with pytest.raises(InputError, match=r"targets.jsonl:2: a claim target needs conversation_id"):
        read_claim_targets(path)
    path.write_text(json.dumps({"conversation_id": "claims/a", "turn": 4,
                                "text": "not said in that turn"}) + "\n")
    targets = read_claim_targets(path)
    with pytest.raises(InputError, match=r"targets.jsonl:1: claims/a: the text is not in turn 4"):
        claim_targets(refusal(), targets)


def test_the_proposer_s_records_are_targets_by_their_offsets(tmp_path):
    conv = refusal()
    path = tmp_path / "proposed.jsonl"
    write_records(path, [Proposal(id=f"{conv.id}/p", conversation_id=conv.id, span=p.span,
                                  annotator=ANNOTATOR, span_kind=SpanKind.CLAIM,
                                  claim_kind=p.claim_kind) for p in propose_claims(conv)])
    spans = [u[0] for u in claim_targets(conv, read_claim_targets(path))]
    assert spans == [p.span for p in propose_claims(conv)]
    moved = refusal(cabin="economy")  # the same offsets no longer hold the same text
    moved.turns[4].content = "Sorry! " + moved.turns[4].content
    with pytest.raises(InputError, match=r"proposed.jsonl:1: claims/a: the text is not at"):
        claim_targets(moved, read_claim_targets(path))


def test_without_targets_the_proposer_s_claims_are_the_units():
    conv = refusal()
    units = claim_targets(conv, None)
    assert [u[0] for u in units] == [p.span for p in propose_claims(conv)]
    assert any(CLAIM in u[0].text for u in units)


def _claims_responder(body: dict) -> str:
    """What a careful model answers: the good graph, and on verify the same graph with the
    kind confirmed (the proposed kind arrives as 'status' to show a correction)."""
    text = body["messages"][-1]["content"]
    assert 'CLAIM in turn 4: "' + CLAIM + '"' in text
    if "PROPOSED EDGES" not in text:
        return json.dumps({**GOOD, "claim_kind": "status"})
    return json.dumps({**GOOD, "primed_by": [], "confidence": 0.8})


def test_run_with_the_claim_phases_writes_claim_candidates_from_the_targets(tmp_path):
    convs = tmp_path / "conversations.jsonl"
    write_records(convs, [refusal("claims/a"), refusal("claims/b")])
    targets = tmp_path / "targets.jsonl"
    targets.write_text(json.dumps({"conversation_id": "claims/a", "turn": 4, "text": CLAIM})
                       + "\n")
    out = tmp_path / "run"
    with FakeOpenAI(_claims_responder) as fake:
        res = CliRunner().invoke(app, [
            "annotate", "run", str(convs), "-o", str(out), "--annotators", "llm",
            "--phases", "claim-propose,claim-verify", "--targets", str(targets),
            "--base-url", fake.base_url, "--model", "m", "--no-progress"])
        assert res.exit_code == 0, res.output
        assert len(fake.requests) == 2  # claims/b has no target: nothing asked
    [cand] = [Candidate.model_validate(o) for _, o in iter_json_lines(out / "candidates.jsonl")]
    assert cand.status == "ok" and cand.conversation_id == "claims/a"
    assert cand.span_kind is SpanKind.CLAIM and cand.claim_kind is ClaimKind.DECISION
    assert "claim kind proposed status, verified decision" in cand.changes
    assert cand.annotator.prompt_version == "claim-verify-v1"
    [prop] = [Proposal.model_validate(o) for _, o in iter_json_lines(out / "proposals.jsonl")]
    assert prop.annotator.prompt_version == "claim-propose-v1"


def test_targets_without_the_claim_phases_are_refused_before_any_request(tmp_path):
    convs = tmp_path / "conversations.jsonl"
    write_records(convs, [refusal()])
    targets = tmp_path / "targets.jsonl"
    targets.write_text(json.dumps({"conversation_id": "claims/a", "turn": 4, "text": CLAIM})
                       + "\n")
    with FakeOpenAI() as fake:
        res = CliRunner().invoke(app, [
            "annotate", "run", str(convs), "-o", str(tmp_path / "run"), "--annotators", "llm",
            "--targets", str(targets), "--base-url", fake.base_url, "--model", "m"])
        assert fake.requests == []
    assert res.exit_code == ExitCode.BAD_INPUT
    assert "--phases claim-propose,claim-verify" in res.output
    assert not (tmp_path / "run").exists()


@pytest.mark.llm_server
@pytest.mark.slow
def test_the_claim_phases_on_the_real_model_let_only_checked_claims_through(llm_server,
                                                                           tmp_path):
    """SmolLM2 answers what it answers: each record is a checked claim or a rejection with
    its reasons and the raw answer."""
    conv = refusal()
    convs = tmp_path / "conversations.jsonl"
    write_records(convs, [conv])
    targets = tmp_path / "targets.jsonl"
    targets.write_text(json.dumps({"conversation_id": conv.id, "turn": 4, "text": CLAIM}) + "\n")
    summary = annotate_run(convs, tmp_path / "run", annotators="llm",
                           phases=("claim-propose", "claim-verify"), targets=targets,
                           base_url=llm_server.base_url, model=llm_server.model,
                           response_format="json_object", progress=False)
    assert summary.conversations_complete == 1
    records = [o for name in ("proposals", "candidates")
               for _, o in iter_json_lines(tmp_path / "run" / f"{name}.jsonl")]
    assert records and any(o["kind"] == "proposal" for o in records)
    for o in records:
        assert o["span"]["text"] == CLAIM
        if o["status"] == "ok":
            rec = (Proposal if o["kind"] == "proposal" else Candidate).model_validate(o)
            assert rec.span_kind is SpanKind.CLAIM and rec.claim_kind is not None
            assert check_graph(rec.graph, conv, rec.span) == []
        else:
            assert o["rejections"] and o["raw_output"]
            assert all(re.fullmatch(r"[a-z:-]+", r["reason"]) for r in o["rejections"])
