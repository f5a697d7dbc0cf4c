"""The ablation scorer's quality against its passes, and its test comparison: stages 1-3 of the
studies' plan (mtcabench/studies/_plan.py; docs/evaluate.md, "Studies: the plan").

    python benchmarks/ablation_curve.py                  # curve on dev, K, test comparison
    python benchmarks/ablation_curve.py --stage curve    # the dev curve only
    python benchmarks/study_tables.py --print            # the tables, from the result files

**Curve** (dev): Tokengeist over ``--scorer ablation`` at K = 4, 8, 16, 32 ablations per
conversation (K + 1 forward passes) and over average attention, on the plan's dev sample (every
span of its conversations), default search settings, seed 0. **K**: the highest dev edge F1 at
K <= 32 (33 passes per conversation). **Comparison** (test): that K over 3 seeds against
average attention on the plan's test sample, with the conversation-clustered paired bootstrap
interval of the difference.

Resumable: one result file per conversation, scorer setting and seed under
benchmarks/results/units/; a rerun skips what is there (see benchmarks/study_plan.py, which
runs this and the peers in one go, for the options).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from study_plan import main as plan  # noqa: E402

STAGES = ("curve", "comparison")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--stage" not in argv:
        argv = [a for s in STAGES for a in ("--stage", s)] + argv
    return plan(argv)


if __name__ == "__main__":
    raise SystemExit(main())
