"""Model-free baselines as pure graph construction: the floors every attribution score is read
against.

They sit in the format layer, below the stages, so that every place a score is shown can put
its floor beside it without a model: ``trace --method recency|first-user|string-match`` (the
evaluator's methods call these functions), ``score`` (which computes every floor of
:data:`FLOORS` on the scored spans), the studies' tables and the dataset card of ``release
build``. They read only the conversation (its roles, its tool-call links and, for
``string-match``, the values its turns copy), never a token.

Their graphs satisfy every graph rule (:func:`mtcabench.graph.check_graph`): edges point
backwards, a tool result's only edge is the structural one to the turn that issued its call,
user turns are leaves. Content edges get score 1.0 (a rule is certain of its choice),
structural edges none.

- ``recency``: the answer read what came last. The target is linked to the latest tool result
  before its turn, that result to the turn that issued its call (structural), and the call to
  the latest user turn before it (the input that unlocked the call). With no tool result
  before the target, the target is linked to the latest user turn before it. A turn that
  does not exist (no user turn yet) is left out, so the graph may be smaller.
- ``first-user``: "the first user turn after the greeting is the source". The user's opening
  turn greets and states the request; in agent logs the agent's first reply asks for what
  every later call needs (an account or user id), and the user's next turn gives it. So the
  target is linked to the first user turn after the opening one that carries content beyond a
  greeting (:func:`is_greeting`); with no such turn before the target, to the opening user
  turn; with no user turn, no edge.
- ``string-match``: the lineage rules used as a method (:mod:`mtcabench.lineage`'s
  :class:`~mtcabench.lineage.StringMatch`): the values the rules know that stand inside the
  span, traced back through their copies exactly as the lineage annotator traces them; a span
  that copies nothing gets no edge. On value spans it is close to the lineage gold by
  construction; on claims it shows what string matching alone finds, so what a method adds
  over copying shows beside every score.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from mtcabench.lineage import LineageConfig, StringMatch
from mtcabench.model import Conversation, Edge, EdgeKind, ProvenanceGraph, Role, TargetSpan

#: Words a greeting-only user turn consists of ("Hi!", "Hello there.", "Good morning").
GREETING_WORDS = frozenset({
    "hi", "hello", "hey", "hiya", "howdy", "greetings", "yo", "good", "morning", "afternoon",
    "evening", "day", "there", "again", "all", "everyone", "dear",
})
_WORD = re.compile(r"[^\W_]+")


def is_greeting(text: str) -> bool:
    """Whether a user turn carries nothing but a greeting: every word of it (letters and digits,
    case ignored) is one of :data:`GREETING_WORDS`. An empty turn counts as one (no content)."""
    return all(w in GREETING_WORDS for w in _WORD.findall(text.lower()))


def _target_graph(target: int, parents: Iterable[int]) -> ProvenanceGraph:
    parents = sorted(set(parents))
    return ProvenanceGraph(target=target, nodes=sorted({target, *parents}),
                           edges=[Edge(child=target, parent=p, score=1.0) for p in parents])


def _latest(conversation: Conversation, role: Role, before: int) -> int | None:
    return next((t.index for t in reversed(conversation.turns[:before]) if t.role is role), None)


def recency(conversation: Conversation, target: int) -> ProvenanceGraph:
    """The recency chain of a target in turn ``target`` (see the module docstring)."""
    tool = _latest(conversation, Role.TOOL, target)
    if tool is None:
        user = _latest(conversation, Role.USER, target)
        return _target_graph(target, [] if user is None else [user])
    call = conversation.call_turn(tool)  # every tool result answers a call (Conversation checks)
    edges = [Edge(child=target, parent=tool, score=1.0),
             Edge(child=tool, parent=call, kind=EdgeKind.STRUCTURAL)]
    user = _latest(conversation, Role.USER, call)
    if user is not None:
        edges.append(Edge(child=call, parent=user, score=1.0))
    nodes = sorted({target, *(x for e in edges for x in e.pair)})
    return ProvenanceGraph(target=target, nodes=nodes, edges=edges)


def first_user(conversation: Conversation, target: int) -> ProvenanceGraph:
    """The target linked to the first user turn after the greeting (see the module docstring)."""
    users = [t for t in conversation.turns[:target] if t.role is Role.USER]
    if not users:
        return _target_graph(target, [])
    source = next((t for t in users[1:] if not is_greeting(t.text)), users[0])
    return _target_graph(target, [source.index])


def string_match(conversation: Conversation, span: TargetSpan) -> ProvenanceGraph:
    """The string-match graph of a span (see the module docstring). The conversation's values
    are indexed once per conversation object and kept while it lives (a floor scores every
    span of a conversation in a row)."""
    matcher = _MATCHERS.get(id(conversation))
    if matcher is None or matcher[0] is not conversation:
        _MATCHERS.clear()  # one conversation at a time: no growth over a whole benchmark
        matcher = _MATCHERS[id(conversation)] = (conversation, StringMatch(conversation))
    return matcher[1].graph(span)


_MATCHERS: dict[int, tuple[Conversation, StringMatch]] = {}


@dataclass(frozen=True)
class Floor:
    """A model-free baseline: its name (the method name of ``trace``), what it does, its graph."""

    name: str
    description: str
    graph: Callable[[Conversation, TargetSpan], ProvenanceGraph]
    #: What a submission header records of its settings.
    parameters: dict[str, Any] = field(default_factory=dict)


#: The floors, in the order reports show them.
FLOORS: dict[str, Floor] = {
    f.name: f for f in (
        Floor("recency", "model-free: target -> latest tool result -> its call -> latest user "
              "turn before the call", lambda conv, span: recency(conv, span.turn)),
        Floor("first-user", "model-free: the first user turn after the opening (greeting) one "
              "is the source", lambda conv, span: first_user(conv, span.turn),
              {"greeting_words": sorted(GREETING_WORDS)}),
        Floor("string-match", "model-free: the lineage rules as a method, the values inside "
              "the span traced back through their copies (no edge where nothing is copied)",
              string_match, {"rules_version": LineageConfig().signature()}),
    )
}
