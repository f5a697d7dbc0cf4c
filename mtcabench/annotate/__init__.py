"""Annotation: propose target spans and provenance graphs (two-phase LLM, lineage).

Three layers, each importing only the ones below it:

* :mod:`~mtcabench.annotate.llm`: the transport (the openai SDK client with our retries and a
  whole-request deadline, the providers, the executor, the response cache, the Batch API,
  accounting and budget). It knows nothing of prompts or phases: a request is an opaque body.
* :mod:`~mtcabench.annotate.phases`: each LLM phase (propose, verify) as one object owning its
  prompt template, its response schema, its requests and its parse and checks; a registry.
* :mod:`~mtcabench.lineage`: the model-free lineage annotator.

Above them: the pipeline (a chain of phases over streamed conversations), the combination of
annotators, the summary, and the one runner behind the three entry points here.

Public surface: :func:`annotate_run` (the LLM phases plus the lineage annotator, combined),
:func:`annotate_propose` and :func:`annotate_verify` (one phase each), their options, the
deterministic checks that every model answer goes through, and the two registries
(:func:`register_phase`, :func:`register_provider`). See docs/annotate.md.
"""

from mtcabench.annotate.api import annotate_propose, annotate_run, annotate_verify
from mtcabench.annotate.combine import combine_candidates
from mtcabench.annotate.llm.accounting import Budget, Prices
from mtcabench.annotate.llm.providers import Provider, register_provider
from mtcabench.annotate.options import AnnotateOptions
from mtcabench.annotate.phases import (
    REASONS,
    Phase,
    RequestSettings,
    Sampling,
    TranscriptLimits,
    candidate_from_answer,
    proposals_from_answer,
    register_phase,
)
from mtcabench.annotate.phases.quotes import find_quote
from mtcabench.annotate.summary import RunSummary

__all__ = [
    "REASONS",
    "AnnotateOptions",
    "Budget",
    "Phase",
    "Prices",
    "Provider",
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
    "register_phase",
    "register_provider",
]
