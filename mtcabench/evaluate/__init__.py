"""The reference evaluator: Tokengeist and flat attribution over a real causal LM.

Public surface (the modules behind it are private):

- :func:`trace_benchmark` traces a benchmark with one or more methods and writes submissions;
  :func:`trace_conversation` is its unit of work; :func:`merge_shards` joins ``--shard`` runs;
  :func:`trace_with_ray` runs on a Ray cluster (extra ``ray``).
- :func:`load_model` loads a causal LM (default SmolLM2-135M-Instruct from its GGUF).
- :class:`BaseScorer` and :func:`register_scorer` define base scorers; ``SCORERS`` lists them.
- :func:`tokengeist` and :func:`flat` build graphs from any turn-share function.
- :func:`learn_at2_weights` learns AT2's per-head weights from ablations.
"""

from mtcabench.evaluate._at2 import At2Weights, load_weights
from mtcabench.evaluate._at2 import learn_weights as learn_at2_weights
from mtcabench.evaluate._engine import Attributor, Query, turn_shares
from mtcabench.evaluate._loading import DEFAULT_MODEL, LoadedModel, load_model
from mtcabench.evaluate._merge import merge_shards
from mtcabench.evaluate._ray import trace_with_ray
from mtcabench.evaluate._render import RenderedConversation, render_conversation
from mtcabench.evaluate._scorers import SCORERS, BaseScorer, register_scorer
from mtcabench.evaluate._tokengeist import METHODS, TARGET, SearchSettings, flat, tokengeist
from mtcabench.evaluate._trace import (
    TraceReport,
    TraceSettings,
    make_scorer,
    trace_benchmark,
    trace_conversation,
)

__all__ = [
    "DEFAULT_MODEL",
    "METHODS",
    "SCORERS",
    "TARGET",
    "At2Weights",
    "Attributor",
    "BaseScorer",
    "LoadedModel",
    "Query",
    "RenderedConversation",
    "SearchSettings",
    "TraceReport",
    "TraceSettings",
    "flat",
    "learn_at2_weights",
    "load_model",
    "load_weights",
    "make_scorer",
    "merge_shards",
    "register_scorer",
    "render_conversation",
    "tokengeist",
    "trace_benchmark",
    "trace_conversation",
    "trace_with_ray",
    "turn_shares",
]
