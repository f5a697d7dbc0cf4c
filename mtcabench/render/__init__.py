"""The renderer: a conversation up to a target span, any number of predicted graphs and an
optional gold graph, drawn as SVG, an HTML page, or Mermaid or DOT text.

It knows nothing of benchmarks (an import-linter contract checks it imports nothing from
``mtcabench.benchmark``, ``results`` or ``scoring``): ``mtcabench show`` and ``view`` give it a
benchmark span's gold graph and a submission's edges, ``mtcabench explain`` a traced graph of a
plain transcript with no gold; the optional gold is one value of :class:`Drawing`, so that no
writer branches on where a drawing comes from.

- :mod:`~mtcabench.render._drawing`: the drawing model (:class:`Drawing`, :class:`Graph`,
  :class:`Fact`), each edge's kind, and the palette;
- :mod:`~mtcabench.render._layout`: the picture's geometry (boxes and arcs);
- :mod:`~mtcabench.render._svg`, :mod:`~mtcabench.render._html`,
  :mod:`~mtcabench.render._text`: the writers;
- :mod:`~mtcabench.render._highlight`: evidence ranges quoted and highlighted in the page.
"""

from __future__ import annotations

from collections.abc import Callable

from mtcabench.errors import UsageError
from mtcabench.render._drawing import (
    EDGE_COLOURS,
    NOTHING_PREDICTED,
    ROLE_FILL,
    Drawing,
    Fact,
    Graph,
)
from mtcabench.render._html import to_html
from mtcabench.render._layout import Arc, Box, Picture, layout
from mtcabench.render._svg import to_svg
from mtcabench.render._text import to_dot, to_mermaid

#: Each format's writer; a one-picture format draws the drawing's first graph.
FORMATS: dict[str, Callable[[Drawing], str]] = {
    "html": to_html, "svg": to_svg, "mermaid": to_mermaid, "dot": to_dot}


def draw(drawing: Drawing, fmt: str = "html") -> str:
    """The drawing in format ``fmt`` (html, svg, mermaid or dot)."""
    writer = FORMATS.get(fmt)
    if writer is None:
        raise UsageError(f"cannot draw as {fmt!r}: the formats are {', '.join(FORMATS)}")
    return writer(drawing)


__all__ = [
    "EDGE_COLOURS",
    "FORMATS",
    "NOTHING_PREDICTED",
    "ROLE_FILL",
    "Arc",
    "Box",
    "Drawing",
    "Fact",
    "Graph",
    "Picture",
    "draw",
    "layout",
    "to_dot",
    "to_html",
    "to_mermaid",
    "to_svg",
]
