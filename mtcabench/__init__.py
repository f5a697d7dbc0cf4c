"""mtcabench: build, review, publish and score MTCABench, the multi-turn context attribution benchmark.

The package is built in layers; each imports only the layers below it (the contracts of
pyproject.toml's ``[tool.importlinter]``, checked in CI by scripts/lint.sh):

- ground: :mod:`~mtcabench.model` (every record), :mod:`~mtcabench.graph` (the rules, edge
  precision/recall/F1), :mod:`~mtcabench.io` (safe JSON Lines), :mod:`~mtcabench.errors`,
  :mod:`~mtcabench.progress`, :mod:`~mtcabench.resources` (package data);
- format and services: :mod:`~mtcabench.benchmark` (a benchmark on disk and on the Hub),
  :mod:`~mtcabench.services` (embedded llama.cpp and Label Studio), ``validate``, ``stats``;
- the stages, each a module or sub-package named after it and independent of the others:
  ``raw``, ``ingest``, ``annotate``, ``review``, ``release``, ``evaluate``, ``scoring``;
- on top: :mod:`~mtcabench.demo` (the main job end to end) and :mod:`~mtcabench.cli`.

This module imports nothing, so that any layer may read ``__version__`` from it.
"""

__version__ = "0.1.0"
