"""The reference evaluator: Tokengeist, flat and model-free baselines over a real causal LM.

This module is the evaluator's one public door: the command line, the explainer and users
import from here, never from the private modules behind it (an import-linter contract in
pyproject.toml checks it). Behind it, four rooms:

- ``attribution/``: the model, the rendered conversation, attention features and the base
  scorers (:class:`BaseScorer`, :func:`register_scorer`, :func:`scorer_names`, each with its
  settings dataclass: :class:`AblationSettings`, ...), the engine
  that turns them into turn shares (:class:`Attributor`, :func:`load_attributor`);
- ``methods/``: graph construction (:class:`Method`, :func:`register_method`, ``METHODS``:
  tokengeist, flat, recency, first-user, string-match), the search itself (:func:`tokengeist`, :func:`flat`)
  and the attribution of one conversation that ``trace`` and ``explain`` share
  (:func:`attribute_spans`; :func:`trace_conversation` writes it as submission entries);
- ``runners/``: a whole benchmark (:func:`trace_benchmark`, :func:`merge_shards` for
  ``--shard`` runs, :func:`trace_with_ray`, :func:`learn_at2_from_benchmark`);
- ``online/``: :class:`Tracer`, inside an agent loop, keeping the model's key/value cache
  between turns (a head-weighted scorer that declares ``online = True`` runs there).

:class:`TraceSettings` (with :class:`SearchSettings`) holds what shapes a result, and the
defaults are written once, in ``_settings``. Names are imported on first use, so that importing
this package, the settings, the registries' names or the model-free methods never imports
torch.
"""

from __future__ import annotations

import importlib
from typing import Any

from mtcabench.errors import needs_extra

# The torch-free modules, imported now: every built-in method is registered, and the
# settings and registries' names are at hand for the command line's help.
from mtcabench.evaluate._settings import (
    AT2_LEARN,
    DEFAULT_DEVICE,
    DEFAULT_DTYPE,
    DEFAULT_METHOD,
    DEFAULT_SCORER,
    RAY,
    TURN_AGGREGATES,
    SearchSettings,
    SettingsError,
    TraceSettings,
)
from mtcabench.evaluate.attribution._base import (
    SCORERS,
    BaseScorer,
    NoSettings,
    make_scorer,
    register_scorer,
    scorer_names,
    scorer_table,
    setting,
)
from mtcabench.evaluate.attribution._loading import DEFAULT_MODEL
from mtcabench.evaluate.methods._baselines import first_user, recency
from mtcabench.evaluate.methods._methods import (
    METHODS,
    Method,
    Tokengeist,
    get_methods,
    register_method,
    target_graph,
)
from mtcabench.evaluate.methods._tokengeist import (
    TARGET,
    Part,
    flat,
    is_open,
    node_keys,
    query_nodes,
    relay_nodes,
    tokengeist,
)

#: Names imported on first use, by the private module that defines them.
_LAZY = {
    "forward": "attribution._attention", "query_features": "attribution._attention",
    "sink_positions": "attribution._attention", "split_sentences": "attribution._sentences",
    "SINK_PROBE_TOKENS": "attribution._attention",
    "evidence_range": "attribution._engine",
    "DEFAULT_PASS_TOKENS": "online._tracer", "as_message": "online._state",
    "At2Weights": "attribution._at2", "load_weights": "attribution._at2",
    "learn_at2_weights": "attribution._at2",
    "Attributor": "attribution._engine", "Query": "attribution._engine",
    "turn_shares": "attribution._engine", "load_attributor": "attribution._engine",
    "LoadedModel": "attribution._loading", "load_model": "attribution._loading",
    "model_limits": "attribution._loading",
    "RenderedConversation": "attribution._render",
    "render_conversation": "attribution._render",
    "Window": "attribution._window", "fit_window": "attribution._window",
    "beyond_any_window": "attribution._window", "fewest_tokens": "attribution._window",
    "text_chars": "attribution._window",
    "context_reach": "attribution._reach", "default_context_reach": "attribution._reach",
    "Attribution": "methods._conversation", "Unfit": "methods._conversation",
    "attribute_spans": "methods._conversation", "trace_conversation": "methods._conversation",
    "model_shares": "methods._conversation",
    "merge_shards": "runners._merge",
    "trace_with_ray": "runners._ray",
    "TraceReport": "runners._run", "header_parameters": "runners._run",
    "model_parameters": "runners._run",
    "trace_benchmark": "runners._trace",
    "learn_at2_from_benchmark": "runners._learn",
    "OnlineStats": "online._state", "Tracer": "online._tracer",
    "Passes": "attribution._passes", "passes_for": "attribution._passes",
    # The built-in scorers' settings (their modules import torch only when a scorer computes).
    "AttnTraceSettings": "attribution._scorers", "AT2Settings": "attribution._scorers",
    "AblationSettings": "attribution._ablation",
}
_RENAMED = {"learn_at2_weights": "learn_weights"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    with needs_extra("the evaluator"):  # a module that imports torch: one line naming the extra
        value = getattr(importlib.import_module(f"{__name__}.{module}"),
                        _RENAMED.get(name, name))
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "AT2_LEARN", "DEFAULT_DEVICE", "DEFAULT_DTYPE", "DEFAULT_METHOD", "DEFAULT_MODEL",
    "AT2Settings", "AblationSettings", "At2Weights", "AttnTraceSettings", "Attribution",
    "Attributor", "BaseScorer", "DEFAULT_PASS_TOKENS", "DEFAULT_SCORER", "LoadedModel",
    "METHODS", "Method", "NoSettings", "OnlineStats", "Part", "Passes", "Query", "RAY",
    "RenderedConversation", "SCORERS", "SINK_PROBE_TOKENS", "SearchSettings", "SettingsError",
    "TARGET",
    "TURN_AGGREGATES", "Tokengeist", "TraceReport", "TraceSettings", "Tracer", "Unfit",
    "Window", "as_message", "attribute_spans", "beyond_any_window", "context_reach",
    "default_context_reach", "evidence_range",
    "fewest_tokens", "first_user", "fit_window", "flat", "forward",
    "get_methods", "header_parameters", "is_open", "learn_at2_from_benchmark", "learn_at2_weights",
    "load_attributor", "load_model", "load_weights", "make_scorer", "merge_shards",
    "model_limits", "model_parameters", "model_shares", "node_keys", "passes_for",
    "query_features",
    "query_nodes", "recency", "relay_nodes", "register_method", "register_scorer", "render_conversation",
    "scorer_names", "scorer_table", "setting", "sink_positions", "split_sentences",
    "target_graph", "text_chars", "tokengeist", "trace_benchmark", "trace_conversation", "trace_with_ray",
    "turn_shares",
]
