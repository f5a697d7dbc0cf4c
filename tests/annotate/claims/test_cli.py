"""The claims commands end to end: propose targets, import pass 1, read pass 2 as decisions."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.io import read_records, write_records
from mtcabench.model import Candidate, ClaimKind, Proposal, ReviewDecision, SpanKind, Verdict

from tests.annotate.claims.conftest import claims_conversation

runner = CliRunner()
CID = "test/airline/agent/task-1/trial-0"


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_propose_import_and_checks(tmp_path):
    convs = tmp_path / "conversations.jsonl"
    write_records(convs, [claims_conversation()])
    res = invoke("annotate", "claims", "propose", "-i", convs, "-o", tmp_path / "targets.jsonl")
    assert res.exit_code == 0, res.output
    targets = list(read_records(tmp_path / "targets.jsonl", Proposal))
    assert [t.claim_kind for t in targets] == [ClaimKind.ABSENCE, ClaimKind.POLICY,
                                               ClaimKind.CONFIRMATION, ClaimKind.ELIGIBILITY]
    assert all(t.span_kind is SpanKind.CLAIM and t.graph is None for t in targets)

    p1 = tmp_path / "pass1.jsonl"
    p1.write_text(json.dumps({
        "conversation_id": CID, "turn": 6, "text": "There are no nonstop flights on May 20",
        "edges": [[6, 5], [5, 4], [4, 1]], "type": "direct", "claim_kind": "absence",
        "annotator": "p1"}) + "\n")
    res = invoke("annotate", "claims", "import", "-c", convs, "-a", p1,
                 "-o", tmp_path / "candidates.jsonl")
    assert res.exit_code == 0, res.output
    [cand] = read_records(tmp_path / "candidates.jsonl", Candidate)
    assert cand.claim_kind is ClaimKind.ABSENCE and cand.annotator.person == "p1"

    p2 = tmp_path / "pass2.jsonl"
    p2.write_text(json.dumps({
        "conversation_id": CID, "turn": 6, "text": "There are no nonstop flights on May 20",
        "checker": "p2", "verdict": "accept_with_edits",
        "edges": [[6, 5], [6, 1], [5, 4], [4, 1]], "type": "multi-source",
        "notes": "added 6->1: the claim answers the user's request"}) + "\n")
    out = tmp_path / "reviewed.jsonl"
    res = invoke("review", "checks", "--candidates", tmp_path / "candidates.jsonl",
                 "--conversations", convs, "--checks", p2, "--out", out)
    assert res.exit_code == 0, res.output
    assert "edge F1 0.857" in " ".join(res.output.split())  # 2 * 3 / (3 + 4)
    [decision] = read_records(out, ReviewDecision)
    assert decision.verdict is Verdict.ACCEPT_WITH_EDITS and decision.reviewer == "p2"
    assert decision.span_kind is SpanKind.CLAIM and decision.edit.edges_added == [(6, 1)]


def test_a_bad_pass_one_line_writes_nothing(tmp_path):
    convs = tmp_path / "conversations.jsonl"
    write_records(convs, [claims_conversation()])
    p1 = tmp_path / "pass1.jsonl"
    p1.write_text(json.dumps({"conversation_id": CID, "turn": 6, "text": "no such words",
                              "edges": [], "type": "direct", "claim_kind": "absence",
                              "annotator": "p1"}) + "\n")
    out = tmp_path / "candidates.jsonl"
    res = invoke("annotate", "claims", "import", "-c", convs, "-a", p1, "-o", out)
    assert res.exit_code != 0
    assert f"{p1}:1: the text is not in turn 6's content" in " ".join(res.output.split())
    assert not out.exists()
