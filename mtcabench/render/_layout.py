"""Where things go in the picture of one graph: the turns as boxes top to bottom up to the
target, gold edges as arcs on the left, the graph's edges as arcs on the right. Geometry
only; :mod:`~mtcabench.render._svg` writes it out."""

from __future__ import annotations

from dataclasses import dataclass

from mtcabench.model import Role
from mtcabench.render._drawing import Drawing, Graph, Pair, one_line

WIDTH, ARC, ROW, GAP, TOP = 1100, 190, 46, 8, 70
#: About 7 px per character at 12 px: a box's line is cut to fit inside it.
CHAR_PX = 7


@dataclass(frozen=True)
class Box:
    """One turn: its box's top, and the line of text shown in it."""

    index: int
    role: Role
    top: float
    line: str
    target: bool


@dataclass(frozen=True)
class Arc:
    """One edge as a curve from the child's box to the parent's, bulging ``bend`` outwards
    on its side (``gold`` left, ``pred`` right)."""

    side: str
    pair: Pair
    kind: str
    x0: int
    xc: int
    y_child: float
    y_parent: float
    bend: int
    score: float | None


@dataclass(frozen=True)
class Picture:
    width: int
    height: int
    box_x: int
    box_w: int
    boxes: list[Box]
    arcs: list[Arc]


def layout(drawing: Drawing, graph: Graph) -> Picture:
    """The picture of ``graph`` (with the drawing's gold graph, if it has one)."""
    box_x, box_w = ARC + 10, WIDTH - 2 * ARC - 20
    turns = drawing.turns
    height = TOP + len(turns) * (ROW + GAP) + 20
    y = {t.index: TOP + t.index * (ROW + GAP) + ROW / 2 for t in turns}
    target = drawing.target.turn
    limit = int((box_w - 12) / CHAR_PX)
    boxes = [Box(t.index, t.role, y[t.index] - ROW / 2,
                 f"span: \u201c{one_line(drawing.target.text, limit - 8)}\u201d"
                 if t.index == target else one_line(t.text, limit), t.index == target)
             for t in turns]
    arcs = []
    for side, pairs in (("gold", sorted(drawing.gold_pairs())), ("pred", sorted(graph.pairs))):
        for child, parent in pairs:
            if child not in y or parent not in y:
                continue
            bend = min(ARC - 15, 25 + 14 * (child - parent))
            x0 = box_x if side == "gold" else box_x + box_w
            xc = x0 - bend if side == "gold" else x0 + bend
            arcs.append(Arc(side, (child, parent), drawing.kind((child, parent), graph), x0, xc,
                            y[child], y[parent], bend,
                            graph.scores.get((child, parent)) if side == "pred" else None))
    return Picture(WIDTH, height, box_x, box_w, boxes, arcs)
