"""The settings of a trace run and the evaluator's defaults, each written once.

This module imports no torch: the CLI reads every default from here (the search's
:class:`SearchSettings` among them), so that ``mtcabench --help`` and
model-free methods stay light. A bad setting raises :class:`SettingsError`, which is both a
``ValueError`` (for Python callers) and an :class:`~mtcabench.errors.InputError` (one line and
exit code 3 on the command line).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from mtcabench.errors import InputError
from mtcabench.io import seed_problem


class SettingsError(InputError, ValueError):
    """A setting out of its range: a ``ValueError`` for Python callers, exit code 3 for the CLI."""


@dataclass(frozen=True)
class SearchSettings:
    """Parameters of both methods (documented defaults; see docs/evaluate.md)."""

    top_k: int = 3
    threshold: float = 0.05
    d_max: int = 6
    alpha: float = 0.5

    def __post_init__(self):
        if self.top_k < 1:
            raise SettingsError(f"top_k must be at least 1, got {self.top_k}")
        if not 0 <= self.threshold <= 1:
            raise SettingsError(f"threshold must be in [0, 1], got {self.threshold}")
        if self.d_max < 1:
            raise SettingsError(f"d_max must be at least 1, got {self.d_max}")
        if not 0 <= self.alpha <= 1:
            raise SettingsError(f"alpha must be in [0, 1], got {self.alpha}")


#: ``--method`` when none is given.
DEFAULT_METHOD = "tokengeist"
#: ``--scorer`` when none is given.
DEFAULT_SCORER = "avg-attention"
#: ``--device`` and ``--dtype`` when none is given (see :func:`~mtcabench.evaluate.load_model`).
DEFAULT_DEVICE = "auto"
DEFAULT_DTYPE = "auto"
#: The most forward passes per conversation that ``ablation`` (and AttnTrace's subsamples)
#: may plan: each is a pass over the whole conversation and its mask is kept until scoring,
#: so this bounds time and memory from one option (docs/evaluate.md, "Bounds").
MAX_ABLATION_PASSES = 4096
#: How sentence scores become turn scores.
TURN_AGGREGATES = ("max", "sum")


@dataclass(frozen=True)
class TraceSettings:
    """Everything that shapes a trace's result besides model, scorer and method (see docs).

    ``search`` holds the parameters of the graph search shared by Tokengeist and flat; the
    other fields shape how the base scorer's attention becomes turn shares, and
    ``evidence_sentences`` how many of the parent's best sentences each predicted content
    edge carries as its evidence (0: none; they come from the same passes, at no cost).
    """

    search: SearchSettings = field(default_factory=SearchSettings)
    turn_aggregate: str = "max"
    max_tokens: int | None = None
    seed: int = 0
    attntrace_top_tokens: int = 5
    attntrace_subsamples: int = 30
    attntrace_keep: float = 0.4
    at2_weights: str | None = None
    ablation_passes: int = 32
    ablation_keep: float = 0.5
    ablation_alpha: float = 0.01
    #: Keep a content edge only when leaving its parent turn out lowers the child's
    #: log-probability (one extra pass per distinct parent turn of a conversation).
    verify_edges: bool = False
    evidence_sentences: int = 3

    def __post_init__(self):
        if not isinstance(self.search, SearchSettings):
            raise SettingsError(f"search must be SearchSettings, got {type(self.search).__name__}")
        if self.turn_aggregate not in TURN_AGGREGATES:
            raise SettingsError(f"turn aggregate must be max or sum, got {self.turn_aggregate!r}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise SettingsError(f"max_tokens must be at least 1, got {self.max_tokens}")
        if not 0 <= self.evidence_sentences <= 16:
            raise SettingsError("evidence_sentences must be 0 to 16 (a submission's limit), "
                                f"got {self.evidence_sentences}")
        # The option checks of the evaluator, in one place (the CLI's --seed and --ablation-*
        # reach here): a value out of range is one line, before any model loads. (AttnTrace's
        # keep and top tokens are checked by its scorer.)
        if (why := seed_problem(self.seed)) is not None:
            raise SettingsError(why)
        if not 2 <= self.ablation_passes <= MAX_ABLATION_PASSES:
            raise SettingsError(f"ablation passes must be 2 to {MAX_ABLATION_PASSES} (forward "
                                f"passes per conversation), got {self.ablation_passes}")
        if not 0 < self.ablation_keep < 1:  # NaN fails every comparison: refused too
            raise SettingsError(f"ablation keep must be between 0 and 1, got {self.ablation_keep}")
        if not (math.isfinite(self.ablation_alpha) and self.ablation_alpha >= 0):
            raise SettingsError("ablation alpha (LASSO's L1 weight) must be a finite number "
                                f"at least 0, got {self.ablation_alpha}")
        if self.attntrace_subsamples > MAX_ABLATION_PASSES:  # the lower bounds: AttnTrace's
            raise SettingsError(f"AttnTrace subsamples must be at most {MAX_ABLATION_PASSES} "
                                f"(forward passes per conversation), got "
                                f"{self.attntrace_subsamples}")


@dataclass(frozen=True)
class RayOptions:
    """Defaults of the Ray runner (``--ray-*``)."""

    workers: int = 1
    gpus_per_worker: float = 0
    cpus_per_worker: float = 1


@dataclass(frozen=True)
class At2LearnSettings:
    """Defaults of ``at2-learn`` (AT2's recipe; see mtcabench.evaluate.attribution._at2)."""

    masks: int = 32
    keep: float = 0.5
    iterations: int = 1000
    heldout: float = 0.2
    seed: int = 0


RAY = RayOptions()
AT2_LEARN = At2LearnSettings()
