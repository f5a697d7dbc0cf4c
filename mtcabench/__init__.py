"""mtcabench: build, review, publish and score MTCABench, the multi-turn context attribution benchmark.

The package is built in layers; each imports only the layers below it (the contracts of
pyproject.toml's ``[tool.importlinter]``, checked in CI by scripts/lint.sh):

- ground: :mod:`~mtcabench.model` (every record), :mod:`~mtcabench.graph` (the rules, edge
  precision/recall/F1), :mod:`~mtcabench.io` (safe JSON Lines), :mod:`~mtcabench.errors`,
  :mod:`~mtcabench.progress`, :mod:`~mtcabench.resources` (package data), ``_version``;
- format and services: :mod:`~mtcabench.benchmark` (a benchmark on disk and on the Hub),
  :mod:`~mtcabench.transcripts` (conversations as agents log them), :mod:`~mtcabench.services`
  (embedded llama.cpp and Label Studio), ``validate``, ``stats``;
- the stages, each a module or sub-package named after it and independent of the others:
  ``raw``, ``ingest``, ``annotate``, ``review``, ``release``, ``evaluate``, ``scoring``;
- on top: :mod:`~mtcabench.demo` (the main job end to end), :mod:`~mtcabench.explainer`
  (trace any transcript) and :mod:`~mtcabench.cli`.

The public functions here are imported on first use, so that ``import mtcabench`` stays light
(no torch): :func:`explain` (the provenance graph of a span of any conversation) and
:class:`Tracer` (online tracing inside an agent loop). Stages read the version from
:mod:`mtcabench._version`, never from here: this module names the top layer.
"""

from __future__ import annotations

from typing import Any

from mtcabench._version import __version__


def __getattr__(name: str) -> Any:
    # Imported on first use (and then kept), so that ``import mtcabench`` imports no stage.
    if name == "explain":
        from mtcabench.explainer import explain as value
    elif name == "Tracer":
        from mtcabench.explainer import Tracer as value
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = ["Tracer", "__version__", "explain"]
