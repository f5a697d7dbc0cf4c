"""The sha256 of every file of a release built from the real TauBench airline runs.

Runs the README's pipeline command by command (ingest -> annotate lineage -> review
auto-accept -> release build) on gpt-4o-airline.json; then traces the model-free floors on the
release (``trace --method recency --method first-user``), scores both submissions and builds
the release again with their score reports (``release build --scores``), which fills the card's
evaluator rows. Prints one line per file, ``sha256  path``: every file of both release folders
and the per-span scores. Run it before and after a change that must keep releases and scores
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
    convs, cands, reviewed = (work / n for n in
                              ("conversations.jsonl", "candidates.jsonl", "reviewed.jsonl"))
    _mtcabench("ingest", "taubench", raw, "--out", convs)
    _mtcabench("annotate", "lineage", "--in", convs, "--out", cands)
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
             *(work / "score").glob("*.spans.jsonl")]
    return [f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.relative_to(work).as_posix()}"
            for p in sorted(files) if p.is_file()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--raw", type=Path, default=_default_raw())
    ap.add_argument("--out", type=Path, help="also write the lines to this file")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "mtcabench-release-fingerprint",
                    help="folder to build in (emptied first)")
    a = ap.parse_args()
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
