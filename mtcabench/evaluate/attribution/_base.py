"""The base scorer's interface and the registry of scorers by name (``--scorer``).

A base scorer is one class that describes itself: its ``name``, its own settings (``Settings``,
a frozen dataclass next to it: each field is a ``--<scorer>-<field>`` option of ``trace``,
``explain`` and ``demo``, a keyword of ``TraceSettings(scorers=...)`` for the Tracer and
Python callers, and a key of ``scorer_parameters`` in the submission header), what it can do
(``online``, ``evidence``, ``passes_per_conversation``) and its documentation row
(``summary``). Registering it
on :data:`SCORERS` (one line) is all the command line, ``--help``, the docs' scorer table and
the Tracer need.

Importing this module, or any built-in scorer module, does not import torch: the command line
builds its options from the registered settings before any model loads. :data:`SCORERS`
names the module of each built-in scorer and imports it on first lookup
(:class:`~mtcabench.registry.Registry`).
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from mtcabench.errors import InputError
from mtcabench.registry import Registry

if TYPE_CHECKING:
    import torch

    from mtcabench.evaluate._settings import TraceSettings
    from mtcabench.evaluate.attribution._attention import PassFeatures
    from mtcabench.evaluate.attribution._engine import Query
    from mtcabench.evaluate.attribution._loading import LoadedModel
    from mtcabench.evaluate.attribution._render import RenderedConversation

#: Scorers by name (``--scorer``); the built-in ones are imported on first lookup.
SCORERS: Registry[type[BaseScorer]] = Registry("scorer", lazy={
    "avg-attention": "mtcabench.evaluate.attribution._scorers",
    "attntrace": "mtcabench.evaluate.attribution._scorers",
    "at2": "mtcabench.evaluate.attribution._scorers",
    "ablation": "mtcabench.evaluate.attribution._ablation",
    # The peers' own packages (scripts/setup_peers.sh): refused with one line without them.
    "peer-contextcite": "mtcabench.evaluate.attribution.peers._contextcite",
    "peer-at2": "mtcabench.evaluate.attribution.peers._at2pkg",
    "peer-flashtrace": "mtcabench.evaluate.attribution.peers._flashtrace",
})


def register_scorer(cls: type[BaseScorer]) -> type[BaseScorer]:
    """Class decorator: make a scorer available under its ``name`` (see :data:`SCORERS`)."""
    if not dataclasses.is_dataclass(cls.Settings):
        raise ValueError(f"{cls.__name__}.Settings must be a dataclass")
    return SCORERS.register(cls)


def scorer_names() -> list[str]:
    """Every scorer's name, built-in or registered, without importing any scorer module."""
    return sorted(SCORERS.names())


def scorer_class(name: str) -> type[BaseScorer]:
    """The scorer class called ``name`` (its module imported on first use)."""
    return SCORERS.get(name)


def make_scorer(name: str, settings: TraceSettings, loaded: LoadedModel | None) -> BaseScorer:
    """The base scorer called ``name``, configured from ``settings`` for ``loaded``."""
    cls = scorer_class(name)
    try:
        return cls.from_settings(settings, loaded)
    except ValueError as exc:  # a scorer's own check of its settings
        raise InputError(f"--scorer {name}: {exc}") from None


# ---------------------------------------------------------------- settings


@dataclasses.dataclass(frozen=True)
class NoSettings:
    """The settings of a scorer that has none."""


def setting(default: Any, help: str, *, path: bool = False) -> Any:
    """A field of a scorer's ``Settings``: its default and its ``--help`` text; ``path``: the
    value names a file the run reads (a ``Path`` option; an output may never overwrite it)."""
    return dataclasses.field(default=default, metadata={"help": help, "path": path})


def option_flag(prefix: str, field: str) -> str:
    """``--<prefix>-<field>``, the command-line flag of a scorer setting."""
    return f"--{prefix}-{field.replace('_', '-')}"


# ---------------------------------------------------------------- the scorer


class BaseScorer(ABC):
    """Scores context sentences for each query of a conversation (see the module docstring)."""

    #: The scorer's name on the command line and in submissions.
    name: ClassVar[str] = ""
    #: Its own settings: a frozen dataclass whose fields are built with :func:`setting`.
    Settings: ClassVar[type] = NoSettings
    #: The scorer whose settings (and so ``--<name>-*`` options) this one reads: the peers
    #: read those of the scorer they are the package of (None: its own, under its name).
    settings_of: ClassVar[str | None] = None
    #: The docs' scorer table: what a sentence's score is (Markdown, one line).
    summary: ClassVar[str] = ""
    #: Forward passes per conversation (docs' table), e.g. "1" or "passes + 1".
    passes_per_conversation: ClassVar[str] = "1"
    #: What an edge's evidence is: "sentences" (the parent's best units) or "turn" (the
    #: scorer weighs whole turns: every unit of a turn carries the turn's score).
    evidence: ClassVar[str] = "sentences"
    #: Whether the online Tracer can compute it: its sentence score is a head-weighted
    #: attention mass (:meth:`head_weights`). Otherwise ``offline_only`` says why not.
    online: ClassVar[bool] = False
    offline_only: ClassVar[str] = ""
    #: Whether :meth:`sentence_scores` reads per-head features (costs memory, not passes).
    needs_heads: ClassVar[bool] = False
    #: Whether a segment's score is the sum of its units' scores (attention masses, linear
    #: weights); otherwise the best of them (a top-k mean, a turn-level weight). See
    #: mtcabench.evaluate.attribution._engine.turn_shares.
    additive: ClassVar[bool] = True
    #: Whether :meth:`plan` may leave out sentences of assistant turns too (the texts being
    #: attributed: a query whose own text is left out is not read in that pass).
    drops_assistant: ClassVar[bool] = False

    def __init__(self, settings: Any = None):
        #: This scorer's settings (an instance of ``Settings``).
        self.settings = self.Settings() if settings is None else settings

    @classmethod
    def settings_key(cls) -> str:
        """The name its settings are kept under (options, ``TraceSettings.scorers``)."""
        return cls.settings_of or cls.name

    @classmethod
    def settings_in(cls, settings: TraceSettings) -> Any:
        """This scorer's settings in a run's ``settings`` (its defaults when none given)."""
        return settings.scorer_settings(cls.settings_key(), cls.Settings)

    @classmethod
    def from_settings(cls, settings: TraceSettings, loaded: LoadedModel | None) -> BaseScorer:
        """The scorer a run with ``settings`` on ``loaded`` uses: built from its own settings
        (override to read the model, as AT2 loads its weights for it)."""
        return cls(cls.settings_in(settings))

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

    def head_weights(self, n_layers: int, n_heads: int) -> torch.Tensor:
        """For an ``online`` scorer: ``w[layer, head]`` such that its score of a sentence for a
        query is ``sum w[l, h] * mass_{l,h}(query, sentence)``, the attention mass averaged
        over the query's tokens (what the Tracer keeps)."""
        raise NotImplementedError(f"scorer {self.name!r} declares no online form")

    def parameters(self) -> dict[str, Any]:
        """Settings recorded in the submission header (``scorer_parameters``): its own
        settings, field by field; override to add what else shapes its result."""
        return dataclasses.asdict(self.settings)

    @classmethod
    def doc_row(cls) -> dict[str, str]:
        """Its row of the docs' scorer table (:func:`scorer_table`)."""
        opts = [f"`{option_flag(cls.settings_key(), f.name)}` ({f.default})"
                for f in dataclasses.fields(cls.Settings)]
        return {"scorer": f"`{cls.name}`", "sentence score": cls.summary,
                "options": ", ".join(opts) or "none",
                "forward passes per conversation": cls.passes_per_conversation,
                "evidence": cls.evidence, "online": "yes" if cls.online else "no"}


def scorer_table() -> str:
    """The docs' scorer table (Markdown), one row per registered scorer, from the registry."""
    rows = [cls.doc_row() for cls in SCORERS.load_all().values()]
    head = list(rows[0]) if rows else []
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r[h].replace("|", "\\|") for h in head) + " |" for r in rows]
    return "\n".join(lines)
