"""The SVG writer: one picture per graph, from its layout (:mod:`~mtcabench.render._layout`).

Every text from the conversation or the caller is escaped: a transcript's text is data.
"""

from __future__ import annotations

from html import escape as e

from mtcabench.render._drawing import (
    BOTH,
    EDGE_COLOURS,
    EXTRA,
    GOLD,
    MISSED,
    PREDICTED,
    ROLE_FILL,
    STRUCTURAL,
    Drawing,
    Graph,
)
from mtcabench.render._layout import ROW, layout

_DASH = {"missed": ' stroke-dasharray="5,4"', "structural": ' stroke-dasharray="2,3"'}


def _legend(drawing: Drawing, graph: Graph) -> str:
    if drawing.gold is None:
        return (f'<text x="10" y="58"><tspan fill="{STRUCTURAL}">\u25a0 structural (a tool '
                f'result answers the call of that turn)</tspan>  '
                f'<tspan fill="{PREDICTED}">\u25a0 predicted edge (score: '
                'the parent turn\'s share)</tspan></text>')
    if graph.edges is None:
        return f'<text x="10" y="58"><tspan fill="{GOLD}">\u25a0 gold edge</tspan></text>'
    return (f'<text x="10" y="58"><tspan fill="{BOTH}">\u25a0 in both</tspan>  '
            f'<tspan fill="{MISSED}">\u25a0 gold, missed</tspan>  '
            f'<tspan fill="{EXTRA}">\u25a0 predicted, not gold</tspan></text>')


def _caption(drawing: Drawing, graph: Graph) -> str:
    if drawing.gold is None:
        return f"{e(graph.label)}: edges on the right"
    note = f"{e(drawing.note)}; " if drawing.note else ""
    return (f"{note}gold edges on the left, {e(graph.label)} ({e(graph.status)}) "
            "on the right")


def to_svg(drawing: Drawing, graph: int = 0) -> str:
    """The picture of the drawing's graph number ``graph`` (the gold graph alone where the
    drawing has none): the conversation up to the target, gold edges left, predicted right."""
    g = drawing.panels[graph]
    pic = layout(drawing, g)
    out = [
        (f'<svg xmlns="http://www.w3.org/2000/svg" width="{pic.width}" height="{pic.height}" '
         f'viewBox="0 0 {pic.width} {pic.height}" font-family="sans-serif" font-size="12">'),
        "<defs>" + "".join(
            f'<marker id="arrow-{name}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
            f'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
            f'fill="{colour}"/></marker>'
            for name, colour in EDGE_COLOURS.items()) + "</defs>",
        f'<text x="10" y="20" font-size="14" font-weight="bold">{e(drawing.title)}</text>',
        f'<text x="10" y="40">{_caption(drawing, g)}</text>',
        _legend(drawing, g),
    ]
    for box in pic.boxes:
        stroke = 'stroke="#000" stroke-width="2.5"' if box.target else 'stroke="#999"'
        out.append(f'<rect x="{pic.box_x}" y="{box.top}" width="{pic.box_w}" height="{ROW}" '
                   f'rx="4" fill="{ROLE_FILL[box.role]}" {stroke}/>')
        out.append(f'<text x="{pic.box_x + 6}" y="{box.top + 16}" font-weight="bold">'
                   f'#{box.index} {box.role.value}{" (target)" if box.target else ""}</text>')
        out.append(f'<text x="{pic.box_x + 6}" y="{box.top + 34}">{e(box.line)}</text>')
    for arc in pic.arcs:
        child, parent = arc.pair
        title = f"{arc.side} edge {child}->{parent} ({arc.kind})"
        if arc.score is not None:
            title += f" score {arc.score:.3g}"
        colour = EDGE_COLOURS[arc.kind]
        out.append(
            f'<path d="M{arc.x0},{arc.y_child} C{arc.xc},{arc.y_child} {arc.xc},{arc.y_parent} '
            f'{arc.x0},{arc.y_parent}" fill="none" stroke="{colour}" stroke-width="2"'
            f'{_DASH.get(arc.kind, "")} marker-end="url(#arrow-{arc.kind})" '
            f'class="edge {arc.side} {arc.kind}" data-edge="{child}-&gt;{parent}">'
            f'<title>{e(title)}</title></path>')
        if arc.score is not None:
            # Beside the arc's outermost point (3/4 of the bend for this curve), on a white
            # halo: never on the line itself, legible over any arc it crosses.
            out.append(f'<text x="{arc.x0 + 0.75 * arc.bend + 4:.1f}" '
                       f'y="{(arc.y_child + arc.y_parent) / 2 + 4}" fill="{colour}" '
                       f'font-size="10" stroke="#fff" stroke-width="3" '
                       f'paint-order="stroke" class="score">{arc.score:.2f}</text>')
    out.append("</svg>")
    return "\n".join(out)
