"""Scoring submissions against a benchmark: exact metrics, intervals, reports, pictures.

The public surface; the code lives in one module per role:

- :mod:`~mtcabench.results.metrics`: the counts and metrics, one span scored, the averages;
- :mod:`~mtcabench.results.submission`: reading and checking a submission file;
- :mod:`~mtcabench.scoring.bootstrap`: vectorised (paired) bootstrap intervals;
- :mod:`~mtcabench.scoring.scorer`: scoring, report rows, comparisons, the model-free floors;
- :mod:`~mtcabench.results.report`: the report and comparison records (JSON);
- :mod:`~mtcabench.scoring.tables`: terminal and Markdown tables;
- :mod:`~mtcabench.scoring.plots`: the bar chart by dependency type;
- :mod:`~mtcabench.scoring.show`: one span drawn with gold and predicted graphs (by
  :mod:`mtcabench.render`);
- :mod:`~mtcabench.results.schema`: the published JSON schema of a submission line;
- :mod:`~mtcabench.scoring.run`: a whole scoring run, as the CLI and the demo do it.
"""

from mtcabench.results.metrics import (
    AVERAGES,
    COUNTS,
    EVIDENCE_K,
    METRICS,
    Count,
    Metric,
    SpanCase,
    SpanScore,
    aggregate,
    edge_f1,
    edge_precision,
    edge_recall,
    edge_sources,
    evidence_hits,
    gold_evidence,
    hallucinated_source_recall,
    register_count,
    register_metric,
    score_span,
    source_precision,
    source_recall,
)
from mtcabench.results.report import Comparison, FloorReport, ScoreReport
from mtcabench.scoring.run import ScoreRun, compare_and_print, run_scoring
from mtcabench.scoring.scorer import (
    build_comparison,
    build_report,
    compare_submissions,
    floor_reports,
    score_floor,
    score_spans,
    score_submission,
    with_floors,
)
from mtcabench.results.submission import TOLERATED, Submission, read_submission

__all__ = [
    "AVERAGES", "COUNTS", "EVIDENCE_K", "METRICS", "TOLERATED",
    "Comparison", "Count", "FloorReport", "Metric", "ScoreReport", "ScoreRun", "SpanCase",
    "SpanScore", "Submission",
    "aggregate", "build_comparison", "build_report", "compare_and_print", "compare_submissions",
    "edge_f1", "edge_precision", "edge_recall", "edge_sources", "evidence_hits", "floor_reports",
    "gold_evidence", "hallucinated_source_recall", "read_submission", "register_count",
    "register_metric",
    "run_scoring", "score_floor",
    "score_span", "score_spans", "score_submission", "source_precision", "source_recall",
    "with_floors",
]
