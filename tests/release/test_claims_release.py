"""A release with claims: the `claims` config, its columns, the cap that spares claims, the
card's claims section, score's rows by span and claim kind, and a byte-identical rebuild."""

from __future__ import annotations

import json

import datasets
import pytest
from typer.testing import CliRunner

from mtcabench.benchmark import load_benchmark
from mtcabench.cli import app
from mtcabench.model import ClaimKind, SpanKind

from tests.support.sample_claims import PASS_1, write_sample_claims

runner = CliRunner()


def invoke(*args):
    res = runner.invoke(app, [str(a) for a in args])
    assert res.exit_code == 0, res.output
    return res


def build(d, sample_path, out):
    convs, cands, reviewed = d / "conversations.jsonl", d / "values.jsonl", d / "values-rev.jsonl"
    invoke("ingest", "taubench", sample_path, "--out", convs)
    invoke("annotate", "lineage", "--in", convs, "--out", cands)
    invoke("review", "auto-accept", "--candidates", cands, "--conversations", convs,
           "--out", reviewed)
    p1, p2 = write_sample_claims(d / "annotations")
    invoke("annotate", "claims", "import", "-c", convs, "-a", p1, "-o", d / "claims.jsonl")
    invoke("review", "checks", "--candidates", d / "claims.jsonl", "--conversations", convs,
           "--checks", p2, "--out", d / "claims-rev.jsonl")
    (d / "all-cands.jsonl").write_bytes(cands.read_bytes() + (d / "claims.jsonl").read_bytes())
    (d / "all-rev.jsonl").write_bytes(reviewed.read_bytes()
                                      + (d / "claims-rev.jsonl").read_bytes())
    # A cap of 2 spans per conversation: values are capped, claims never.
    invoke("release", "build", "--version", "2.1.0", "--reviewed", d / "all-rev.jsonl",
           "--conversations", convs, "--candidates", d / "all-cands.jsonl", "--out", out,
           "--split-by-task", "--max-spans-per-conversation", "2")
    return out / "2.1.0"


@pytest.fixture(scope="module")
def claims_release(sample_path, tmp_path_factory):
    d = tmp_path_factory.mktemp("claims-release")
    return d, build(d, sample_path, d / "release")


def test_the_claims_config_loads_with_datasets(claims_release):
    _, folder = claims_release
    claims = datasets.load_dataset(str(folder), "claims")
    rows = [r for split in claims.values() for r in split]
    assert len(rows) == len(PASS_1)
    assert {r["span_kind"] for r in rows} == {"claim"}
    assert sorted(r["claim_kind"] for r in rows) == sorted(k for *_, k in PASS_1)
    assert {r["annotator"]["person"] for r in rows} == {"p1"}
    assert {tuple(r["reviewers"]) for r in rows} == {("p2",)}
    # The claims are in `all` too, beside the values, whose claim columns are empty.
    every = [r for split in datasets.load_dataset(str(folder), "all").values() for r in split]
    assert sum(r["span_kind"] == "claim" for r in every) == len(PASS_1)
    values = [r for r in every if r["span_kind"] is None]
    assert values and all(r["claim_kind"] is None for r in values)
    # The cap of 2 is on values: no conversation has more than 2, claims all kept.
    per_conv = {}
    for r in values:
        per_conv[r["conversation_id"]] = per_conv.get(r["conversation_id"], 0) + 1
    assert max(per_conv.values()) <= 2


def test_the_package_loader_reads_claims_back(claims_release):
    _, folder = claims_release
    bench = load_benchmark(folder)
    claims = [s for s in bench.spans if s.span_kind is SpanKind.CLAIM]
    assert len(claims) == len(PASS_1)
    edited = next(s for s in claims if s.span.text.startswith("You are being transferred"))
    assert edited.claim_kind is ClaimKind.CONFIRMATION and (6, 1) in edited.graph.pairs()
    assert edited.verdict.value == "accept_with_edits"


def test_the_card_counts_claims_and_says_who_checked_them(claims_release):
    _, folder = claims_release
    card = (folder / "README.md").read_text()
    assert "### Claims by domain, agent model, claim kind and type" in card
    assert f"**{len(PASS_1)} claims** in 3 conversations" in card
    assert "| `human:p1@claims-guide-1` | p2 | human | 5 |" in card
    assert "`claims`" in card


def test_score_breaks_claims_down_by_kind_beside_the_string_match_floor(claims_release,
                                                                       tmp_path):
    _, folder = claims_release
    out = tmp_path / "sub.jsonl"
    invoke("trace", "--benchmark", folder, "--method", "string-match", "--out", out)
    invoke("score", "--benchmark", folder, out, "--out", tmp_path / "score", "--no-plot")
    data = json.loads((tmp_path / "score" / "sub.score.json").read_text())
    groups = {(r["breakdown"], r["group"]) for r in data["rows"]}
    assert ("span_kind", "claim") in groups and ("span_kind", "value") in groups
    assert ("claim_kind", "computation") in groups
    floors = {f["method"] for f in data["floors"]}
    assert floors == {"recency", "first-user", "string-match"}


def test_a_rebuild_gives_the_same_bytes(claims_release, sample_path, tmp_path):
    _, folder = claims_release
    again = build(tmp_path, sample_path, tmp_path / "release")
    assert (again / "CHECKSUMS.sha256").read_bytes() == (folder / "CHECKSUMS.sha256").read_bytes()


def test_the_llm_pipeline_s_graphs_are_scored_against_the_set_strict_and_as_answered(
        claims_release, tmp_path):
    from mtcabench.annotate.claims import claim_targets, read_claim_targets
    from mtcabench.benchmark import split_of
    from mtcabench.model import Annotator, Candidate, Proposal, Rejection
    from mtcabench.results import write_submission
    from mtcabench.scoring import score_spans
    from mtcabench.studies import claims_of, llm_sample, llm_submission, llm_table, targets_lines

    _, folder = claims_release
    bench = claims_of(load_benchmark(folder))
    split = split_of(bench.spans[0].conversation_id)
    sample = llm_sample(bench, split)
    assert sample.spans and all(split_of(s.conversation_id) == split for s in sample.spans)
    # The targets written for the run name exactly the gold claims.
    (tmp_path / "targets.jsonl").write_text(
        "".join(json.dumps(t) + "\n" for t in targets_lines(sample)))
    targets = read_claim_targets(tmp_path / "targets.jsonl")
    resolved = [span for conv in sample.conversations.values()
                for span, _ in claim_targets(conv, targets)]
    assert sorted(resolved, key=repr) == sorted((s.span for s in sample.spans), key=repr)
    # One claim verified with the gold graph, one rejected at claim-propose with it.
    llm = Annotator(name="llm", model="m")
    first, *rest = sample.spans
    fields = lambda s: dict(conversation_id=s.conversation_id, span=s.span,  # noqa: E731
                            dependency_type=s.dependency_type, graph=s.graph, annotator=llm,
                            span_kind=SpanKind.CLAIM, claim_kind=s.claim_kind)
    records = [Candidate(id=first.id, **fields(first))]
    records += [Proposal(id=f"{s.id}/rejected", status="rejected", raw_output="{}",
                         rejections=[Rejection(reason="evidence-not-found", detail="x")],
                         **fields(s)) for s in rest[:1]]
    paths = []
    for name, loose in (("strict.jsonl", False), ("loose.jsonl", True)):
        header, entries = llm_submission(records, sample, "m", as_answered=loose)
        write_submission(tmp_path / name, header, entries)
        paths.append(str(tmp_path / name))
    strict = score_spans(paths[0], sample).scores
    loose = score_spans(paths[1], sample).scores
    assert strict[0].edge_f1 == 1.0 and loose[0].edge_f1 == 1.0
    assert rest, "the sample's split holds two claims or more"
    assert strict[1].edge_f1 == 0.0 and loose[1].edge_f1 == 1.0
    table = llm_table(tuple(paths), sample, "m", [r for r in records
                                                  if isinstance(r, Candidate)])
    assert f"| all | {len(sample.conversations)} / {len(sample.spans)} |" in table
    assert f"| 1/{len(sample.spans)} [" in table


def test_the_domains_study_reads_a_release_s_real_value_spans_only(claims_release):
    """benchmarks/domains.py --release: the study's gold is the release's values (its claims
    are another study's), real ones only, and the conversations that hold them."""
    from mtcabench.model import SpanOrigin
    from mtcabench.studies import domain_units, release_gold

    _, folder = claims_release
    every = load_benchmark(folder)
    gold = release_gold(folder)
    values = [s for s in every.spans
              if s.span_kind is SpanKind.VALUE and s.origin is SpanOrigin.REAL]
    assert values and len(values) < len(every.spans)  # the claims are left out
    assert [s.id for s in gold.spans] == [s.id for s in values]
    assert set(gold.conversations) == {s.conversation_id for s in values}
    units = [u for split in ("train", "dev", "test") for u in domain_units(gold, split, 2)]
    assert units and all(s.span_kind is SpanKind.VALUE for u in units for s in u.spans)
