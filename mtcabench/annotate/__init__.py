"""Annotation: propose target spans and provenance graphs (two-phase LLM, lineage).

Public surface: :func:`annotate_run` (both LLM phases plus the lineage annotator, combined),
:func:`annotate_propose` and :func:`annotate_verify` (one phase each), their options, and the
deterministic checks that every model answer goes through. See docs/annotate.md.
"""

from mtcabench.annotate.accounting import Budget, Prices
from mtcabench.annotate.api import (
    AnnotateOptions,
    annotate_propose,
    annotate_run,
    annotate_verify,
)
from mtcabench.annotate.chat_requests import RequestSettings, Sampling
from mtcabench.annotate.checks import REASONS, candidate_from_answer, proposals_from_answer
from mtcabench.annotate.combine import combine_candidates
from mtcabench.annotate.quotes import find_quote
from mtcabench.annotate.summary import RunSummary
from mtcabench.annotate.transcript import TranscriptLimits

__all__ = [
    "REASONS",
    "AnnotateOptions",
    "Budget",
    "Prices",
    "RequestSettings",
    "RunSummary",
    "Sampling",
    "TranscriptLimits",
    "annotate_propose",
    "annotate_run",
    "annotate_verify",
    "candidate_from_answer",
    "combine_candidates",
    "find_quote",
    "proposals_from_answer",
]
