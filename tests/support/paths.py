"""Where the tests' inputs and tools are: the bundled sample, the real TauBench airline runs,
the browser."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "raw" / "sample" / "sample-airline.json"


def taubench_airline_path() -> Path | None:
    """The real gpt-4o-airline.json: $MTCABENCH_TAUBENCH_AIRLINE, raw/data/ after `raw fetch`,
    or the workplace's shared copy beside the checkout."""
    candidates = [
        os.environ.get("MTCABENCH_TAUBENCH_AIRLINE"),
        ROOT / "raw" / "data" / "taubench" / "gpt-4o-airline.json",
        ROOT.parent / "shared" / "raw" / "tau-bench" / "gpt-4o-airline.json",
    ]
    for c in candidates:
        if c and Path(c).is_file():
            return Path(c)
    return None


#: Debian's Chromium (scripts/setup.sh installs it), driven by Playwright in the browser tests.
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
