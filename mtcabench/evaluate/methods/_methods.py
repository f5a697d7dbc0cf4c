"""Attribution methods by name (``--method``): what builds a span's predicted graph.

A method is one class registered under its name. It builds a provenance graph for a target
span from the conversation and, when it reads a model (``uses_model = True``), from the turn
shares of a base scorer (:data:`~mtcabench.evaluate.methods._tokengeist.SharesFn`: the target's under
``TARGET``, and those of any turn or part of one it listed in :meth:`Method.query_turns`). The run
computes every model-based method's shares of a conversation in one set of forward passes,
and never loads a model when only model-free methods are asked. Adding a method::

    @register_method
    class LatestUser(Method):
        name = "latest-user"
        uses_model = False

        def graph(self, conversation, span, shares, search):
            user = max((t.index for t in conversation.turns[: span.turn]
                        if t.role is Role.USER), default=None)
            return target_graph(span.turn, [] if user is None else [user])

Tokengeist and flat are here; the model-free baselines are in mtcabench.evaluate.methods._baselines.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterable
from typing import TYPE_CHECKING, Any, ClassVar

from mtcabench.errors import InputError
from mtcabench.evaluate.methods._tokengeist import (
    SearchSettings,
    SharesFn,
    flat,
    query_nodes,
    tokengeist,
)
from mtcabench.model import Conversation, Edge, ProvenanceGraph, TargetSpan
from mtcabench.registry import Registry

if TYPE_CHECKING:
    from mtcabench.evaluate._settings import TraceSettings

#: The built-in methods: name -> the module that registers it (imported on first lookup).
BUILT_IN = {
    "tokengeist": "mtcabench.evaluate.methods._methods",
    "flat": "mtcabench.evaluate.methods._methods",
    "recency": "mtcabench.evaluate.methods._baselines",
    "first-user": "mtcabench.evaluate.methods._baselines",
}
#: Methods by name (``--method``), in the order they are listed.
METHODS: Registry[type[Method]] = Registry("method", lazy=BUILT_IN)


def register_method(cls: type[Method]) -> type[Method]:
    """Class decorator: make a method available under its ``name`` (the registry's one rule:
    the same class again is harmless, another class under a taken name is an error)."""
    return METHODS.register(cls)


def get_methods(names: Iterable[str]) -> dict[str, Method]:
    """The methods called ``names``, in order; an unknown or repeated name is an InputError."""
    out: dict[str, Method] = {}
    for name in names:
        if name not in METHODS:
            raise InputError(f"unknown method {name!r}; choose one of "
                             f"{', '.join(METHODS.names())}")
        if name in out:
            raise InputError(f"method {name} given twice")
        out[name] = METHODS.get(name)()
    return out


class Method(ABC):
    """Builds the predicted provenance graph of a target span (see the module docstring)."""

    #: The method's name on the command line and in submissions.
    name: ClassVar[str] = ""
    #: Whether the method reads turn shares from a base scorer on a model.
    uses_model: ClassVar[bool] = True

    def query_turns(self, conversation: Conversation, last_turn: int) -> list[Hashable]:
        """What before ``last_turn`` the method may ask shares for, besides the target spans
        (always scored): whole turns by index, parts of turns as
        :class:`~mtcabench.evaluate.methods._tokengeist.Part`."""
        return []

    @abstractmethod
    def graph(self, conversation: Conversation, span: TargetSpan, shares: SharesFn | None,
              search: SearchSettings) -> ProvenanceGraph:
        """The graph of ``span``; ``shares`` is None for a model-free method. Content edges
        carry a score, structural edges none (the submission format's convention)."""

    def parameters(self, settings: TraceSettings) -> dict[str, Any]:
        """The method's own settings, as recorded in the submission header."""
        return {}


def target_graph(target: int, parents: Iterable[int], score: float = 1.0) -> ProvenanceGraph:
    """The target linked directly to ``parents`` (content edges with ``score``)."""
    parents = sorted(set(parents))
    return ProvenanceGraph(target=target, nodes=sorted({target, *parents}),
                           edges=[Edge(child=target, parent=p, score=score) for p in parents])


@register_method
class Tokengeist(Method):
    """Tokengeist's backward search (mtcabench.evaluate.methods._tokengeist; docs/evaluate.md)."""

    name = "tokengeist"

    def query_turns(self, conversation: Conversation, last_turn: int) -> list[Hashable]:
        # Every assistant turn before the last target may become an intermediate node, asked
        # about as a whole or by its parts (its text, each call's arguments).
        return query_nodes(conversation, last_turn)

    def graph(self, conversation, span, shares, search):
        return tokengeist(conversation, span.turn, shares, search, span.text)

    def parameters(self, settings):
        s = settings.search
        return {"top_k": s.top_k, "threshold": s.threshold, "d_max": s.d_max, "alpha": s.alpha,
                "match_values": s.match_values, **_open(s)}


@register_method
class Flat(Method):
    """The flat baseline: the base scorer once, the target linked to the selected turns."""

    name = "flat"

    def graph(self, conversation, span, shares, search):
        return flat(span.turn, shares, search, conversation, span.text)

    def parameters(self, settings):
        s = settings.search
        return {"top_k": s.top_k, "threshold": s.threshold, "alpha": s.alpha,
                "match_values": s.match_values, **_open(s)}


def _open(s) -> dict:
    """The open-query settings, recorded only when set (headers before them stay as they were)."""
    return {k: v for k, v in (("open_alpha", s.open_alpha), ("open_top_k", s.open_top_k),
                              ("open_system", s.open_system),
                              ("relay_sentences", s.relay_sentences or None),
                              ("named_values", s.named_values or None),
                              ("value_origin", s.value_origin or None)) if v is not None}
