"""Parameter study: Tokengeist's edge F1 and source recall over its search settings, on a
development split of TauBench airline; test-split figures of the chosen settings beside flat
and the model-free floors.

One command produces the whole table:

    python benchmarks/parameter_study.py                      # gold: lineage on the real file
    python benchmarks/parameter_study.py --benchmark release/X          # or any benchmark
    python benchmarks/parameter_study.py --conversations C --reviewed R  # or review decisions
    python benchmarks/parameter_study.py --write-docs docs/evaluate.md   # also update the docs

**Gold.** By default the gold is what the pipeline builds from the real runs
(gpt-4o-airline.json): ingest, ``annotate lineage`` with its default rules, ``review
auto-accept``, ``release build`` (written under ``--out``/gold). ``--benchmark`` takes any
benchmark (a release folder, a folder of conversations.jsonl + spans.jsonl, a Hub id);
``--conversations`` with ``--reviewed`` builds a release from review decisions first. Rerun on
newer gold (lineage-v2) with either.

**Split** (:func:`split_of`): by *task*, so that the trials of one task never straddle it. A
TauBench conversation ``.../task-<id>/trial-<n>`` is **dev** when ``id mod 5 = 0`` (tasks 0, 5,
..., 45) and **test** when ``id mod 5 = 1`` (tasks 1, 6, ..., 46), in both cases trials 0 and 1
only (the model pass is the cost: about 90 s per conversation on 2 shared cores); every other
conversation is unused, kept unseen for later studies. A conversation without a task id is
bucketed by the CRC-32 of its id. Settings are chosen on dev only; test figures are computed
once, for the chosen settings.

**Cost.** The model runs once per conversation: one forward pass with average attention gives
the sentence scores of every query (the spans and every assistant turn Tokengeist may recurse
into), exactly as ``trace`` computes them (the same function, ``model_shares``); both turn
aggregates (max, sum) are derived from those scores. The shares are cached in
``--out``/shares.jsonl (keyed by model, scorer, conversation and spans), so a rerun with new
grid points or the test table costs no forward pass. Every grid point then replays the pure
search (:func:`mtcabench.evaluate.tokengeist`, :func:`~mtcabench.evaluate.flat`) on the stored
shares; tests/studies/test_parameter_study.py checks that a replay gives trace's graphs.

Outputs in ``--out`` (default runs/parameter-study): table.md (printed too), grid.csv (every
grid point on dev), shares.jsonl, test/ (the test split's benchmark, submissions at the chosen
settings and their score reports with floors, from ``mtcabench score``).

The pipeline is a module of the package (mtcabench.studies); this script is its command line.
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
