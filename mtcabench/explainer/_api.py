"""The Python API of the root package: :func:`explain` and :class:`Tracer`, whose graphs
print as ``mtcabench explain`` shows them: ``print(mtcabench.explain(...))`` and
``print(tracer.explain(...))`` give the terminal's tree, not a one-line record.

:class:`ExplainedGraph` is a :class:`~mtcabench.model.ProvenanceGraph` (same fields, same
JSON) that also keeps what the tree needs (the conversation, the span, the method); the
root's :class:`~mtcabench.explainer.Tracer`, whose ``explain`` returns one, is in ``_tracer``
(it subclasses the online tracer, which needs torch).
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

from pydantic import PrivateAttr
from rich.console import Console
from rich.tree import Tree

from mtcabench.evaluate import (
    DEFAULT_DEVICE,
    DEFAULT_DTYPE,
    DEFAULT_METHOD,
    DEFAULT_MODEL,
    DEFAULT_SCORER,
    LoadedModel,
    TraceSettings,
)
from mtcabench.explainer._explain import Explanation, Messages, as_conversation, explain_conversation
from mtcabench.explainer._output import render_tree
from mtcabench.explainer._phoenix import PhoenixReport, annotate_phoenix
from mtcabench.model import ExplanationRecord, ProvenanceGraph, TargetSpan
from mtcabench.transcripts import last_answer, target_span


class ExplainedGraph(ProvenanceGraph):
    """A provenance graph that prints as a tree: each turn under the turn that depends on it,
    with the edge's score and its evidence quoted (``str()`` plain, ``rich.print`` in
    colour). Everything else is the :class:`~mtcabench.model.ProvenanceGraph`'s."""

    _explanation: Explanation | None = PrivateAttr(default=None)
    _method: str = PrivateAttr(default=DEFAULT_METHOD)

    @classmethod
    def of(cls, explanation: Explanation, k: int, method: str) -> ExplainedGraph:
        """Target ``k``'s graph by ``method`` of an explanation."""
        graph = explanation.graphs[method][k]
        out = cls(target=graph.target, nodes=graph.nodes, edges=graph.edges)
        # Only what this graph's tree reads: this target, this method.
        out._explanation = Explanation(
            explanation.conversation, [explanation.targets[k]], {method: [graph]},
            explanation.model, explanation.scorer, explanation.settings,
            explanation.forward_passes, explanation.tokens)
        out._method = method
        return out

    def __eq__(self, other: object) -> bool:
        # The graph's fields only: the same graph explained from two logs of one conversation
        # (another conversation id, another format) is the same graph.
        if isinstance(other, ProvenanceGraph):
            return (self.target, self.nodes, self.edges) == (other.target, other.nodes,
                                                             other.edges)
        return NotImplemented

    def record(self) -> ExplanationRecord:
        """The graph as ``explain.json`` holds it (scores rounded to six decimals)."""
        return ExplanationRecord.model_validate(self._made().to_json())

    def to_otlp(self, endpoint: str | None = None, file: str | Path | None = None) -> list:
        """The graph as OpenTelemetry spans (``explain --otlp-endpoint / --otlp-file``): sent
        to ``endpoint`` (OTLP HTTP/protobuf) and/or written to ``file`` (OTLP JSON); returns
        the SDK's spans. Needs the ``otel`` extra."""
        from mtcabench.explainer._telemetry import make_spans, send_otlp, write_otlp_file

        spans = make_spans(self.record(), self._made().conversation)
        if file is not None:
            write_otlp_file(spans, file)
        if endpoint is not None:
            send_otlp(spans, endpoint)
        return spans

    def to_phoenix(self, url: str) -> PhoenixReport:
        """Annotate the agent's spans in the Phoenix at ``url``, one annotation per edge
        (``explain --phoenix``); an API key from ``PHOENIX_API_KEY``."""
        return annotate_phoenix(self.record(), self._made().conversation, url)

    def _made(self) -> Explanation:
        if self._explanation is None:
            raise ValueError("this graph was not made by explain: it has no conversation")
        return self._explanation

    def tree(self) -> Tree:
        """The graph as a rich Tree (what ``mtcabench explain`` prints)."""
        if self._explanation is None:
            raise ValueError("this graph was not made by explain: it has no conversation")
        return render_tree(self._explanation, 0, self._method)

    def __rich__(self) -> Tree:
        return self.tree()

    def __str__(self) -> str:
        if self._explanation is None:
            return super().__str__()
        buffer = io.StringIO()
        width = shutil.get_terminal_size((100, 24)).columns
        Console(file=buffer, width=width, color_system=None, soft_wrap=False,
                highlight=False).print(self.tree())
        return buffer.getvalue().rstrip("\n")


def explain(
    messages: Messages,
    turn: int | None = None,
    span: str | tuple[int, int] | TargetSpan | None = None,
    *,
    model: str | LoadedModel = DEFAULT_MODEL,
    scorer: str = DEFAULT_SCORER,
    method: str = DEFAULT_METHOD,
    settings: TraceSettings = TraceSettings(),
    device: str = DEFAULT_DEVICE,
    dtype: str = DEFAULT_DTYPE,
) -> ExplainedGraph:
    """The provenance graph (edge scores: turn shares) of a span of a conversation; it
    prints as the tree ``mtcabench explain`` shows.

    ``messages``: a log in any format of :mod:`mtcabench.transcripts` (OpenAI chat messages,
    Responses items, an Anthropic request ...), a Conversation, or a log file's path. ``turn``: an assistant turn (default: the last with content);
    ``span``: its text, ``(start, end)`` offsets into the turn's text, or None for the whole
    content. ``model`` is a name or a :class:`~mtcabench.evaluate.LoadedModel` (load it once
    with :func:`~mtcabench.evaluate.load_model` to explain many spans).
    """
    conversation = as_conversation(messages)
    target = target_span(conversation, last_answer(conversation) if turn is None else turn, span)
    result = explain_conversation(conversation, [target], model=model, scorer=scorer,
                                  methods=[method], settings=settings, device=device, dtype=dtype)
    return ExplainedGraph.of(result, 0, method)
