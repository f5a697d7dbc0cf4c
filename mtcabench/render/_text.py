"""The text writers: one graph's picture as Mermaid or Graphviz DOT, for pasting into
documents. A node per turn in either graph (the target's text shown for its turn), an edge
per pair, coloured and labelled by its kind."""

from __future__ import annotations

from mtcabench.render._drawing import ROLE_FILL, Drawing, Graph, Pair, one_line

_KIND_LABEL = {"both": "gold+predicted", "missed": "gold only (missed)",
               "extra": "predicted only", "gold": "gold", "predicted": "predicted",
               "structural": "structural"}


def _edge_label(drawing: Drawing, graph: Graph, pair: Pair) -> str:
    label = _KIND_LABEL[drawing.kind(pair, graph)]
    if pair in graph.scores:
        label += f" {graph.scores[pair]:.2f}"
    return label


def _heading(drawing: Drawing, graph: Graph) -> str:
    vs = "gold vs " if drawing.gold is not None else ""
    return f"{drawing.title}: {vs}{graph.label} ({graph.status})"


def _node_text(drawing: Drawing, n: int) -> str:
    t = drawing.conversation.turns[n]
    text = drawing.target.text if n == drawing.target.turn else t.text
    return f"turn {n}, {t.role.value}: {one_line(text, 48)}"


def to_mermaid(drawing: Drawing, graph: int = 0) -> str:
    """A Mermaid flowchart of graph number ``graph`` (with gold, if the drawing has it)."""
    g = drawing.panels[graph]

    def esc(text: str) -> str:
        # Mermaid's entity codes; '#' itself first so that user text cannot form one.
        return (text.replace("#", "#35;").replace('"', "#quot;").replace("|", "#124;")
                .replace("<", "#lt;").replace(">", "#gt;"))

    lines = ["flowchart RL", f"  %% {_heading(drawing, g)}"]
    for n in drawing.nodes(g):
        lines.append(f'  t{n}["{esc(_node_text(drawing, n))}"]')
    styles = []
    for i, pair in enumerate(drawing.pairs(g)):
        arrow = "-.->" if drawing.kind(pair, g) == "missed" else "-->"
        lines.append(f'  t{pair[0]} {arrow}|"{esc(_edge_label(drawing, g, pair))}"| t{pair[1]}')
        styles.append(f"  linkStyle {i} stroke:{drawing.colour(pair, g)},stroke-width:2px")
    lines.append(f"  style t{drawing.target.turn} stroke-width:3px")
    return "\n".join(lines + styles) + "\n"


def to_dot(drawing: Drawing, graph: int = 0) -> str:
    """The same picture as Graphviz DOT."""
    g = drawing.panels[graph]

    def esc(text: str) -> str:
        return text.replace("\\", "\\\\").replace('"', '\\"')

    lines = [f'digraph "{esc(drawing.title)}" {{', "  rankdir=RL;",
             "  node [shape=box, fontname=sans];",
             f'  label="{esc(_heading(drawing, g))}";']
    for n in drawing.nodes(g):
        t = drawing.conversation.turns[n]
        pen = ", penwidth=3" if n == drawing.target.turn else ""
        lines.append(f'  t{n} [label="{esc(_node_text(drawing, n))}", '
                     f'style=filled, fillcolor="{ROLE_FILL[t.role]}"{pen}];')
    for pair in drawing.pairs(g):
        style = ", style=dashed" if drawing.kind(pair, g) == "missed" else ""
        lines.append(f'  t{pair[0]} -> t{pair[1]} [color="{drawing.colour(pair, g)}", '
                     f'label="{esc(_edge_label(drawing, g, pair))}"{style}];')
    lines.append("}")
    return "\n".join(lines) + "\n"
