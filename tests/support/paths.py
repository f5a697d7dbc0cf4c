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


#: How many tau2-bench results files the manifest names (raw/manifest.json, source tau2).
TAU2_FILES = 19


def tau2_folder() -> Path | None:
    """A folder holding the 19 real tau2-bench results files: $MTCABENCH_TAU2, raw/data/tau2
    after `raw fetch --source tau2`, or the workplace's shared copy."""
    candidates = [os.environ.get("MTCABENCH_TAU2"), ROOT / "raw" / "data" / "tau2",
                  *_shared("tau2-bench")]
    for c in candidates:
        if c and len(list(Path(c).glob("*-*.json"))) >= TAU2_FILES:
            return Path(c)
    return None


#: Debian's Chromium (scripts/setup.sh installs it), driven by Playwright in the browser tests.
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
