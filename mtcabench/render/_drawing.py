"""What is drawn: a conversation, its target span, any number of predicted graphs and an
optional gold graph, with each edge's kind decided once. The writers (SVG, HTML, text) only
read this model; nothing here knows of benchmarks, submissions or files.

An edge's kind, which gives its colour and dash:

- with gold and a predicted graph: ``both`` (in gold and predicted), ``missed`` (gold only),
  ``extra`` (predicted only);
- with gold and nothing predicted: ``gold``;
- without gold: ``predicted``, or ``structural`` (a tool result's edge to the turn that issued
  its call), so that an explanation of a plain transcript is drawn by the same rules.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from mtcabench.model import Conversation, Role, ScoredSentence, TargetSpan

Pair = tuple[int, int]

BOTH, MISSED, EXTRA, GOLD = "#2e8b57", "#d62728", "#ff8c00", "#333333"
PREDICTED = "#1f77b4"  # an edge of a drawing without gold (an explained transcript)
STRUCTURAL = "#888888"  # there: a tool result's edge to the turn that issued its call
#: Each edge kind's colour; the order is the SVG markers' order.
EDGE_COLOURS = {"both": BOTH, "missed": MISSED, "extra": EXTRA, "gold": GOLD,
                "predicted": PREDICTED, "structural": STRUCTURAL}
#: Each role's box colour.
ROLE_FILL = {Role.SYSTEM: "#eeeeee", Role.USER: "#dbe9f7", Role.ASSISTANT: "#ffffff",
             Role.TOOL: "#fdf3d0"}


class _Edge(Protocol):
    """A predicted edge as the model gives it: a submission's ``PredictedEdge`` or a traced
    graph's ``Edge``."""

    child: int
    parent: int
    score: float | None
    sentences: list[ScoredSentence] | None


@dataclass
class Graph:
    """One predicted graph: its edges, what it is called, and its scores and evidence.

    The edge sets are built once: every writer asks the kind of each edge, and that must cost
    a set lookup, not a pass over the graph (which made drawing quadratic).
    """

    label: str
    #: None: nothing predicted to set against the gold graph (only gold is drawn).
    edges: Sequence[_Edge] | None
    status: str = "predicted"
    #: The edges that are structural (a tool result answers a call); told apart without gold.
    structural: frozenset[Pair] = frozenset()
    #: Figures about this graph, ``(label, value)`` (None: not defined), shown as a table.
    metrics: Sequence[tuple[str, float | None]] = ()
    scores: dict[Pair, float] = field(init=False, default_factory=dict)
    #: An edge's evidence sentences (offsets into the parent's text), best first.
    evidence: dict[Pair, list[ScoredSentence]] = field(init=False, default_factory=dict)
    pairs: frozenset[Pair] = field(init=False)

    def __post_init__(self) -> None:
        for e in self.edges or []:
            pair = (e.child, e.parent)
            if e.score is not None:
                self.scores[pair] = max(e.score, self.scores.get(pair, e.score))
            if e.sentences:
                self.evidence.setdefault(pair, list(e.sentences))
        self.pairs = frozenset((e.child, e.parent) for e in self.edges or [])


@dataclass(frozen=True)
class Fact:
    """One fact about the target for the page's heading: ``name value``, the value in bold
    when ``strong``."""

    name: str
    value: str
    strong: bool = False


#: The graph drawn when a drawing has none: the gold graph alone.
NOTHING_PREDICTED = Graph("no prediction", None, status="gold only")


@dataclass
class Drawing:
    """A conversation up to its target span, with predicted graphs and an optional gold one."""

    title: str
    conversation: Conversation
    target: TargetSpan
    graphs: Sequence[Graph] = ()
    #: The reference graph's edges; None: there is none (predictions only).
    gold: frozenset[Pair] | None = None
    #: One line on the target, put before the picture's caption (e.g. its dependency type).
    note: str = ""
    #: Lines of facts for the page's heading; each graph's label and status end the last.
    facts: Sequence[Sequence[Fact]] = ()

    def __post_init__(self) -> None:
        if self.gold is not None:
            self.gold = frozenset(self.gold)

    @property
    def panels(self) -> Sequence[Graph]:
        """The graphs, one picture each: at least one, so that gold alone is drawn too."""
        return self.graphs or (NOTHING_PREDICTED,)

    @property
    def turns(self):
        return self.conversation.turns[: self.target.turn + 1]

    def gold_pairs(self) -> frozenset[Pair]:
        return self.gold or frozenset()

    def pairs(self, graph: Graph) -> list[Pair]:
        """Every edge of the gold graph and ``graph``, latest child first."""
        return sorted(self.gold_pairs() | graph.pairs, reverse=True)

    def kind(self, pair: Pair, graph: Graph) -> str:
        """The edge's kind in the picture of ``graph`` (see the module's docstring)."""
        if self.gold is None:
            return "structural" if pair in graph.structural else "predicted"
        if graph.edges is None:
            return "gold"
        if pair in self.gold and pair in graph.pairs:
            return "both"
        return "missed" if pair in self.gold else "extra"

    def colour(self, pair: Pair, graph: Graph) -> str:
        return EDGE_COLOURS[self.kind(pair, graph)]

    def nodes(self, graph: Graph) -> list[int]:
        """The turns in either graph and the target's, latest first."""
        nodes = {self.target.turn} | {x for p in self.gold_pairs() | graph.pairs for x in p}
        return sorted(nodes, reverse=True)


def one_line(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = re.sub(r"\s+", " ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "\u2026"

