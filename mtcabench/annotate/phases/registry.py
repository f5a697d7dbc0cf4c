"""The phase registry: phase names to the classes that implement them.

Kept apart from the phase base class so that the template loader can check a template's
``phase`` against it without importing the phases themselves: the built-in phases are
listed by the module that registers each (:data:`BUILT_IN`), imported on first lookup.
"""

from __future__ import annotations

from typing import Any

from mtcabench.errors import InputError
from mtcabench.registry import Registry

#: The built-in phases: name -> the module that registers it.
BUILT_IN = {
    "propose": "mtcabench.annotate.phases.propose",
    "verify": "mtcabench.annotate.phases.verify",
    "claim-propose": "mtcabench.annotate.claims._phases",
    "claim-verify": "mtcabench.annotate.claims._phases",
}
#: Phase classes by name (``--phases``).
PHASES: Registry[type[Any]] = Registry("annotation phase", lazy=BUILT_IN)


def register_phase(cls: type[Any]) -> type[Any]:
    """Add a phase class under its ``name`` (usable as a class decorator); the registry's one
    rule: the same class again is harmless, another class under a taken name is an error."""
    return PHASES.register(cls)


def unregister_phase(name: str) -> None:
    PHASES.unregister(name)


def phase_names() -> tuple[str, ...]:
    return tuple(PHASES.names())


def phase_class(name: str) -> type[Any]:
    """The class registered as ``name``; InputError naming the known ones otherwise."""
    if name not in PHASES:
        raise InputError(f"unknown annotation phase {name!r}; expected one of "
                         f"{', '.join(PHASES.names())}")
    return PHASES.get(name)
