"""The reference evaluator: Tokengeist, flat and model-free baselines over a real causal LM.

Public surface (the modules behind it are private; each is imported when one of its names is
first used, so that importing this package, the settings or the model-free methods never
imports torch):

- :func:`trace_benchmark` traces a benchmark with one or more methods and writes submissions;
  :func:`trace_conversation` is its unit of work; :func:`merge_shards` joins ``--shard`` runs;
  :func:`trace_with_ray` runs on a Ray cluster (extra ``ray``).
- :class:`TraceSettings` (composed of :class:`SearchSettings`) holds what shapes a result.
- :class:`Method` and :func:`register_method` define methods; ``METHODS`` lists them
  (tokengeist, flat, and the model-free recency and first-user).
- :class:`BaseScorer` and :func:`register_scorer` define base scorers; ``SCORERS`` lists them.
- :func:`load_model` loads a causal LM (default SmolLM2-135M-Instruct from its GGUF).
- :func:`tokengeist` and :func:`flat` build graphs from any turn-share function;
  :func:`recency` and :func:`first_user` from the conversation alone.
- :func:`learn_at2_weights` learns AT2's per-head weights from ablations.
- :class:`Tracer` traces online, inside an agent loop: it keeps the model's key/value cache
  between turns and answers any span without another forward pass
  (:func:`register_online_scorer` lets a head-weighted scorer run online).
"""

from __future__ import annotations

import importlib
from typing import Any

# The model-free modules, imported now so that every built-in method is registered.
from mtcabench.evaluate._baselines import first_user, recency
from mtcabench.evaluate._methods import METHODS, Method, register_method, target_graph
from mtcabench.evaluate._settings import TraceSettings
from mtcabench.evaluate._tokengeist import TARGET, SearchSettings, flat, tokengeist

#: Names imported on first use, by the private module that defines them.
_LAZY = {
    "At2Weights": "_at2", "load_weights": "_at2", "learn_at2_weights": "_at2",
    "Attributor": "_engine", "Query": "_engine", "turn_shares": "_engine",
    "DEFAULT_MODEL": "_loading", "LoadedModel": "_loading", "load_model": "_loading",
    "merge_shards": "_merge",
    "OnlineStats": "_online_state", "Tracer": "_online", "register_online_scorer": "_online_scorers",
    "trace_with_ray": "_ray",
    "RenderedConversation": "_render", "render_conversation": "_render",
    "SCORERS": "_scorers", "BaseScorer": "_scorers", "register_scorer": "_scorers",
    "make_scorer": "_scorers",
    "TraceReport": "_run",
    "trace_conversation": "_conversation",
    "trace_benchmark": "_trace",
}
_RENAMED = {"learn_at2_weights": "learn_weights"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), _RENAMED.get(name, name))
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "DEFAULT_MODEL",
    "METHODS",
    "SCORERS",
    "TARGET",
    "At2Weights",
    "Attributor",
    "BaseScorer",
    "LoadedModel",
    "Method",
    "OnlineStats",
    "Query",
    "RenderedConversation",
    "SearchSettings",
    "TraceReport",
    "TraceSettings",
    "Tracer",
    "first_user",
    "flat",
    "learn_at2_weights",
    "load_model",
    "load_weights",
    "make_scorer",
    "merge_shards",
    "recency",
    "register_method",
    "register_online_scorer",
    "register_scorer",
    "render_conversation",
    "target_graph",
    "tokengeist",
    "trace_benchmark",
    "trace_conversation",
    "trace_with_ray",
    "turn_shares",
]
