"""The proposed span record handed from span selection and hallucination to the proposer."""

from __future__ import annotations

from dataclasses import dataclass

from mtcabench.annotate.lineage._values import Value
from mtcabench.model import DependencyType, ProvenanceGraph, TargetSpan


@dataclass
class _Span:
    """A proposed span before it becomes a Candidate."""

    span: TargetSpan
    value: Value
    graph: ProvenanceGraph
    dtype: DependencyType
    rationale: str
