"""The base scorer's interface and the registry of scorers by name (``--scorer``).

Importing this module does not import torch: the command line lists the scorers
(:func:`scorer_names`) and checks a run's scorer before any model loads. ``SCORER_MODULES``
names the module that defines each built-in scorer; :func:`make_scorer` imports it on first
use, and its ``@register_scorer`` class joins :data:`SCORERS`. A new scorer is one new module
with its class plus its line in ``SCORER_MODULES`` (a scorer defined outside the package only
needs ``@register_scorer``, run before the trace).
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from mtcabench.errors import InputError

if TYPE_CHECKING:
    import torch

    from mtcabench.evaluate._settings import TraceSettings
    from mtcabench.evaluate.attribution._attention import PassFeatures
    from mtcabench.evaluate.attribution._engine import Query
    from mtcabench.evaluate.attribution._loading import LoadedModel
    from mtcabench.evaluate.attribution._render import RenderedConversation

#: The built-in scorers: name -> the module that defines and registers it.
SCORER_MODULES = {
    "avg-attention": "mtcabench.evaluate.attribution._scorers",
    "attntrace": "mtcabench.evaluate.attribution._scorers",
    "at2": "mtcabench.evaluate.attribution._scorers",
    "ablation": "mtcabench.evaluate.attribution._ablation",
    # The peers' own packages (scripts/setup_peers.sh): refused with one line without them.
    "peer-contextcite": "mtcabench.evaluate.attribution.peers._contextcite",
    "peer-at2": "mtcabench.evaluate.attribution.peers._at2pkg",
    "peer-flashtrace": "mtcabench.evaluate.attribution.peers._flashtrace",
}

#: Scorers by name (``--scorer``).
SCORERS: dict[str, type[BaseScorer]] = {}


def register_scorer(cls: type[BaseScorer]) -> type[BaseScorer]:
    """Class decorator: make a scorer available under its ``name``."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} needs a name")
    SCORERS[cls.name] = cls
    return cls


def scorer_names() -> list[str]:
    """Every scorer's name, built-in or registered, without importing any scorer module."""
    return sorted(set(SCORER_MODULES) | set(SCORERS))


def scorer_class(name: str) -> type[BaseScorer]:
    """The scorer class called ``name`` (its module imported on first use: it may import torch)."""
    if name not in SCORERS and name in SCORER_MODULES:
        importlib.import_module(SCORER_MODULES[name])
    if name not in SCORERS:
        raise InputError(f"unknown scorer {name!r}; choose one of {', '.join(scorer_names())}")
    return SCORERS[name]


def make_scorer(name: str, settings: TraceSettings, loaded: LoadedModel | None) -> BaseScorer:
    """The base scorer called ``name``, configured from ``settings`` for ``loaded``."""
    cls = scorer_class(name)
    try:
        return cls.from_settings(settings, loaded)
    except ValueError as exc:  # a scorer's own check of its settings
        raise InputError(f"--scorer {name}: {exc}") from None


class BaseScorer(ABC):
    """Scores context sentences for each query of a conversation (see the module docstring)."""

    #: The scorer's name on the command line and in submissions.
    name: ClassVar[str] = ""
    #: Whether :meth:`sentence_scores` reads per-head features (costs memory, not passes).
    needs_heads: ClassVar[bool] = False
    #: Whether a segment's score is the sum of its units' scores (attention masses, linear
    #: weights); otherwise the best of them (a top-k mean, a turn-level weight). See
    #: mtcabench.evaluate.attribution._engine.turn_shares.
    additive: ClassVar[bool] = True
    #: Whether :meth:`plan` may leave out sentences of assistant turns too (the texts being
    #: attributed: a query whose own text is left out is not read in that pass).
    drops_assistant: ClassVar[bool] = False

    @classmethod
    def from_settings(cls, settings: TraceSettings, loaded: LoadedModel | None) -> BaseScorer:
        """The scorer a run with ``settings`` on ``loaded`` uses; override to read settings."""
        return cls()

    def plan(self, droppable: list[int], rng: np.random.Generator) -> list[frozenset[int]]:
        """Sentences to leave out, one set per forward pass. ``droppable``: sentences before
        the last query's turn, of exogenous turns only unless ``drops_assistant``."""
        return [frozenset()]

    def plan_conversation(self, rendered: RenderedConversation, droppable: list[int],
                          rng: np.random.Generator) -> list[frozenset[int]]:
        """:meth:`plan` with the conversation at hand (which turn each sentence is in);
        override to plan by turns. The default asks :meth:`plan`."""
        return self.plan(droppable, rng)

    def score_conversation(
        self, loaded: LoadedModel, rendered: RenderedConversation, queries: list[Query],
        droppable: list[int], drops: list[frozenset[int]],
    ) -> tuple[np.ndarray, int] | None:
        """Override to run the planned passes yourself (e.g. reading log-probabilities, not
        attention): ``[queries, sentences]`` scores (NaN: not scored) and the forward passes
        run. None (the default): the engine runs attention passes and :meth:`sentence_scores`."""
        return None

    @abstractmethod
    def sentence_scores(self, features: PassFeatures) -> torch.Tensor:
        """Scores ``[queries, sentences]`` from one pass; NaN for sentences not in the pass."""

    def parameters(self) -> dict[str, Any]:
        """Settings recorded in the submission header."""
        return {}
