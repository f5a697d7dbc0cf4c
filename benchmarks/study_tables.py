"""Regenerate the studies' tables, intervals and the ablation curve from the result files
alone (no model, no gold; seconds):

    python benchmarks/study_tables.py                # benchmarks/results/tables/*.md + .svg
    python benchmarks/study_tables.py --write-docs   # also docs/evaluate.md and its figure

With ``--write-docs`` a table replaces its block of docs/evaluate.md only when every result
file the plan names for it is there (``--partial``: whatever is there), so the page's older
figures stay until new results replace them; the curve is drawn to
docs/figures/ablation-curve.svg.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from mtcabench.studies import RESULTS, write_tables  # noqa: E402
from mtcabench.studies import FIGURE  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, default=ROOT / RESULTS)
    ap.add_argument("--write-docs", action="store_true",
                    help="replace the complete tables' blocks in docs/evaluate.md")
    ap.add_argument("--partial", action="store_true",
                    help="with --write-docs: also tables whose runs are not complete")
    ap.add_argument("--print", action="store_true", help="print the tables")
    args = ap.parse_args(argv)
    docs = ROOT / "docs" / "evaluate.md" if args.write_docs else None
    tables = write_tables(args.results, docs=docs, partial=args.partial,
                          figure=ROOT / FIGURE if args.write_docs else None)
    if args.print:
        for name, text in tables.items():
            print(f"\n## {name}\n\n{text or '(no results yet)'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
