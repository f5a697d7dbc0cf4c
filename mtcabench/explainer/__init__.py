"""Tracing any transcript: where the values and claims of an agent's answer came from.

The application behind ``mtcabench explain`` and ``mtcabench.explain(...)``, on top of the
stages (like :mod:`mtcabench.demo`): it reads a conversation as agents log it
(:mod:`mtcabench.transcripts`), chooses the spans (given text or offsets, the last answer, or
every value the lineage annotator finds in a turn: :func:`mtcabench.lineage.propose_conversation`),
attributes them with the evaluator in one set of forward passes (Tokengeist, flat or any
registered method; any base scorer), and shows the result as a tree, a JSON file and HTML
pages drawn by the renderer of ``mtcabench show`` (:mod:`mtcabench.render`). Online tracing inside an agent loop is
:class:`mtcabench.evaluate.Tracer` (the root's ``mtcabench.Tracer`` is its subclass here
whose graphs print as trees).

It is called ``explainer`` rather than ``explain`` so that the package's root function
``mtcabench.explain`` is never shadowed by a submodule of the same name.
"""

from __future__ import annotations

from typing import Any

from mtcabench.explainer._api import ExplainedGraph, explain
from mtcabench.explainer._explain import Explanation, as_conversation, explain_conversation
from mtcabench.explainer._output import (
    check_output_folder,
    output_paths,
    render_tree,
    render_trees,
    write_explanation,
)
from mtcabench.explainer._phoenix import PhoenixReport, annotate_phoenix, check_phoenix_url
from mtcabench.explainer._targets import resolve_targets, value_targets
from mtcabench.explainer._telemetry import (
    make_spans,
    otlp_json,
    require_otel,
    send_otlp,
    traces_url,
    write_otlp_file,
)



def __getattr__(name: str) -> Any:
    # The online tracer needs torch: imported on first use, so that the model-free methods,
    # the trees and the pages work without the eval extra (and its absence is one line).
    if name == "Tracer":
        from mtcabench.explainer._tracer import Tracer

        globals()[name] = Tracer
        return Tracer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ExplainedGraph",
    "Explanation",
    "PhoenixReport",
    "annotate_phoenix",
    "check_phoenix_url",
    "make_spans",
    "otlp_json",
    "send_otlp",
    "traces_url",
    "write_otlp_file",
    "Tracer",
    "as_conversation",
    "check_output_folder",
    "explain",
    "explain_conversation",
    "output_paths",
    "render_tree",
    "render_trees",
    "require_otel",
    "resolve_targets",
    "value_targets",
    "write_explanation",
]
