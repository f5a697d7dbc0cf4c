"""The checks of the annotated claims set through the review stage: posted to a real Label
Studio as their checkers' annotations (`review post-checks`), pulled back (`review pull`) as
the decisions `review checks` reads from the files; reruns write nothing twice, a claim
without a task is one line naming the check's line."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode
from mtcabench.io import read_records
from mtcabench.model import ClaimKind, ReviewDecision, SpanKind, Verdict
from mtcabench.review import build_task, read_annotation
from mtcabench.review._pull import InvalidAnnotation, decide, export_annotated, find_project

from tests.support.sample_claims import PASS_1, S2, S3, write_sample_claims

runner = CliRunner()


def invoke(*args, code: int = 0):
    res = runner.invoke(app, [str(a) for a in args])
    assert res.exit_code == code, res.output
    return res


@pytest.fixture(scope="module")
def claims(sample_path, tmp_path_factory):
    """The sample's conversations and pass-1 candidates, and its pass 2 with three checks
    changed so that every kind of decision is there: a reject, a kind changed, a type and
    the edges changed (the sample's own edit stays)."""
    d = tmp_path_factory.mktemp("post-checks")
    convs, cands = d / "conversations.jsonl", d / "claims.jsonl"
    invoke("ingest", "taubench", sample_path, "--out", convs)
    p1, p2 = write_sample_claims(d / "annotations")
    invoke("annotate", "claims", "import", "-c", convs, "-a", p1, "-o", cands)
    lines = [json.loads(x) for x in p2.read_text().splitlines()]
    for line in lines:
        if (line["conversation_id"], line["turn"]) == (S2, 6):
            line.update(verdict="reject", notes="not a claim: the user's own sum, repeated")
        elif (line["conversation_id"], line["turn"]) == (S3, 4):
            line.update(verdict="accept_with_edits", claim_kind="summary",
                        edges=[[4, 3], [3, 2], [2, 1]], notes="a summary of the record")
        elif (line["conversation_id"], line["turn"]) == (S3, 8):
            line.update(type="multi-source")  # with its added edge 6 -> 1
    p2.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return d, convs, cands, p2


def _server_args(label_studio, project):
    return ["--project", project, "--url", label_studio.url, "--api-key", label_studio.api_key]


def _comparable(d: ReviewDecision) -> ReviewDecision:
    """Everything a decision says but when it was made and which annotation it was read from."""
    return d.model_copy(update={"decided_at": None, "review_task": None})


@pytest.mark.label_studio
def test_checks_posted_to_label_studio_pull_back_as_the_files_decisions(
        label_studio, client, claims, project_title):
    d, convs, cands, p2 = claims
    server = _server_args(label_studio, project_title)
    invoke("review", "checks", "--candidates", cands, "--conversations", convs, "--checks", p2,
           "--out", d / "from-files.jsonl")
    files = {x.id: x for x in read_records(d / "from-files.jsonl", ReviewDecision)}
    assert {x.verdict for x in files.values()} == {Verdict.ACCEPT, Verdict.ACCEPT_WITH_EDITS,
                                                   Verdict.REJECT}

    invoke("review", "push", "--candidates", cands, "--conversations", convs, *server)
    posted = invoke("review", "post-checks", "--candidates", cands, "--conversations", convs,
                    "--checks", p2, *server)
    assert f"annotations: {len(PASS_1)} created, 0 updated" in posted.output
    assert "p2@pseudonym.invalid" in posted.output  # the checker's account, made now
    assert label_studio.api_key not in posted.output

    invoke("review", "pull", "--conversations", convs, "--out", d / "from-ls.jsonl", *server)
    pulled = list(read_records(d / "from-ls.jsonl", ReviewDecision))
    assert len(pulled) == len(PASS_1) and {x.id for x in pulled} == set(files)
    for x in pulled:
        f = files[x.id]
        assert (x.verdict, x.graph.pairs(), x.reviewer) == (f.verdict, f.graph.pairs(), "p2")
        assert x.claim_kind is f.claim_kind and x.span_kind is SpanKind.CLAIM
        assert _comparable(x) == _comparable(f), x.id
        assert x.review_task.startswith("label-studio:task/") and x.decided_at is not None
    kinds = {x.span.text: x for x in pulled}
    assert kinds["Flight HAT045 is delayed"].claim_kind is ClaimKind.SUMMARY
    assert kinds["Flight HAT045 is delayed"].verdict is Verdict.ACCEPT_WITH_EDITS

    # A rerun writes nothing; a check corrected since updates its annotation, nothing more.
    again = invoke("review", "post-checks", "--candidates", cands, "--conversations", convs,
                   "--checks", p2, *server)
    assert f"0 created, 0 updated (the check changed since), {len(PASS_1)} already there" \
        in again.output
    assert "users created" not in again.output
    lines = [json.loads(x) for x in p2.read_text().splitlines()]
    lines[0].update(verdict="accept_with_edits", type="multi-source",
                    edges=[[4, 3], [3, 2], [2, 1], [4, 1]], notes="added 4 -> 1: the user's id")
    p2b = d / "check-corrected.jsonl"
    p2b.write_text("".join(json.dumps(x) + "\n" for x in lines))
    fixed = invoke("review", "post-checks", "--candidates", cands, "--conversations", convs,
                   "--checks", p2b, *server)
    assert f"0 created, 1 updated (the check changed since), {len(PASS_1) - 1} already" \
        in fixed.output
    project_id = find_project(client, project_title)
    annotations = [a for t in export_annotated(client, project_id) for a in t["annotations"]]
    assert len(annotations) == len(PASS_1)
    invoke("review", "checks", "--candidates", cands, "--conversations", convs, "--checks", p2b,
           "--out", d / "from-files-b.jsonl")
    invoke("review", "pull", "--conversations", convs, "--out", d / "from-ls-b.jsonl", *server)
    files_b = sorted(map(_comparable, read_records(d / "from-files-b.jsonl", ReviewDecision)),
                     key=lambda x: x.id)
    pulled_b = sorted(map(_comparable, read_records(d / "from-ls-b.jsonl", ReviewDecision)),
                      key=lambda x: x.id)
    assert pulled_b == files_b
    assert any(x.edit and (4, 1) in x.edit.edges_added for x in pulled_b)


@pytest.mark.label_studio
def test_a_check_whose_claim_has_no_task_is_one_line_naming_it(label_studio, client, claims,
                                                               project_title):
    d, convs, cands, p2 = claims
    server = _server_args(label_studio, project_title)
    # Push every claim but the one the check file's third line checks.
    third = json.loads(p2.read_text().splitlines()[2])
    kept = [x for x in cands.read_text().splitlines()
            if json.loads(x)["span"]["text"] not in third["text"]]
    assert len(kept) == len(PASS_1) - 1
    partial = d / "claims-but-one.jsonl"
    partial.write_text("\n".join(kept) + "\n")
    invoke("review", "push", "--candidates", partial, "--conversations", convs, *server)
    res = invoke("review", "post-checks", "--candidates", cands, "--conversations", convs,
                 "--checks", p2, *server, code=ExitCode.BAD_INPUT)
    assert f"{p2}:3 " in res.output and "has no task in Label Studio project" in res.output
    assert "review push" in res.output and res.output.count("\n") <= 3
    # Nothing was posted: the check is refused before any annotation is written.
    assert export_annotated(client, find_project(client, project_title)) == []


def test_a_claim_task_offers_the_kinds_and_a_value_task_none(claims, candidates, conversations):
    from mtcabench.io import load_conversations
    from mtcabench.review import read_candidates

    _, convs, cands, _ = claims
    sample = load_conversations(convs)
    claim = read_candidates(cands)[0]
    task = build_task(claim, sample[claim.conversation_id])
    assert [k["value"] for k in task["data"]["claim_kinds"]] == [k.value for k in ClaimKind]
    stored = task["data"]["mtcabench"]["candidate"]
    assert (stored["span_kind"], stored["claim_kind"]) == ("claim", claim.claim_kind.value)
    result = task["predictions"][0]["result"]
    assert read_annotation(result, sample[claim.conversation_id]).claim_kind is claim.claim_kind

    # A value span's task lists no kind; a kind chosen there anyway is not read as one.
    value = candidates[0]
    vtask = build_task(value, conversations[value.conversation_id])
    assert vtask["data"]["claim_kinds"] == [] and vtask["data"]["claim_kind_header"] == ""
    assert "span_kind" not in vtask["data"]["mtcabench"]["candidate"]
    ann = {"id": 1, "completed_by": 1, "result": vtask["predictions"][0]["result"] + [
        {"from_name": "verdict", "to_name": "dialogue", "type": "choices",
         "value": {"choices": ["accept"]}},
        {"from_name": "claim_kind", "to_name": "dialogue", "type": "choices",
         "value": {"choices": ["status"]}}]}
    out = decide({"id": 1, **vtask}, ann, conversations, {1: "r"})
    assert isinstance(out, InvalidAnnotation)
    assert [p.rule for p in out.problems] == ["claim-kind"]
