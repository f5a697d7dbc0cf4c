"""mtcabench: build, review, publish and score MTCABench, the multi-turn context attribution benchmark.

The data model lives in :mod:`mtcabench.model`, the graph rules in :mod:`mtcabench.graph`,
and each pipeline stage in a module (or sub-package) of its own named after the stage.
"""

__version__ = "0.1.0"
