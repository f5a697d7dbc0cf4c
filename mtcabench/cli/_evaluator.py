"""The evaluator's options, shared by ``trace``, ``explain`` and ``demo``, each declared once.

Defaults come from the evaluator's settings (``mtcabench.evaluate``: ``_settings`` and
``SearchSettings``, whose modules import no torch) and the help texts list the methods and
base scorers from their registries, so a new scorer or method shows up in every ``--help``
without an edit here. Each function returns the ``typer.Option`` of one option, used as a
parameter's default (as in :mod:`mtcabench.cli.options`).

The base scorers' own options are generated: :func:`with_scorer_options` gives a command one
``--<scorer>-<field>`` option per field of every registered scorer's ``Settings`` dataclass
(their defaults and help from the dataclass, under "Scorer options" in ``--help``) and hands
the command the settings built from them, so a scorer with options is one module plus its
registration line, and ``trace``, ``explain`` and ``demo`` take its options alike.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from mtcabench.errors import InputError
from mtcabench.evaluate import (
    DEFAULT_DEVICE,
    DEFAULT_DTYPE,
    DEFAULT_METHOD,
    DEFAULT_MODEL,
    DEFAULT_SCORER,
    METHODS,
    SCORERS,
    SearchSettings,
    TraceSettings,
    scorer_names,
)
from mtcabench.files import input_file

_SEARCH, _TRACE = SearchSettings(), TraceSettings()
_MODEL_FREE = " and ".join(m for m, cls in METHODS.load_all().items() if not cls.uses_model)


def method(help: str = "repeat to compare (e.g. --method tokengeist --method flat).") -> Any:
    """``--method`` (repeatable): the registered methods, listed."""
    return typer.Option([DEFAULT_METHOD], "--method", help=f"{', '.join(METHODS)}; {help} "
                        f"{_MODEL_FREE} are model-free: with only those, no model is loaded.")


def scorer(help: str = "Base scorer of the model-based methods") -> Any:
    """``--scorer``: the registered base scorers, listed (again when the command line is
    built: see :class:`with_scorer_options`)."""
    option = typer.Option(DEFAULT_SCORER, "--scorer", help=f"{help}: {', '.join(scorer_names())}.")
    option.scorer_help = help
    return option


def model() -> Any:
    return typer.Option(DEFAULT_MODEL, "--model", help="Model: the default SmolLM2 (from its "
                        "GGUF), a packaged model (qwen2.5-coder-0.5b, qwen2.5-coder-1.5b: "
                        "scripts/setup_models.sh), a .gguf file, a model folder or a Hub id.")


def top_k() -> Any:
    return typer.Option(_SEARCH.top_k, "--top-k", help="Turns kept per node (highest shares).")


def threshold() -> Any:
    return typer.Option(_SEARCH.threshold, "--threshold", help="Least turn share (scores are "
                        "normalised to sum to 1 over the preceding turns) to keep.")


def d_max() -> Any:
    return typer.Option(_SEARCH.d_max, "--d-max", help="Tokengeist: most content edges on a "
                        "path from the target.")


def alpha() -> Any:
    return typer.Option(_SEARCH.alpha, "--alpha", help="Relative pruning: keep an edge scoring "
                        "at least alpha times the best edge out of the same node.")


def match_values() -> Any:
    return typer.Option(_SEARCH.match_values, "--match-values/--no-match-values",
                        help="Where a queried value (the span's text, a call's argument) is "
                        "found verbatim in earlier turns, choose its parents among those turns.")


def open_system() -> Any:
    return typer.Option(_SEARCH.open_system, "--open-system", metavar="SHARE",
                        help="For a claim (a target span no earlier turn holds the text of), "
                        "keep the system turn (the policy) as a parent when its share is at "
                        "least SHARE, past --top-k and --alpha; 0 turns it off (measured in "
                        "docs/evaluate.md, Claims).")


def named_values() -> Any:
    return typer.Option(_SEARCH.named_values, "--named-values/--no-named-values",
                        help="For a claim, the values it names (words holding a digit: an "
                        "amount, a date, an id) decide among the tool results: those holding "
                        "none are left out when one holding one is a candidate (measured in "
                        "docs/evaluate.md, Claims).")


def value_origin() -> Any:
    return typer.Option(_SEARCH.value_origin, "--value-origin/--no-value-origin",
                        help="For a claim, a call's argument value is credited to the turn it "
                        "came from: an assistant turn that restated it is left out of its "
                        "parents when a user, tool or system turn holding it is a candidate "
                        "(measured in docs/evaluate.md, Claims).")


def max_tokens(beyond: str) -> Any:
    """``--max-tokens``; ``beyond`` says what happens to a span past the limit."""
    return typer.Option(_TRACE.max_tokens, "--max-tokens", help="Token limit (default: the "
                        f"model's context); {beyond}")


def window_room() -> Any:
    return typer.Option(_TRACE.window_room, "--window-room", min=0.0, max=0.99,
                        metavar="SHARE", help="Room a context window leaves after the turn "
                        "it is fitted for, as a share of the token limit: later turns that "
                        "still fit share it and its forward passes (0: a window per turn; "
                        "docs/evaluate.md, Long conversations).")


def seed() -> Any:
    return typer.Option(_TRACE.seed, "--seed", help="Seed of the scorers' random passes (the "
                        "context subsampling of AttnTrace and ablation), per conversation.")


def verify_edges() -> Any:
    return typer.Option(_TRACE.verify_edges, "--verify-edges", help="Keep a content edge only "
                        "when leaving its parent turn out lowers the child's log-probability "
                        "(one more forward pass per distinct parent turn).")


def device() -> Any:
    return typer.Option(DEFAULT_DEVICE, "--device", help="auto, cpu, cuda, cuda:1, ...")


def dtype() -> Any:
    return typer.Option(DEFAULT_DTYPE, "--dtype", help="auto (float32 on CPU, bfloat16 on GPU), "
                        "float32, bfloat16, float16.")


def search_settings(top_k: int, threshold: float, d_max: int, alpha: float,
                    match_values: bool = _SEARCH.match_values,
                    open_system: float | None = _SEARCH.open_system,
                    named_values: bool = _SEARCH.named_values,
                    value_origin: bool = _SEARCH.value_origin) -> SearchSettings:
    # --open-system 0 is the command line's "off" (None in Python)
    return SearchSettings(top_k=top_k, threshold=threshold, d_max=d_max, alpha=alpha,
                          match_values=match_values, open_system=open_system or None,
                          named_values=named_values, value_origin=value_origin)


#: Where ``--help`` lists the generated options.
SCORER_PANEL = "Scorer options"


@dataclasses.dataclass(frozen=True)
class ScorerOption:
    """One generated option: ``--<key>-<field>`` of the settings kept under ``key``."""

    key: str
    settings: type
    field: dataclasses.Field
    param: str  # the command's parameter name
    annotation: Any

    @property
    def metavar(self) -> str | None:
        return "PATH" if self.field.metadata.get("path") else None

    @property
    def flag(self) -> str:
        return f"--{self.key}-{self.field.name.replace('_', '-')}"


def scorer_options() -> list[ScorerOption]:
    """The options of every registered scorer's settings (a scorer that reads another's
    settings, as a peer package, shares that one's options)."""
    out, seen = [], set()
    for cls in SCORERS.load_all().values():
        key = cls.settings_key()
        if key in seen:
            continue
        seen.add(key)
        hints = typing.get_type_hints(cls.Settings)
        for f in dataclasses.fields(cls.Settings):
            # A file is read as text, not as a Path: typer makes '' the folder "." (refused only
            # once the model had loaded); the settings refuse an empty path themselves.
            ann = hints[f.name]
            param = f"{key}_{f.name}".replace("-", "_")
            out.append(ScorerOption(key, cls.Settings, f, param, ann))
    return out


def scorer_settings(values: dict[str, Any], options: list[ScorerOption]) -> dict[str, Any]:
    """The settings of every scorer from its options' values (checked as each is built:
    a value out of range is one line before any model loads)."""
    by_key: dict[str, dict[str, Any]] = {}
    classes = {}
    for o in options:
        v = values[o.param]
        by_key.setdefault(o.key, {})[o.field.name] = str(v) if isinstance(v, Path) else v
        classes[o.key] = o.settings
    built = {key: classes[key](**fields) for key, fields in by_key.items()}
    for o in options:  # a file the run reads is there before any model loads
        v = values[o.param]
        if o.field.metadata.get("path") and v:
            try:
                input_file(v, "a file")
            except InputError as exc:
                raise InputError(f"{o.flag}: {exc.message}") from None
    return built


class with_scorer_options:  # noqa: N801 - used as a decorator, like a function
    """``command`` with one option per scorer setting (:func:`scorer_options`); ``command``
    takes a ``scorer_settings`` keyword (settings key -> that scorer's settings), built from
    them. The options are read from the registry each time the command line is built (not
    when this module is imported), so a scorer registered later has its options too."""

    def __init__(self, command: Callable[..., Any]):
        # Not __annotations__: read from the registry (the property below).
        functools.update_wrapper(self, command, assigned=("__module__", "__name__",
                                 "__qualname__", "__doc__"))
        self.command = command

    @property
    def __signature__(self) -> inspect.Signature:  # read by typer (inspect.signature)
        sig = inspect.signature(self.command)
        own = [p for p in sig.parameters.values() if p.name != "scorer_settings"]
        for i, p in enumerate(own):  # --scorer lists the scorers registered now
            if hasattr(p.default, "scorer_help"):
                fresh = copy.copy(p.default)
                fresh.help = f"{p.default.scorer_help}: {', '.join(scorer_names())}."
                own[i] = p.replace(default=fresh)
        options = scorer_options()
        clash = [o.flag for o in options if o.param in {p.name for p in own}]
        if clash:
            raise ValueError(f"scorer options {clash} clash with {self.command.__name__}'s")
        extra = [inspect.Parameter(o.param, inspect.Parameter.KEYWORD_ONLY,
                                   annotation=o.annotation,
                                   default=typer.Option(o.field.default, o.flag,
                                                        help=o.field.metadata.get("help", ""),
                                                        rich_help_panel=SCORER_PANEL,
                                                        metavar=o.metavar))
                 for o in options]
        return sig.replace(parameters=[
            *[p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own], *extra])

    @property
    def __annotations__(self) -> dict[str, Any]:  # read by typer (typing.get_type_hints)
        own = {k: v for k, v in self.command.__annotations__.items() if k != "scorer_settings"}
        return {**own, **{o.param: o.annotation for o in scorer_options()}}

    def __call__(self, **kwargs: Any) -> Any:
        options = scorer_options()
        values = {o.param: kwargs.pop(o.param) for o in options}
        return self.command(**kwargs, scorer_settings=scorer_settings(values, options))
