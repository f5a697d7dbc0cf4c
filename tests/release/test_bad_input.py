"""Every bad input of a release is refused: all failures listed (record id and rule), exit 5,
no release folder left behind, an existing release untouched."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode, ValidationFailed
from mtcabench.io import write_records
from mtcabench.model import Edge, EdgeKind, ProvenanceGraph, Verdict
from mtcabench.release import build_release

runner = CliRunner()


def _bad_decisions(reviews) -> dict[str, tuple]:
    """name -> (decision(s) to add, record id expected in the message, rule expected)."""
    convs = reviews.sample_conversations()
    base = {d.span.text: d for d in reviews.sample_decisions(convs)}
    hat, card, trip = base["HAT136"], base["credit_card_7815826"], base["4WQ150 and VAAOXJ"]
    cyclic = hat.model_copy(update={"graph": ProvenanceGraph(
        target=10, nodes=[6, 7, 8, 10],
        edges=[Edge(child=10, parent=8), Edge(child=8, parent=7),
               Edge(child=7, parent=6, kind=EdgeKind.STRUCTURAL), Edge(child=8, parent=10)])})
    forward = card.model_copy(update={"graph": ProvenanceGraph(
        target=8, nodes=[4, 5, 6, 7, 8],
        edges=[Edge(child=8, parent=7), Edge(child=7, parent=6, kind=EdgeKind.STRUCTURAL),
               Edge(child=8, parent=4), Edge(child=4, parent=5)])})
    # Same id as the trip span, but a different span of the same conversation.
    dup_id = base["$151"].model_copy(update={"id": trip.id})
    # Another id for exactly the $72 span.
    dollars = base["$72"]
    dup_span = dollars.model_copy(update={"id": "another-id-for-the-72-span"})
    missing = trip.model_copy(update={"id": "taubench/airline/sample/task-s9/trial-0#4:54-71",
                                      "conversation_id": "taubench/airline/sample/task-s9/trial-0"})
    return {
        "cyclic graph": ([cyclic], hat.id, "acyclic"),
        "forward edge": ([forward], card.id, "edge-backwards"),
        # The conversation changed after review (see _conversations): no decision added.
        "span text mismatch": ([], hat.id, "span-text"),
        "duplicate id": ([dup_id], trip.id, "duplicate-id"),
        # Spans are checked in id order: the second id met is the one reported.
        "duplicate span": ([dup_span], dollars.id, "duplicate-span"),
        "missing conversation": ([missing], missing.id, "conversation-exists"),
    }


def _conversations(reviews, tmp_path: Path, case: str | None) -> Path:
    """The sample conversations; for the span-text case with turn 10 of s1 since edited."""
    convs = reviews.sample_conversations()
    if case in (None, "span text mismatch"):
        s1 = convs[reviews.S1]
        turns = list(s1.turns)
        turns[10] = turns[10].model_copy(update={"content": turns[10].content.replace(
            "HAT136", "HAT163")})
        convs[reviews.S1] = s1.model_copy(update={"turns": turns})
    path = tmp_path / "conversations-edited.jsonl"
    write_records(path, convs.values())
    return path


def _tree(folder: Path) -> dict[str, str]:
    if not folder.exists():
        return {}
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            if p.is_file() else "dir" for p in sorted(folder.rglob("*"))}


def _cli_build(inputs: dict, reviewed: Path, *extra: str, conversations: Path | None = None):
    return runner.invoke(app, ["release", "build", "--version", "1.0.0", "--reviewed",
                               str(reviewed), "--conversations",
                               str(conversations or inputs["conversations"]),
                               "--out", str(inputs["out"]), *extra])


@pytest.mark.parametrize("case", ["cyclic graph", "forward edge", "span text mismatch",
                                  "duplicate id", "duplicate span", "missing conversation"])
def test_each_bad_input_is_refused(case, sample_inputs, reviews, tmp_path):
    added, record, rule = _bad_decisions(reviews)[case]
    convs = reviews.sample_conversations()
    reviewed = tmp_path / "bad.jsonl"
    write_records(reviewed, [*reviews.sample_decisions(convs), *added])
    res = _cli_build(sample_inputs, reviewed,
                     conversations=_conversations(reviews, tmp_path, case))
    assert res.exit_code == ExitCode.INVALID, res.output
    assert "release 1.0.0 refused" in res.output and "nothing was written" in res.output
    assert f"{record}: [{rule}]" in res.output
    assert not sample_inputs["out"].exists()  # not even the output folder was created


def test_all_failures_are_listed_together(sample_inputs, reviews, tmp_path):
    out = sample_inputs["out"]
    build_release("1.0.0", sample_inputs["reviewed"], sample_inputs["conversations"], out=out)
    before = _tree(out)
    cases = _bad_decisions(reviews)
    convs = reviews.sample_conversations()
    reviewed = tmp_path / "bad.jsonl"
    write_records(reviewed, [*reviews.sample_decisions(convs),
                             *[d for added, _, _ in cases.values() for d in added]])
    with pytest.raises(ValidationFailed) as info:
        build_release("1.0.0", reviewed, _conversations(reviews, tmp_path, None), out=out)
    listed = "\n".join(info.value.failures)
    for _, record, rule in cases.values():
        assert f"{record}: [{rule}]" in listed
    assert f"{out / '1.0.0'}: [version-exists]" in listed
    assert _tree(out) == before  # the existing release is untouched, nothing added beside it


def test_existing_version_needs_force(sample_inputs):
    out = sample_inputs["out"]
    first = _cli_build(sample_inputs, sample_inputs["reviewed"])
    assert first.exit_code == 0, first.output
    before = _tree(out)
    again = _cli_build(sample_inputs, sample_inputs["reviewed"])
    assert again.exit_code == ExitCode.INVALID
    assert "[version-exists]" in again.output and "--force" in again.output
    assert _tree(out) == before
    forced = _cli_build(sample_inputs, sample_inputs["reviewed"], "--force")
    assert forced.exit_code == 0, forced.output
    assert _tree(out) == before  # same inputs: the same bytes, and no leftovers


def test_bad_records_and_duplicate_conversations_are_listed(sample_inputs, reviews, tmp_path):
    convs = reviews.sample_conversations()
    conv_path = tmp_path / "convs.jsonl"
    first = next(iter(convs.values()))
    write_records(conv_path, [*convs.values(), first])
    reviewed = tmp_path / "reviewed.jsonl"
    lines = sample_inputs["reviewed"].read_text().splitlines()
    lines.insert(1, lines[0].replace('"verdict":"accept"', '"verdict":"maybe"'))
    reviewed.write_text("\n".join(lines) + "\n")
    res = runner.invoke(app, ["release", "build", "--version", "1.0.0", "--reviewed",
                              str(reviewed), "--conversations", str(conv_path), "--out",
                              str(sample_inputs["out"])])
    assert res.exit_code == ExitCode.INVALID, res.output
    assert f"{first.id} ({conv_path}:4): [duplicate-conversation]" in res.output
    assert f"({reviewed}:2): [record-schema] verdict" in res.output
    assert not sample_inputs["out"].exists()


def test_nothing_accepted_and_bad_version(sample_inputs, reviews, tmp_path):
    convs = reviews.sample_conversations()
    rejected = [d.model_copy(update={"verdict": Verdict.REJECT}) for d in reviews.sample_decisions(convs)]
    reviewed = tmp_path / "rejected.jsonl"
    write_records(reviewed, rejected)
    res = _cli_build(sample_inputs, reviewed)
    assert res.exit_code == ExitCode.INVALID and "[nothing-accepted]" in res.output
    res = runner.invoke(app, ["release", "build", "--version", "../x", "--reviewed",
                              str(sample_inputs["reviewed"]), "--conversations",
                              str(sample_inputs["conversations"]), "--out",
                              str(sample_inputs["out"])])
    assert res.exit_code == ExitCode.BAD_INPUT and "cannot name a folder" in res.output
    assert not sample_inputs["out"].exists()


def test_failure_while_writing_leaves_no_folder(sample_inputs, monkeypatch):
    from mtcabench.release import _build

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(_build, "write_checksums", broken)
    with pytest.raises(OSError):
        build_release("1.0.0", sample_inputs["reviewed"], sample_inputs["conversations"],
                      out=sample_inputs["out"])
    assert not sample_inputs["out"].exists()


def test_verify_reports_changed_and_unlisted_files(sample_inputs):
    built = build_release("1.0.0", sample_inputs["reviewed"], sample_inputs["conversations"],
                          out=sample_inputs["out"])
    ok = runner.invoke(app, ["release", "verify", str(built.folder)])
    assert ok.exit_code == 0 and "release 1.0.0 intact" in ok.output
    (built.folder / "CHANGELOG.md").write_text("rewritten\n")
    (built.folder / "data" / "extra.parquet").write_bytes(b"x")
    bad = runner.invoke(app, ["release", "verify", str(built.folder)])
    assert bad.exit_code == ExitCode.INVALID
    assert "CHANGELOG.md: sha256 differs" in bad.output
    assert "data/extra.parquet: not listed in CHECKSUMS.sha256" in bad.output
