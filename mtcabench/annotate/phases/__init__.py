"""The LLM annotation phases: each one object owning its prompt, schema, requests and parse.

``propose`` (conversations to proposals) and ``verify`` (proposals to candidates) are
registered here; :func:`register_phase` adds another (docs/annotate.md shows one). The
default chain is :data:`DEFAULT_PHASES`.
"""

from __future__ import annotations

from mtcabench.annotate.phases.base import COMPACT_SETTINGS, Phase, RequestSettings, Sampling
from mtcabench.annotate.phases.checks import REASONS
from mtcabench.annotate.phases.propose import ProposePhase, proposals_from_answer
from mtcabench.annotate.phases.registry import (
    PHASES,
    phase_class,
    phase_names,
    register_phase,
    unregister_phase,
)
from mtcabench.annotate.phases.schema import AnswerModel, EdgeOut
from mtcabench.annotate.phases.templates import PromptTemplate, load_template
from mtcabench.annotate.phases.transcript import TranscriptLimits
from mtcabench.annotate.phases.verify import VerifyPhase, candidate_from_answer
from mtcabench.errors import InputError
from mtcabench.model import Candidate

#: The chain ``annotate run`` goes through: propose, then verify each ok proposal.
DEFAULT_PHASES = (ProposePhase.name, VerifyPhase.name)


def check_chain(names: tuple[str, ...]) -> tuple[type[Phase], ...]:
    """The classes of a chain of phases, each taking what the one before makes."""
    if not names:
        raise InputError("--phases needs at least one phase")
    classes = tuple(phase_class(n) for n in names)
    if classes[0].consumes is not None:
        raise InputError(f"phase {names[0]!r} cannot start a chain: it takes "
                         f"{classes[0].consumes.__name__} records, not conversations")
    for before, after in zip(classes, classes[1:]):
        if after.consumes is not before.produces:
            raise InputError(f"phase {after.name!r} cannot follow {before.name!r}: it takes "
                             f"{getattr(after.consumes, '__name__', 'conversations')}, "
                             f"not {before.produces.__name__}")
    if classes[-1].produces is not Candidate:
        raise InputError(f"the last phase ({names[-1]!r}) must make candidates")
    return classes


__all__ = [
    "COMPACT_SETTINGS",
    "DEFAULT_PHASES",
    "PHASES",
    "REASONS",
    "AnswerModel",
    "EdgeOut",
    "Phase",
    "PromptTemplate",
    "ProposePhase",
    "RequestSettings",
    "Sampling",
    "TranscriptLimits",
    "VerifyPhase",
    "candidate_from_answer",
    "check_chain",
    "load_template",
    "phase_class",
    "phase_names",
    "proposals_from_answer",
    "register_phase",
    "unregister_phase",
]
