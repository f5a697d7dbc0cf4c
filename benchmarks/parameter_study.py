"""Parameter study: Tokengeist's edge F1 and source recall over its search settings, on a
development split of TauBench airline; test-split figures of the chosen settings beside flat
and the model-free floors. The command line of :func:`mtcabench.studies.parameter_study`,
whose module docstring says how the gold, the split and the grid are made.

    python benchmarks/parameter_study.py                      # gold: lineage on the real file
    python benchmarks/parameter_study.py --benchmark release/X          # or any benchmark
    python benchmarks/parameter_study.py --conversations C --reviewed R  # or review decisions
    python benchmarks/parameter_study.py --write-docs docs/evaluate.md   # also update the docs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.support

from tests.support.paths import taubench_airline_path

from mtcabench.studies import DEFAULT_MODEL, DEFAULT_SCORER, parameter_study

DEFAULT_OUT = ROOT / "runs" / "parameter-study"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--benchmark", help="Gold benchmark (release folder, JSONL folder, Hub id).")
    ap.add_argument("--conversations", type=Path, help="Conversations (with --reviewed).")
    ap.add_argument("--reviewed", type=Path, help="Review decisions (with --conversations).")
    ap.add_argument("--raw", type=Path, default=taubench_airline_path(),
                    help="gpt-4o-airline.json, for the default gold.")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--scorer", default=DEFAULT_SCORER)
    ap.add_argument("--write-docs", type=Path, help="Also write the table into this Markdown "
                    "file between the parameter-study markers (docs/evaluate.md).")
    args = ap.parse_args()
    print(parameter_study(args.out, benchmark=args.benchmark, conversations=args.conversations,
                          reviewed=args.reviewed, raw=args.raw, model=args.model,
                          scorer=args.scorer, docs=args.write_docs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
