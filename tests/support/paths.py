"""Where the tests' inputs and tools are: the bundled sample, the real TauBench airline runs,
the real tau2-bench results, the browser."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "raw" / "sample" / "sample-airline.json"


def _shared(*parts: str) -> list[Path]:
    """The workplace's shared copy of an upstream file or folder, beside the checkout or
    beside a folder above it (a worktree under /work/wt/<name>)."""
    return [folder / "shared" / "raw" / Path(*parts) for folder in ROOT.parents]


def taubench_airline_path() -> Path | None:
    """The real gpt-4o-airline.json: $MTCABENCH_TAUBENCH_AIRLINE, raw/data/ after `raw fetch`,
    or the workplace's shared copy beside the checkout."""
    candidates = [
        os.environ.get("MTCABENCH_TAUBENCH_AIRLINE"),
        ROOT / "raw" / "data" / "taubench" / "gpt-4o-airline.json",
        *_shared("tau-bench", "gpt-4o-airline.json"),
    ]
    for c in candidates:
        if c and Path(c).is_file():
            return Path(c)
    return None


#: The 19 tau2-bench results files that release 2.0 was built from (663 runs, the classic
#: layout): the tests of release 2.0, of lineage on tau2 and of the classic reader read these,
#: not every file the folder holds (the 9 added for issue 45 are read by their own tests).
TAU2_RELEASE_2 = (
    "airline-claude-opus-4-6-distyl.json", "airline-claude-opus-4-6-ironshell.json",
    "airline-claude-sonnet-4-5.json", "airline-claude-sonnet-4-6-ironforge.json",
    "airline-deepseek-chat-ironforge.json", "airline-ft-gpt-4.1.json",
    "airline-gpt-4.1-mini-toolorchestra.json", "airline-gpt-4.1.json",
    "airline-gpt-5.4-ironforge.json", "airline-gpt-5.4-ironshell.json",
    "airline-grok-3-ironforge.json", "airline-o3-ironforge.json", "airline-whissle.json",
    "retail-ft-gpt-4.1.json", "retail-gpt-4.1-mini-toolorchestra.json", "retail-gpt-4.1.json",
    "telecom-ft-gpt-4.1.json", "telecom-gpt-4.1.json", "telecom-gpt-4o.json")
#: The tau2-bench files added for issue 45 (464 runs): later layouts, new domains, no user.
TAU2_MORE = (
    "airline-gpt-4o-2024-11-20.json", "airline-qwen2.5-7b.json",
    "airline-gpt-oss-120b-langchain.json", "telecom-solo-ft-gpt-4.1.json",
    "telecom-solo-gpt-4.1.json", "airline-claude-opus-4-6-cascata.json",
    "medical_triage-claude-opus-4-6-cascata.json", "airline-claude-opus-4-6-adaptive.json",
    "medical-claude-opus-4-6-adaptive.json")
#: How many tau2-bench files the manifest names (raw/manifest.json, source tau2).
TAU2_FILES = len(TAU2_RELEASE_2) + len(TAU2_MORE)
#: The TauBench files of the shared copy (tests/ingest/test_every_real_run.py reads them all).
TAUBENCH_FILES = ("gpt-4o-airline.json", "retail-grok-3.json", "retail-gpt-4.1-mini.json")


def release_2_tau2_files(folder: Path) -> list[Path]:
    """The 19 files of release 2.0 in ``folder`` (see :data:`TAU2_RELEASE_2`)."""
    return [folder / name for name in sorted(TAU2_RELEASE_2)]


def tau2_folder() -> Path | None:
    """A folder holding the 19 real tau2-bench results files of release 2.0:
    $MTCABENCH_TAU2, raw/data/tau2 after `raw fetch --source tau2`, or the workplace's shared
    copy."""
    candidates = [os.environ.get("MTCABENCH_TAU2"), ROOT / "raw" / "data" / "tau2",
                  *_shared("tau2-bench")]
    for c in candidates:
        if c and all((Path(c) / name).is_file() for name in TAU2_RELEASE_2):
            return Path(c)
    return None


def every_real_runs_file() -> list[Path] | None:
    """All 31 real runs files (3 TauBench, 28 tau2-bench) of one folder: $MTCABENCH_RAW (a
    folder holding tau-bench/ and tau2-bench/), raw/data after `raw fetch` (taubench/,
    tau2/), or the workplace's shared copy; None where one of them is missing."""
    roots = [(Path(r) / "tau-bench", Path(r) / "tau2-bench")
             for r in [os.environ.get("MTCABENCH_RAW")] if r]
    roots.append((ROOT / "raw" / "data" / "taubench", ROOT / "raw" / "data" / "tau2"))
    roots += [(folder / "shared" / "raw" / "tau-bench", folder / "shared" / "raw" / "tau2-bench")
              for folder in ROOT.parents]
    for tb, t2 in roots:
        files = [tb / n for n in TAUBENCH_FILES] + [t2 / n for n in (*TAU2_RELEASE_2, *TAU2_MORE)]
        if all(f.is_file() for f in files):
            return files
    return None


#: Debian's Chromium (scripts/setup.sh installs it), driven by Playwright in the browser tests.
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
