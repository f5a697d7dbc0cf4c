"""Claims: the deterministic claim proposer and the hand-annotated claims set.

- :func:`propose_claims` (``_propose``): claim targets in an agent's answers, typed by their
  wording, model-free (docs/claims.md, "The proposer").
- the LLM phases ``claim-propose`` and ``claim-verify`` (``_phases``): one claim's graph from
  a model, then verified edge by edge (docs/claims.md, "The LLM pipeline on claims").
- :func:`annotation_sheet` (``_sheet``): a conversation as a person reads it to annotate.
- :func:`read_annotations` (``_annotations``): pass 1 of the annotated set as candidates (pass
  2, the checks, and the two passes' agreement: :mod:`mtcabench.review`).
"""

from mtcabench.annotate.claims._annotations import (
    GUIDE_VERSION,
    claim_annotator,
    read_annotations,
)
from mtcabench.annotate.claims._phases import (
    ClaimProposePhase,
    ClaimTarget,
    ClaimVerifyPhase,
    claim_targets,
    read_claim_targets,
)
from mtcabench.annotate.claims._propose import (
    KIND_RULES,
    MIN_WORDS,
    ProposedClaim,
    ProposerRecall,
    claim_kind_of,
    is_claim,
    message_region,
    propose_claims,
    proposer_recall,
)
from mtcabench.annotate.claims._sheet import annotation_sheet

__all__ = [
    "ClaimProposePhase",
    "ClaimTarget",
    "ClaimVerifyPhase",
    "GUIDE_VERSION",
    "KIND_RULES",
    "MIN_WORDS",
    "ProposedClaim",
    "ProposerRecall",
    "annotation_sheet",
    "claim_targets",
    "claim_annotator",
    "claim_kind_of",
    "is_claim",
    "message_region",
    "propose_claims",
    "proposer_recall",
    "read_claim_targets",
    "read_annotations",
]
