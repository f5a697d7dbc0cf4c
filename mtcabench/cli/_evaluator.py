"""The evaluator's options, shared by ``trace``, ``explain`` and ``demo``, each declared once.

Defaults come from the evaluator's settings (``mtcabench.evaluate``: ``_settings`` and
``SearchSettings``, whose modules import no torch) and the help texts list the methods and
base scorers from their registries, so a new scorer or method shows up in every ``--help``
without an edit here. Each function returns the ``typer.Option`` of one option, used as a
parameter's default (as in :mod:`mtcabench.cli.options`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer

from mtcabench.errors import MtcaError
from mtcabench.evaluate import (
    DEFAULT_DEVICE,
    DEFAULT_DTYPE,
    DEFAULT_METHOD,
    DEFAULT_MODEL,
    DEFAULT_SCORER,
    METHODS,
    SearchSettings,
    TraceSettings,
    scorer_names,
)

_SEARCH, _TRACE = SearchSettings(), TraceSettings()
_MODEL_FREE = " and ".join(m for m, cls in METHODS.load_all().items() if not cls.uses_model)
_EVAL_EXTRA = {"torch", "transformers", "gguf", "accelerate"}


@contextlib.contextmanager
def eval_extra() -> Iterator[None]:
    """One clear line, not a traceback, when a model is needed and the eval extra is missing."""
    try:
        yield
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] in _EVAL_EXTRA:
            raise MtcaError(f"the evaluator needs {exc.name}, which is not installed: "
                            "pip install 'mtcabench[eval]'") from None
        raise


def method(help: str = "repeat to compare (e.g. --method tokengeist --method flat).") -> Any:
    """``--method`` (repeatable): the registered methods, listed."""
    return typer.Option([DEFAULT_METHOD], "--method", help=f"{', '.join(METHODS)}; {help} "
                        f"{_MODEL_FREE} are model-free: with only those, no model is loaded.")


def scorer(help: str = "Base scorer of the model-based methods") -> Any:
    """``--scorer``: the registered base scorers, listed."""
    return typer.Option(DEFAULT_SCORER, "--scorer", help=f"{help}: {', '.join(scorer_names())}.")


def model() -> Any:
    return typer.Option(DEFAULT_MODEL, "--model", help="Model: the default SmolLM2 (from its "
                        "GGUF), a .gguf file, a model folder or a Hub id.")


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


def max_tokens(beyond: str) -> Any:
    """``--max-tokens``; ``beyond`` says what happens to a span past the limit."""
    return typer.Option(_TRACE.max_tokens, "--max-tokens", help="Token limit (default: the "
                        f"model's context); {beyond}")


def at2_weights() -> Any:
    return typer.Option(None, "--at2-weights", help="AT2 per-head weights (default: the "
                        "shipped file for the default model).")


def verify_edges() -> Any:
    return typer.Option(_TRACE.verify_edges, "--verify-edges", help="Keep a content edge only "
                        "when leaving its parent turn out lowers the child's log-probability "
                        "(one more forward pass per distinct parent turn).")


def device() -> Any:
    return typer.Option(DEFAULT_DEVICE, "--device", help="auto, cpu, cuda, cuda:1, ...")


def dtype() -> Any:
    return typer.Option(DEFAULT_DTYPE, "--dtype", help="auto (float32 on CPU, bfloat16 on GPU), "
                        "float32, bfloat16, float16.")


def search_settings(top_k: int, threshold: float, d_max: int, alpha: float) -> SearchSettings:
    return SearchSettings(top_k=top_k, threshold=threshold, d_max=d_max, alpha=alpha)


def weights_path(at2_weights: Path | None) -> str | None:
    return str(at2_weights) if at2_weights else None
