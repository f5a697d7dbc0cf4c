"""The formats of results: submissions, the metrics, score reports, the floors' scores.

What an attribution method produces and what the scorer makes of it, read and written in one
place for every stage: the evaluator writes submissions and merges shards, the scorer reads
submissions and writes reports, the release stage reads reports and the floors' scores for
the dataset card. Like :mod:`mtcabench.benchmark` it sits below the stages, which never import
each other.

- :mod:`~mtcabench.results.submission`: reading, checking and writing a submission, its run key;
- :mod:`~mtcabench.results.schema`: the published JSON schema of a submission line;
- :mod:`~mtcabench.results.metrics`: the counts and metrics tables, scoring one span
  (:func:`~mtcabench.results.metrics.score_span`), macro and micro averages;
- :mod:`~mtcabench.results.report`: the score report and comparison records (JSON);
- :mod:`~mtcabench.results.floors`: the model-free floors scored on a benchmark.
"""

from mtcabench.results.floors import all_floor_scores, floor_scores
from mtcabench.results.metrics import (
    AVERAGES,
    COUNTS,
    METRICS,
    Count,
    Metric,
    SpanCase,
    SpanScore,
    aggregate,
    definitions,
    macro_averages,
    register_count,
    register_metric,
    score_span,
    span_matrix,
    unregister_count,
    unregister_metric,
)
from mtcabench.results.report import Comparison, FloorReport, ScoreReport, read_score_report
from mtcabench.results.submission import (
    RUN_KEY,
    TOLERATED,
    Submission,
    read_submission,
    run_key,
    shard_of,
    write_submission,
)

__all__ = [
    "AVERAGES", "COUNTS", "METRICS", "RUN_KEY", "TOLERATED",
    "Comparison", "Count", "FloorReport", "Metric", "ScoreReport", "SpanCase", "SpanScore",
    "Submission", "aggregate", "all_floor_scores", "definitions", "floor_scores",
    "macro_averages", "read_score_report", "read_submission", "register_count",
    "register_metric", "run_key", "score_span", "shard_of", "span_matrix", "unregister_count",
    "unregister_metric", "write_submission",
]
