"""The settings of a trace run and the evaluator's defaults, each written once.

This module imports no torch: the CLI reads every default from here (the search's
:class:`SearchSettings` among them), so that ``mtcabench --help`` and
model-free methods stay light. A bad setting raises :class:`SettingsError`, which is both a
``ValueError`` (for Python callers) and an :class:`~mtcabench.errors.InputError` (one line and
exit code 3 on the command line).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, is_dataclass, replace
from typing import Any

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
    #: Choose a queried value's parents among the earlier turns that hold it (the target
    #: span's text, a call's argument; docs/evaluate.md, "Values decide among candidates").
    match_values: bool = True
    #: For a query whose text no earlier turn holds (a claim, a sentence the agent composed,
    #: an intermediate turn asked about as a whole: the model decides alone), the relative
    #: threshold and the top-k used instead of ``alpha`` and ``top_k``; None: the same as every
    #: query's. Such a query often has several sources (a record, the rule, the request) whose
    #: shares differ by more than ``alpha`` allows (docs/evaluate.md, "Claims").
    open_alpha: float | None = None
    open_top_k: int | None = None
    #: For a target whose text no earlier turn holds (a claim), keep the system turn (the
    #: policy) as a parent when its share is at least this, beside the top-k and past the
    #: relative threshold; None: off. A rule is a long text the conclusion drawn from it
    #: attends to thinly, and the record it was applied to outranks it. 0.05: chosen on the
    #: claims' dev split, values kept (docs/evaluate.md, "Claims").
    open_system: float | None = 0.05
    #: An assistant turn entered because a later text drew on it is asked about its sentences
    #: that restate that text (the most content words shared, at least two), not its whole
    #: text; as a whole where none does. Its sentences must be among the pass's queries
    #: (``relay_nodes``). Off by default (docs/evaluate.md, "Claims").
    relay_sentences: bool = False
    #: For a target whose text no earlier turn holds (a claim), the values it names (words
    #: holding a digit: an amount, a date, an id) decide among the tool results: when a tool
    #: result holding one of them is a candidate, the tool results holding none are left out
    #: (user and system turns stay). On: chosen with ``open_system`` on the claims' dev split
    #: (docs/evaluate.md, "Claims").
    named_values: bool = True
    #: In the search for a target whose text no earlier turn holds (a claim), a call's argument
    #: value is credited to the turn it came from: among the turns holding it, an assistant
    #: turn that restated it is left out when a user, tool or system turn holding it is a
    #: candidate. On: chosen on the claims' dev split, values kept (docs/evaluate.md, "Claims").
    value_origin: bool = True

    def __post_init__(self):
        if self.top_k < 1:
            raise SettingsError(f"top_k must be at least 1, got {self.top_k}")
        if not 0 <= self.threshold <= 1:
            raise SettingsError(f"threshold must be in [0, 1], got {self.threshold}")
        if self.d_max < 1:
            raise SettingsError(f"d_max must be at least 1, got {self.d_max}")
        if not 0 <= self.alpha <= 1:
            raise SettingsError(f"alpha must be in [0, 1], got {self.alpha}")
        if self.open_alpha is not None and not 0 <= self.open_alpha <= 1:
            raise SettingsError(f"open_alpha must be in [0, 1], got {self.open_alpha}")
        if self.open_top_k is not None and self.open_top_k < 1:
            raise SettingsError(f"open_top_k must be at least 1, got {self.open_top_k}")
        if self.open_system is not None and not 0 < self.open_system <= 1:
            raise SettingsError(f"open_system must be in (0, 1], got {self.open_system}")

    def for_query(self, open_query: bool) -> SearchSettings:
        """The settings a query is searched with: its open ones when no turn holds its text."""
        if not open_query or (self.open_alpha is None and self.open_top_k is None):
            return self
        return replace(self, top_k=self.top_k if self.open_top_k is None else self.open_top_k,
                       alpha=self.alpha if self.open_alpha is None else self.open_alpha)


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
#: The default ``TraceSettings.window_room``.
WINDOW_ROOM = 0.0


@dataclass(frozen=True)
class TraceSettings:
    """Everything that shapes a trace's result besides model, scorer and method (see docs).

    ``search`` holds the parameters of the graph search shared by Tokengeist and flat; the
    other fields shape how the base scorer's attention becomes turn shares, and
    ``evidence_sentences`` how many of the parent's best sentences each predicted content
    edge carries as its evidence (0: none; they come from the same passes, at no cost).
    ``scorers`` holds base scorers' own settings by scorer name, each an instance of that
    scorer's ``Settings`` dataclass (``{"ablation": AblationSettings(passes=8)}``); a scorer
    not named runs with its defaults. ``seed`` seeds every scorer's passes (the context
    subsampling of AttnTrace and ablation), per conversation.
    """

    search: SearchSettings = field(default_factory=SearchSettings)
    turn_aggregate: str = "max"
    max_tokens: int | None = None
    seed: int = 0
    scorers: Mapping[str, Any] = field(default_factory=dict)
    #: Keep a content edge only when leaving its parent turn out lowers the child's
    #: log-probability (one extra pass per distinct parent turn of a conversation).
    verify_edges: bool = False
    evidence_sentences: int = 3
    #: Room a context window leaves after the turn it is fitted for, as a share of the token
    #: limit: the later turns that end within the limit in it share it and its passes (0: a
    #: window per turn; docs/evaluate.md, *Long conversations*).
    window_room: float = WINDOW_ROOM

    def __post_init__(self):
        if not isinstance(self.search, SearchSettings):
            raise SettingsError(f"search must be SearchSettings, got {type(self.search).__name__}")
        if self.turn_aggregate not in TURN_AGGREGATES:
            raise SettingsError(f"turn aggregate must be max or sum, got {self.turn_aggregate!r}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise SettingsError(f"max_tokens must be at least 1, got {self.max_tokens}")
        if not (isinstance(self.window_room, (int, float)) and 0 <= self.window_room < 1):
            raise SettingsError("window_room must be a share of the token limit, at least 0 "
                                f"and below 1, got {self.window_room!r}")
        if not 0 <= self.evidence_sentences <= 16:
            raise SettingsError("evidence_sentences must be 0 to 16 (a submission's limit), "
                                f"got {self.evidence_sentences}")
        # --seed reaches here: a value out of range is one line, before any model loads. (Each
        # scorer's own settings check themselves when built, as AblationSettings.)
        if (why := seed_problem(self.seed)) is not None:
            raise SettingsError(why)
        if not isinstance(self.scorers, Mapping):
            raise SettingsError(f"scorers must map scorer names to their settings, got "
                                f"{type(self.scorers).__name__}")
        for name, value in self.scorers.items():
            if not is_dataclass(value) or isinstance(value, type):
                raise SettingsError(f"scorers[{name!r}] must be the scorer's Settings "
                                    f"dataclass, got {type(value).__name__}")

    def window_room_tokens(self, limit: int) -> int:
        """``window_room`` in tokens of a ``limit``-token limit: what a window is fitted with
        and what a study stores (rounded here only)."""
        return round(self.window_room * limit)

    def scorer_settings(self, name: str, cls: type) -> Any:
        """The settings of scorer ``name`` (an instance of ``cls``): given, or its defaults."""
        value = self.scorers.get(name)
        if value is None:
            return cls()
        if not isinstance(value, cls):
            raise SettingsError(f"scorers[{name!r}] must be {cls.__name__}, got "
                                f"{type(value).__name__}")
        return value

    def input_paths(self) -> list[str]:
        """The files the scorers' settings name (AT2's weights): a run never overwrites them."""
        return [getattr(value, f.name) for value in self.scorers.values()
                for f in fields(value) if f.metadata.get("path") and getattr(value, f.name)]


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
