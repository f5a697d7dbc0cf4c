"""The model-free baselines recency, first-user and string-match as methods of ``trace``.

Their graphs are built by :mod:`mtcabench.baselines` (the format layer), which ``score`` and
the dataset card also use to show the same floors beside every score; these classes only
register them under their names. Neither reads a model, so a run that asks only for these
loads none.
"""

from __future__ import annotations

from mtcabench.baselines import (
    FLOORS,
    GREETING_WORDS,
    first_user,
    is_greeting,
    recency,
    string_match,
)
from mtcabench.evaluate.methods._methods import Method, register_method

__all__ = [
    "GREETING_WORDS", "FirstUser", "Recency", "StringMatchFloor", "first_user", "is_greeting",
    "recency",
]


@register_method
class Recency(Method):
    """Model-free: target -> latest tool result -> its call -> latest user turn before it."""

    name = "recency"
    uses_model = False

    def graph(self, conversation, span, shares, search):
        return recency(conversation, span.turn)

    def parameters(self, settings):
        return dict(FLOORS[self.name].parameters)


@register_method
class FirstUser(Method):
    """Model-free: the first user turn after the opening (greeting) one is the source."""

    name = "first-user"
    uses_model = False

    def graph(self, conversation, span, shares, search):
        return first_user(conversation, span.turn)

    def parameters(self, settings):
        return dict(FLOORS[self.name].parameters)


@register_method
class StringMatchFloor(Method):
    """Model-free: the lineage rules as a method, the values inside the span traced back."""

    name = "string-match"
    uses_model = False

    def graph(self, conversation, span, shares, search):
        return string_match(conversation, span)

    def parameters(self, settings):
        return dict(FLOORS[self.name].parameters)
