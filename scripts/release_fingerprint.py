"""The sha256 of every file of a release built from the real TauBench airline runs.

Runs the pipeline of docs/release.md command by command (ingest -> annotate lineage ->
annotate counterfactual, appended -> review auto-accept -> release build) on
gpt-4o-airline.json; then traces the model-free floors on the release (``trace --method
recency --method first-user``), scores both submissions and builds the release again with
their score reports (``release build --scores``), which fills the card's evaluator rows. Then
builds the bundled sample in the card's other variants (human and automatic decisions, all
human, a previous version, candidates, decisions naming no annotator), with the hand-written
decisions of tests/support/sample_reviews.py. Then traces Tokengeist and flat with the real
model (SmolLM2, the default base scorer) on the sample's release and scores them (skipped with
``--no-model``).

Prints one line per file, ``sha256  path``: every file of the release folders and the
per-span scores; each submission as two lines, ``path#entries`` (its prediction lines) and
``path#header`` (its header without ``created_at`` and timings). Run it before and after a
change that must keep releases and scores byte-identical and compare the two outputs
(``diff``); the same script runs on a checkout from before tests/support (it finds the
sample's decisions in tests/release/ there). Everything is written under one fixed folder
(``--work``, emptied first), so that paths written into the files are the same: compare runs
with the same ``--work``.

Run: PYTHONPATH=$PWD .venv/bin/python scripts/release_fingerprint.py [--raw FILE] [--out FILE]
    [--work DIR] [--no-model]
The raw file defaults to what tests/support/paths.py finds ($MTCABENCH_TAUBENCH_AIRLINE,
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


def fingerprint(raw: Path, work: Path, model: bool = True) -> list[str]:
    """Build the releases under ``work``; ``sha256  path`` of each file, by path (then the
    submissions' parts, see :func:`submission_lines`)."""
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
    samples = sample_variants(work)
    files = [*(work / "release").rglob("*"), *(work / "scored").rglob("*"),
             *(work / "score").glob("*.spans.jsonl"),
             *(p for folder in samples for p in folder.rglob("*"))]
    lines = [f"{_sha256(p.read_bytes())}  {p.relative_to(work).as_posix()}"
             for p in sorted(files) if p.is_file()]
    submissions = list(subs.values())
    if model:
        submissions += model_traces(work, samples[0])
        lines += [f"{_sha256(p.read_bytes())}  {p.relative_to(work).as_posix()}"
                  for p in sorted((work / "model-score").glob("*.spans.jsonl"))]
    for path in submissions:
        lines += submission_lines(path, work)
    return lines


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def model_traces(work: Path, sample_release: Path) -> list[Path]:
    """Tokengeist and flat with the real model (SmolLM2, the default base scorer) on the
    sample's release (7 spans in 3 conversations), scored: their submissions."""
    (work / "model").mkdir()
    subs = {m: work / "model" / f"{m}.jsonl" for m in ("tokengeist", "flat")}
    _mtcabench("trace", "--benchmark", sample_release, *(x for m, p in subs.items()
                                                          for x in ("--method", m, "--out", p)))
    _mtcabench("score", *subs.values(), "--benchmark", sample_release, "--out",
               work / "model-score", "--resamples", 200, "--no-plot")
    return list(subs.values())


def submission_lines(path: Path, work: Path) -> list[str]:
    """A submission in two parts: its prediction lines (``#entries``, what must stay
    byte-identical) and its header without ``created_at`` and the timings of its notes
    (``#header``: what the run recorded about itself; it changes on purpose when a method's or
    scorer's parameters are recorded differently)."""
    import json

    header, *entries = path.read_bytes().splitlines(keepends=True)
    fields = json.loads(header)
    fields.pop("created_at", None)
    # timings differ from run to run
    fields["notes"] = {k: v for k, v in fields.get("notes", {}).items()
                       if not (k.endswith("_s") or "seconds" in k)}
    rel = path.relative_to(work).as_posix()
    return [f"{_sha256(b''.join(entries))}  {rel}#entries",
            f"{_sha256(json.dumps(fields, sort_keys=True).encode())}  {rel}#header"]


def sample_variants(work: Path) -> list[Path]:
    """Build the sample's releases in each variant of the card; their folders."""
    from mtcabench.io import write_records
    from mtcabench.model import Annotator, Candidate
    from mtcabench.release import build_release

    try:
        from tests.support import sample_reviews as reviews
    except ImportError:  # a checkout from before tests/support
        import importlib.util

        spec = importlib.util.spec_from_file_location(
            "sample_reviews", ROOT / "tests" / "release" / "sample_reviews.py")
        reviews = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(reviews)
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
    ap.add_argument("--no-model", action="store_true",
                    help="skip the traces with the real model (SmolLM2) on the sample")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "mtcabench-release-fingerprint",
                    help="folder to build in (emptied first)")
    a = ap.parse_args()
    sys.path.insert(0, str(ROOT))  # the checkout's package and tests.support, for the samples
    if a.raw is None:
        sys.exit("gpt-4o-airline.json not found: pass --raw or set MTCABENCH_TAUBENCH_AIRLINE")
    shutil.rmtree(a.work, ignore_errors=True)
    a.work.mkdir(parents=True)
    lines = fingerprint(a.raw, a.work, model=not a.no_model)
    text = "\n".join(lines) + "\n"
    if a.out:
        a.out.write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
