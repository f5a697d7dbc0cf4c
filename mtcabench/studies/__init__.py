"""Studies: pipelines that measure the evaluator on real runs, as functions the scripts call.

The parameter study (:func:`parameter_study`; benchmarks/parameter_study.py is its command
line) and what other studies share with it: the gold built from the real runs
(:func:`build_gold`), the dev/test split by task (:func:`split_of`), and writing a table into a
docs page (:func:`write_docs`; benchmarks/peers.py writes its table with it). It sits above
the stages (it ingests, annotates, reviews, releases, traces and scores), beside the demo.

**The parameter study**: Tokengeist's edge F1 and source recall over its search settings, on a
development split of TauBench airline; test-split figures of the chosen settings beside flat
and the model-free floors. One command produces the whole table:

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
conversation is unused, kept unseen for later studies. A task id that is not a number (tau2-bench
telecom names its tasks) is bucketed by the CRC-32 of the task's name, so that every agent's run
of it lands in one split; a conversation without a task id by the CRC-32 of its id. The rule is
the benchmark format's (:mod:`mtcabench.benchmark`), shared with a release built
``--split-by-task``. Settings are chosen on dev only; test figures are computed
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

**Resumable studies** (the ablation curve and comparison, the peers table: their plan is
:mod:`mtcabench.studies._plan`, stated in docs/evaluate.md): units of model work
(:class:`Unit`: a conversation x base-scorer configuration x seed) run by :func:`run_units`,
one result file each (:class:`StudyResult` in a :class:`ResultStore`), skipped when done,
computed when missing, torn or of other settings; :func:`run_plan` runs the stages in order
and :func:`write_tables` regenerates the tables, intervals and the curve from the files
alone (benchmarks/study_plan.py and benchmarks/study_tables.py are their command lines).
"""

from __future__ import annotations

from mtcabench.studies._claims_llm import (
    llm_sample,
    llm_submission,
    llm_table,
    rejection_reasons,
    targets_lines,
)
from mtcabench.studies._claims import (
    claim_errors,
    first_hop_shares,
    claim_table,
    claim_units,
    claims_of,
    search_table,
)
from mtcabench.studies._claims_bounds import claim_bounds
from mtcabench.studies._claims_peers import claim_peer_units, claim_peers_table
from mtcabench.studies._claims_relay import relay_table, relay_units
from mtcabench.studies._models import model_root, model_table, model_units
from mtcabench.studies._window_room import room_units, window_room_table, windowed
from mtcabench.studies._cost import append_cost_row, cost_log_rows, cost_summary
from mtcabench.studies._domains import (
    candidate_table,
    domain_gold,
    release_gold,
    domain_table,
    domain_units,
)
# The split is the benchmark format's rule, shared with a release built --split-by-task.
from mtcabench.benchmark import (DEV_BUCKETS, SPLITS, TEST_BUCKETS, TRAIN_BUCKETS, TRIALS,
                                 split_of)
from mtcabench.studies._grid import (
    GRID,
    PLATEAU,
    Point,
    Scores,
    best_edge_f1,
    choose,
    default_point,
    evaluate_point,
    floor_scores,
    objective,
    replay,
    run_grid,
    score_graphs,
    to_entry,
)
from mtcabench.studies._parameter import (
    DEFAULT_MODEL,
    DEFAULT_SCORER,
    parameter_study,
    score_test,
    write_split_benchmark,
    write_submission,
)
from mtcabench.studies import _plan as plan  # the plan's rows and samples, for the scripts
from mtcabench.studies._plan import check_training_split, choose_k, curve_units, sample
from mtcabench.studies._report import DOCS_BEGIN, DOCS_END, md_table, render, write_docs
from mtcabench.studies._results import (
    PointResult,
    ResultStore,
    SpanResult,
    StudyResult,
    conversation_fingerprint,
    digest,
    gold_fingerprint,
    point_settings,
    rounded,
)
from mtcabench.studies._studies import (
    FIGURE,
    RESULTS,
    SINK,
    STAGES,
    WEIGHTS,
    chosen_k,
    comparison_units,
    load_gold,
    missing,
    run_plan,
    write_tables,
)
from mtcabench.studies._shares import (
    AGGREGATES,
    CACHE_FORMAT,
    ShareTables,
    all_shares,
    compute_shares,
    load_cache,
    signature,
)
from mtcabench.studies._split import GOLD_DECIDED_AT, build_gold, by_conversation, describe
from mtcabench.studies._units import (
    FLOOR,
    Models,
    RunSummary,
    SearchPoint,
    Unit,
    code_commit,
    run_units,
)

__all__ = [
    "AGGREGATES", "CACHE_FORMAT", "relay_table", "relay_units", "append_cost_row", "cost_log_rows", "cost_summary", "DEFAULT_MODEL", "DEFAULT_SCORER", "DEV_BUCKETS", "DOCS_BEGIN",
    "DOCS_END", "FIGURE", "FLOOR", "GOLD_DECIDED_AT", "GRID", "PLATEAU", "RESULTS", "SINK",
    "SPLITS", "STAGES", "TEST_BUCKETS", "TRAIN_BUCKETS", "TRIALS", "WEIGHTS", "Models", "Point",
    "PointResult", "ResultStore", "RunSummary", "Scores", "SearchPoint", "ShareTables",
    "SpanResult", "StudyResult", "Unit", "all_shares", "best_edge_f1", "build_gold",
    "by_conversation", "candidate_table", "check_training_split", "choose", "choose_k", "chosen_k",
    "code_commit", "comparison_units", "compute_shares", "conversation_fingerprint", "curve_units",
    "claim_bounds", "claim_errors", "claim_peer_units", "claim_peers_table", "claim_table", "claim_units", "claims_of", "first_hop_shares", "llm_sample", "llm_submission",
    "llm_table", "rejection_reasons", "targets_lines", "default_point", "describe", "digest",
    "domain_gold", "domain_table", "domain_units", "release_gold",
    "evaluate_point", "floor_scores", "gold_fingerprint", "load_cache", "point_settings", "load_gold", "md_table",
    "missing", "model_root", "model_table", "model_units", "objective", "parameter_study", "plan", "render", "replay", "rounded", "run_grid",
    "run_plan", "run_units", "sample", "score_graphs", "score_test", "search_table", "signature",
    "split_of",
    "to_entry", "write_docs", "write_split_benchmark", "write_submission", "write_tables",
    "room_units", "window_room_table", "windowed",
]
