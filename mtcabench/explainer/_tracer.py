"""The root's :class:`Tracer`: the evaluator's online tracer whose graphs print as trees.

Its own module, imported on first use (``mtcabench.explainer.Tracer``): its base class
imports torch, which the rest of the explainer (model-free methods, the trees, the pages)
does without.
"""

from __future__ import annotations

from mtcabench.evaluate import DEFAULT_METHOD
from mtcabench.evaluate import Tracer as _OnlineTracer
from mtcabench.explainer._api import ExplainedGraph
from mtcabench.explainer._explain import Explanation
from mtcabench.model import TargetSpan


class Tracer(_OnlineTracer):
    """:class:`mtcabench.evaluate.Tracer` (see there) whose :meth:`explain` returns an
    :class:`ExplainedGraph`: ``print(tracer.explain(...))`` shows the tree."""

    def explain(self, turn: int | None = None,
                span: str | tuple[int, int] | TargetSpan | None = None, *,
                method: str = DEFAULT_METHOD) -> ExplainedGraph:
        graph = super().explain(turn, span, method=method)
        target = self.target(turn, span)
        explanation = Explanation(self.conversation, [target], {method: [graph]},
                                  model=self.loaded.name, scorer=self.scorer.name,
                                  settings=self.settings)
        return ExplainedGraph.of(explanation, 0, method)

    explain.__doc__ = _OnlineTracer.explain.__doc__
