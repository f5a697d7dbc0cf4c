"""The phase registry: phase names to the classes that implement them.

Kept apart from the phase base class so that the template loader can check a template's
``phase`` against it without importing the phases themselves.
"""

from __future__ import annotations

from typing import Any

from mtcabench.errors import InputError

_PHASES: dict[str, type[Any]] = {}


def register_phase(cls: type[Any]) -> type[Any]:
    """Add a phase class under its ``name`` (usable as a class decorator); replaces one of the
    same name."""
    _PHASES[cls.name] = cls
    return cls


def unregister_phase(name: str) -> None:
    _PHASES.pop(name, None)


def phase_names() -> tuple[str, ...]:
    return tuple(_PHASES)


def phase_class(name: str) -> type[Any]:
    """The class registered as ``name``; InputError naming the known ones otherwise."""
    try:
        return _PHASES[name]
    except KeyError:
        raise InputError(f"unknown annotation phase {name!r}; expected one of "
                         f"{', '.join(_PHASES)}") from None
