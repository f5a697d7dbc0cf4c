"""The sha256 of every file of a release built from the real TauBench airline runs.

Runs the pipeline of docs/release.md command by command (ingest -> annotate lineage ->
annotate counterfactual, appended -> review auto-accept -> release build) on
gpt-4o-airline.json; then traces the model-free floors on the
release (``trace --method recency --method first-user``), scores both submissions and builds
the release again with their score reports (``release build --scores``), which fills the card's
evaluator rows. Then builds the bundled sample in the card's other variants (human and
automatic decisions, all human, a previous version, candidates, decisions naming no
annotator), with the hand-written decisions of tests/support/sample_reviews.py. Prints one line
per file, ``sha256  path``: every file of the release folders and the per-span scores. Run it before and after a change that must keep releases and scores
byte-identical and compare the two outputs (``diff``). Everything is written under one fixed
folder (``--work``, emptied first), so that paths written into the files are the same.

Run: PYTHONPATH=$PWD .venv/bin/python scripts/release_fingerprint.py [--raw FILE] [--out FILE]
    [--work DIR]
The raw file defaults to what tests/conftest.py finds ($MTCABENCH_TAUBENCH_AIRLINE,
raw/data/taubench/, or the workplace's shared copy beside the checkout).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _default_raw() -> Path | None:
    for c in (os.environ.get("MTCABENCH_TAUBENCH_AIRLINE"),
              ROOT / "raw" / "data" / "taubench" / "gpt-4o-airline.json",
              ROOT.parent / "shared" / "raw" / "tau-bench" / "gpt-4o-airline.json",
              Path("/work/shared/raw/tau-bench/gpt-4o-airline.json")):
        if c and Path(c).is_file():
            return Path(c)
    return None


def _mtcabench(*args: object) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-m", "mtcabench", *map(str, args)], check=True, env=env,
                   cwd=ROOT, stdout=subprocess.DEVNULL)


def fingerprint(raw: Path, work: Path) -> list[str]:
    """Build the releases under ``work``; ``sha256  path`` of each file, by path."""
    real_convs, real_cands, reviewed = (work / n for n in (
        "conversations.jsonl", "candidates.jsonl", "reviewed.jsonl"))
    cf_convs, cf_cands, convs, cands = (work / n for n in (
        "cf-conversations.jsonl", "cf-candidates.jsonl", "all-conversations.jsonl",
        "all-candidates.jsonl"))
    _mtcabench("ingest", "taubench", raw, "--out", real_convs)
    _mtcabench("annotate", "lineage", "--in", real_convs, "--out", real_cands)
    _mtcabench("annotate", "counterfactual", "--in", real_convs, "--out", cf_cands,
               "--conversations-out", cf_convs)
    convs.write_bytes(real_convs.read_bytes() + cf_convs.read_bytes())
    cands.write_bytes(real_cands.read_bytes() + cf_cands.read_bytes())
    _mtcabench("review", "auto-accept", "--candidates", cands, "--conversations", convs,
               "--out", reviewed)
    _mtcabench("release", "build", "--version", "2.0.0", "--reviewed", reviewed,
               "--conversations", convs, "--candidates", cands, "--out", work / "release")
    folder = work / "release" / "2.0.0"
    subs = {m: work / f"{m}.jsonl" for m in ("recency", "first-user")}
    _mtcabench("trace", "--benchmark", folder, *(x for m, p in subs.items()
                                                 for x in ("--method", m, "--out", p)))
    _mtcabench("score", *subs.values(), "--benchmark", folder, "--out", work / "score",
               "--resamples", 200, "--no-plot")
    _mtcabench("release", "build", "--version", "2.0.0", "--reviewed", reviewed,
               "--conversations", convs, "--candidates", cands, "--out", work / "scored",
               *(x for m in subs for x in ("--scores", work / "score" / f"{m}.score.json")))
    files = [*(work / "release").rglob("*"), *(work / "scored").rglob("*"),
             *(work / "score").glob("*.spans.jsonl"),
             *(p for folder in sample_variants(work) for p in folder.rglob("*"))]
    return [f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.relative_to(work).as_posix()}"
            for p in sorted(files) if p.is_file()]


def sample_variants(work: Path) -> list[Path]:
    """Build the sample's releases in each variant of the card; their folders."""
    from mtcabench.io import write_records
    from mtcabench.model import Annotator, Candidate
    from mtcabench.release import build_release
    from tests.support import sample_reviews as reviews

    convs = reviews.sample_conversations()
    decisions = reviews.sample_decisions(convs)
    conv_path = work / "sample-conversations.jsonl"
    write_records(conv_path, convs.values())

    def reviewed(name: str, records: list) -> Path:
        path = work / f"sample-{name}.jsonl"
        write_records(path, records)
        return path

    every = reviewed("reviewed", decisions)
    out = work / "samples"
    built = [build_release("0.1.0", every, conv_path, out=out / "mixed").folder]
    without_s2 = reviewed("without-s2", [d for d in decisions if d.conversation_id != reviews.S2])
    build_release("0.1.0", without_s2, conv_path, out=out / "previous")
    built.append(build_release("0.2.0", every, conv_path, out=out / "previous").folder)
    human = reviewed("human", [d for d in decisions if d.decision_source.value == "human"])
    built.append(build_release("0.1.0", human, conv_path, out=out / "human").folder)
    proposer = Annotator(name="llm", model="SmolLM2-135M-Instruct", prompt_version="propose-v1",
                         prompt_hash="b" * 64)
    cands = {d.id: Candidate(id=d.id, conversation_id=d.conversation_id, span=d.span,
                             dependency_type=d.dependency_type, graph=d.graph,
                             annotator=reviews.ANNOTATOR, proposal_annotator=proposer)
             for d in decisions}
    cands["rejected-1"] = Candidate(id="rejected-1", conversation_id=reviews.S1,
                                    annotator=reviews.ANNOTATOR, status="rejected",
                                    proposal_annotator=proposer)
    cand_path = reviewed("candidates", list(cands.values()))
    built.append(build_release("0.1.0", every, conv_path, out=out / "candidates",
                               candidates=cand_path).folder)
    anonymous = reviewed("anonymous", [d.model_copy(update={"annotator": None})
                                       for d in decisions])
    built.append(build_release("0.1.0", anonymous, conv_path, out=out / "anonymous").folder)
    return built


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--raw", type=Path, default=_default_raw())
    ap.add_argument("--out", type=Path, help="also write the lines to this file")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "mtcabench-release-fingerprint",
                    help="folder to build in (emptied first)")
    a = ap.parse_args()
    sys.path.insert(0, str(ROOT))  # the checkout's package and tests.support, for the samples
    if a.raw is None:
        sys.exit("gpt-4o-airline.json not found: pass --raw or set MTCABENCH_TAUBENCH_AIRLINE")
    shutil.rmtree(a.work, ignore_errors=True)
    a.work.mkdir(parents=True)
    lines = fingerprint(a.raw, a.work)
    text = "\n".join(lines) + "\n"
    if a.out:
        a.out.write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
