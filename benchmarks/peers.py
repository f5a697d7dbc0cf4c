"""The methods researchers would pick instead, side by side with Tokengeist: stages 4-7 of the
studies' plan (mtcabench/studies/_plan.py; docs/evaluate.md, "Studies: the plan").

Run in the peers' virtual environment (their packages live there), after the ablation curve
(the peers table's ablation row uses the K it chose):

    scripts/setup_peers.sh
    nice -n 19 $(scripts/setup_peers.sh --python) benchmarks/peers.py --lock /work/heavy.lock
    python benchmarks/study_tables.py --print        # the table, from the result files

**Stages.** ``weights``: AT2's per-head weights learned on training-split conversations only
(their ids in the file; the later stages refuse any other file). ``dev``: every scorer of the
table on its dev sample. ``tune``: per scorer and method, the search settings chosen on dev
(the parameter study's grid and rule, replayed from the stored shares: no model). ``test``:
every row on the test sample, at its tuned settings.

**Rows.** Tokengeist and flat over average attention, AT2 (the training-split weights),
AttnTrace and the ablation scorer (both over 3 seeds), and the peers through their own
packages: ``peer-contextcite`` (its fixed masks: one seed; tuned as the ablation scorer, the
same estimator) and ``peer-at2`` flat and under Tokengeist, ``peer-flashtrace`` flat at its
multi-hop setting; the model-free floors close the table. Every row gets its
conversation-clustered paired bootstrap interval against Tokengeist over average attention.

Resumable: one result file per conversation, scorer setting and seed under
benchmarks/results/units/; a rerun skips what is there (see benchmarks/study_plan.py for the
options).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from study_plan import main as plan  # noqa: E402

STAGES = ("weights", "dev", "tune", "test")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--stage" not in argv:
        argv = [a for s in STAGES for a in ("--stage", s)] + argv
    return plan(argv)


if __name__ == "__main__":
    raise SystemExit(main())
