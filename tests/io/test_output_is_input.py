"""An output that is one of the command's inputs is refused, exit 3, the input unchanged (issue 12).

Every command that writes (other than annotate and trace, tested with their stage) is run
with its output naming one of its inputs four ways: the same path, another spelling of it, a
symbolic link to it and a hard link to it. Each must stop before writing anything, with one
line that says which input it would destroy.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtcabench.lineage import propose_lineage
from mtcabench.cli import app
from mtcabench.errors import ExitCode, InputError
from mtcabench.graph import depth, sources
from mtcabench.ingest import read_taubench
from mtcabench.io import check_outputs_are_not_inputs, write_records
from mtcabench.model import BenchmarkSpan
from mtcabench.review import auto_accept

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "raw" / "sample" / "sample-airline.json"
runner = CliRunner()
WAYS = ["same", "spelling", "symlink", "hardlink"]


def spelled(src: Path, way: str, where: Path | None = None) -> Path:
    """A path naming the file ``src`` (``where``: the path to create a link at)."""
    if way == "same":
        return src
    if way == "spelling":
        (src.parent / "sub").mkdir(exist_ok=True)
        return src.parent / "sub" / ".." / "." / src.name
    link = where or src.parent / f"link-{src.name}"
    link.parent.mkdir(parents=True, exist_ok=True)
    if way == "symlink":
        link.symlink_to(src)
    else:
        os.link(src, link)
    return link


def snapshot(folder: Path) -> dict[str, bytes | str]:
    out: dict[str, bytes | str] = {}
    for p in sorted(folder.rglob("*")):
        rel = str(p.relative_to(folder))
        out[rel] = f"-> {os.readlink(p)}" if p.is_symlink() else p.read_bytes() if p.is_file() \
            else "dir"
    return out


def refused(args: list, folder: Path, before: dict) -> str:
    res = runner.invoke(app, [str(a) for a in args])
    out = res.output
    assert res.exit_code == ExitCode.BAD_INPUT, out
    assert "Traceback" not in out
    errors = [line for line in out.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "input" in errors[0] and "destroy" in errors[0], out
    assert snapshot(folder) == before, "the command changed files although it was refused"
    return errors[0]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """Conversations, candidates, decisions and a benchmark folder of the sample."""
    src = tmp_path_factory.mktemp("inputs")
    convs = {c.id: c for c in read_taubench(SAMPLE)}
    cands = list(propose_lineage(convs.values()))
    decisions = auto_accept(cands, convs).decisions
    spans = [BenchmarkSpan(id=d.id, conversation_id=d.conversation_id, source="taubench",
                           domain="airline", span=d.span, dependency_type=d.dependency_type,
                           graph=d.graph, depth=depth(d.graph),
                           sources=sources(d.graph, convs[d.conversation_id]),
                           decision_source=d.decision_source, verdict=d.verdict)
             for d in decisions]
    write_records(src / "conversations.jsonl", convs.values())
    write_records(src / "candidates.jsonl", cands)
    write_records(src / "reviewed.jsonl", decisions)
    bench = src / "bench"
    bench.mkdir()
    write_records(bench / "conversations.jsonl", convs.values())
    write_records(bench / "spans.jsonl", spans)
    sub = [{"kind": "submission", "method": "m"}] + [
        {"span_id": s.id, "edges": [{"child": e.child, "parent": e.parent}
                                    for e in s.graph.edges]} for s in spans]
    (src / "sub.jsonl").write_text("".join(json.dumps(o) + "\n" for o in sub), encoding="utf-8")
    return {"conversations": src / "conversations.jsonl", "candidates": src / "candidates.jsonl",
            "reviewed": src / "reviewed.jsonl", "bench": bench, "sub": src / "sub.jsonl",
            "span": spans[0].id}


@pytest.fixture
def work(tmp_path, files) -> dict[str, Path]:
    """Fresh copies of the inputs in tmp_path (a refused command must leave them as they are)."""
    out = {}
    for name in ("conversations", "candidates", "reviewed", "sub"):
        out[name] = tmp_path / files[name].name
        out[name].write_bytes(files[name].read_bytes())
    (tmp_path / "raw.json").write_bytes(SAMPLE.read_bytes())
    out["raw"] = tmp_path / "raw.json"
    return out


# --------------------------------------------------------------------------- the shared check


@pytest.mark.parametrize("way", WAYS)
def test_check_refuses_every_way_of_naming_the_input(way, tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("x\n")
    with pytest.raises(InputError, match="is the input"):
        check_outputs_are_not_inputs([src], [spelled(src, way)])


def test_check_refuses_a_folder_holding_a_hard_link_of_an_input(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("x\n")
    (tmp_path / "out").mkdir()
    os.link(src, tmp_path / "out" / "copy.jsonl")
    with pytest.raises(InputError, match="holds the input"):
        check_outputs_are_not_inputs([src], folders=[tmp_path / "out"])


def test_check_lets_distinct_files_pass(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("x\n")
    check_outputs_are_not_inputs([src], [tmp_path / "out.jsonl"], folders=[tmp_path / "f"])


# --------------------------------------------------------------------------- every command


@pytest.mark.parametrize("way", WAYS)
def test_ingest_taubench(way, work, tmp_path):
    before = snapshot(tmp_path)
    out = spelled(work["raw"], way)
    before = snapshot(tmp_path)
    refused(["ingest", "taubench", work["raw"], "--agent-model", "m", "--domain", "d",
             "-o", out], tmp_path, before)


@pytest.mark.parametrize("way", WAYS)
def test_ingest_confetti(way, tmp_path):
    line = {"id": "conversationsclean_1", "dialog_id": "u_1", "function": [], "question": [
        {"role": "user", "content": "hi", "content_type": "text"},
        {"role": "assistant", "content": "hello", "content_type": "text"}]}
    src = tmp_path / "confetti.jsonl"
    src.write_text(json.dumps(line) + "\n", encoding="utf-8")
    out = spelled(src, way)
    refused(["ingest", "confetti", src, "-o", out], tmp_path, snapshot(tmp_path))


@pytest.mark.parametrize("which", ["candidates", "conversations"])
@pytest.mark.parametrize("way", WAYS)
def test_review_auto_accept(way, which, work, tmp_path):
    out = spelled(work[which], way)
    refused(["review", "auto-accept", "-c", work["candidates"], "--conversations",
             work["conversations"], "-o", out], tmp_path, snapshot(tmp_path))


@pytest.mark.parametrize("way", WAYS)
def test_review_pull(way, work, tmp_path):
    # Refused before any request: the address is never contacted.
    out = spelled(work["conversations"], way)
    refused(["review", "pull", "--conversations", work["conversations"], "-o", out,
             "--url", "http://127.0.0.1:9", "--api-key", "k"], tmp_path, snapshot(tmp_path))


@pytest.mark.parametrize("way", WAYS)
def test_review_serve(way, work, tmp_path):
    # Refused before a server is started.
    out = spelled(work["candidates"], way)
    refused(["review", "serve", "-c", work["candidates"], "--conversations",
             work["conversations"], "-o", out], tmp_path, snapshot(tmp_path))


@pytest.mark.parametrize("way", WAYS)
def test_release_build_force_into_the_folder_holding_an_input(way, work, tmp_path):
    releases = tmp_path / "releases"
    target = releases / "1.0.0"
    if way in ("same", "spelling"):
        target.mkdir(parents=True)
        reviewed = target / "reviewed.jsonl"
        reviewed.write_bytes(work["reviewed"].read_bytes())
        out = releases if way == "same" else tmp_path / "sub" / ".." / "releases"
        (tmp_path / "sub").mkdir()
    elif way == "symlink":
        keep = tmp_path / "keep"
        keep.mkdir()
        reviewed = keep / "reviewed.jsonl"
        reviewed.write_bytes(work["reviewed"].read_bytes())
        releases.mkdir()
        target.symlink_to(keep, target_is_directory=True)
        out = releases
    else:
        reviewed = work["reviewed"]
        target.mkdir(parents=True)
        os.link(reviewed, target / "reviewed.jsonl")
        out = releases
    refused(["release", "build", "--version", "1.0.0", "--reviewed", reviewed,
             "--conversations", work["conversations"], "--out", out, "--force"],
            tmp_path, snapshot(tmp_path))


@pytest.mark.parametrize("way", WAYS)
def test_score(way, work, files, tmp_path):
    out = tmp_path / "score"
    out.mkdir()
    args = ["score", work["sub"], "-b", files["bench"], "--resamples", "10", "--no-plot"]
    if way in ("same", "spelling"):
        # Scoring a.jsonl writes a.spans.jsonl: here that is the second submission's file.
        second = out / "sub.spans.jsonl"
        second.write_bytes(work["sub"].read_bytes())
        args += [second, "-o", out if way == "same" else tmp_path / "sub" / ".." / "score"]
        (tmp_path / "sub").mkdir()
    else:
        spelled(work["sub"], way, where=out / "sub.score.md")
        args += ["-o", out]
    refused(args, tmp_path, snapshot(tmp_path))


@pytest.mark.parametrize("way", WAYS)
def test_show(way, work, files, tmp_path):
    from mtcabench.scoring.show import safe_name

    out = tmp_path / "show"
    out.mkdir()
    picture = out / f"{safe_name(files['span'])}.html"
    if way in ("same", "spelling"):
        picture.write_bytes(work["sub"].read_bytes())  # the submission, under the picture's name
        sub = picture if way == "same" else out / "x" / ".." / picture.name
        (out / "x").mkdir()
    else:
        sub = work["sub"]
        spelled(sub, way, where=picture)
    refused(["show", files["span"], "-b", files["bench"], "-s", sub, "-o", out, "--text", "none"],
            tmp_path, snapshot(tmp_path))


def test_the_refusal_names_both_paths(work, tmp_path):
    line = refused(["ingest", "taubench", work["raw"], "--agent-model", "m", "--domain", "d",
                    "-o", work["raw"]], tmp_path, snapshot(tmp_path))
    assert "raw.json" in line and "another output" in line
