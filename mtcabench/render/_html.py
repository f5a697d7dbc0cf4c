"""The HTML writer: one page with the facts, each graph's figures, its picture and its edge
table (with each edge's best evidence), and every turn up to the target in full, the target
span and the evidence that carries weight highlighted.

Every text from the conversation or the caller is escaped: a transcript's text is data.
"""

from __future__ import annotations

from html import escape as e

from mtcabench.render._drawing import Drawing, Fact, Graph
from mtcabench.render._highlight import best_quote, evidence_marks, highlight
from mtcabench.render._svg import to_svg


def _fact(fact: Fact) -> str:
    value = f"<b>{e(fact.value)}</b>" if fact.strong else e(fact.value)
    return f"{e(fact.name)} {value}"


def _facts(drawing: Drawing) -> str:
    """The caller's lines of facts, each graph's label and status ending the last line."""
    lines = [[_fact(f) for f in line] for line in drawing.facts] or [[]]
    lines[-1] += [f"{e(g.label)}: <b>{e(g.status)}</b>" for g in drawing.panels]
    if drawing.gold is None:
        lines[-1].append("no gold graph")
    return "<p>" + ";\n".join("; ".join(line) for line in lines) + "</p>"


def _metrics(drawing: Drawing) -> str:
    """The graphs' figures: one value column (one per graph where there are several)."""
    graphs = [g for g in drawing.panels if g.metrics]
    if not graphs:
        return ""
    labels = list(dict.fromkeys(label for g in graphs for label, _ in g.metrics))
    values = [dict(g.metrics) for g in graphs]

    def cell(v: float | None) -> str:
        return f"<td>{'n/a' if v is None else f'{v:.3f}'}</td>"

    head = ("<th>value</th>" if len(graphs) == 1
            else "".join(f"<th>{e(g.label)}</th>" for g in graphs))
    rows = "".join(f"<tr><td>{e(label)}</td>" + "".join(cell(v.get(label)) for v in values)
                   + "</tr>" for label in labels)
    return f"<table><tr><th>metric (this span)</th>{head}</tr>{rows}</table>"


def _edges(drawing: Drawing, graph: Graph) -> str:
    """The edge table of one graph: with gold, in which graph each edge is and its kind;
    without, only whether it is content or structural (the gold and predicted columns would
    say "n/a" and "yes" on every row)."""
    gold = drawing.gold_pairs()
    with_gold = drawing.gold is not None
    rows = "".join(
        f'<tr style="color:{drawing.colour(p, graph)}" class="{drawing.kind(p, graph)}">'
        f"<td>{p[0]} \u2192 {p[1]}</td>"
        + (f"<td>{'yes' if p in gold else 'no'}</td>"
           f"<td>{'yes' if p in graph.pairs else 'no'}</td>" if with_gold else "")
        + f"<td>{'' if p not in graph.scores else f'{graph.scores[p]:.4g}'}</td>"
        + (f"<td>{drawing.kind(p, graph)}</td>" if with_gold else
           f"<td>{'structural: answers its call' if p in graph.structural else 'content'}</td>")
        + f'<td class="quote">{e(best_quote(graph.evidence, drawing.conversation, p))}</td></tr>'
        for p in drawing.pairs(graph))
    head = ("<th>gold</th><th>predicted</th><th>score</th><th>kind</th>" if with_gold
            else "<th>score</th><th>kind</th>")
    return (f"<table><tr><th>edge (child \u2192 parent)</th>{head}"
            f"<th>best evidence in the parent</th></tr>\n{rows}</table>")


def _turns(drawing: Drawing) -> str:
    """Every turn up to the target in full: the target span marked, and in the other turns
    the first graph's evidence that carries weight."""
    marks = evidence_marks(drawing.panels[0].evidence, drawing.conversation)
    target = drawing.target
    out = []
    for t in drawing.turns:
        text = e(t.text)
        if t.index in marks:
            text = highlight(t.text, marks[t.index])
        if t.index == target.turn:
            text = (e(t.text[: target.start]) + "<mark>" + e(t.text[target.start : target.end])
                    + "</mark>" + e(t.text[target.end :]))
        out.append(f'<div class="turn {t.role.value}"><b>#{t.index} {t.role.value}</b>'
                   f"<pre>{text}</pre></div>")
    return "".join(out)


def to_html(drawing: Drawing) -> str:
    """The drawing as one page: facts, figures, a picture and an edge table per graph, and
    the conversation up to the target."""
    panels = drawing.panels
    several = len(panels) > 1
    pictures = "\n".join(to_svg(drawing, k) for k in range(len(panels)))
    edges = "\n".join((f"<h3>{e(g.label)}</h3>\n" if several else "") + _edges(drawing, g)
                      for g in panels)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{e(drawing.title)}</title>
<style>body{{font-family:sans-serif;margin:1.5em}} pre{{white-space:pre-wrap;margin:.3em 0}}
table{{border-collapse:collapse}} td,th{{border:1px solid #ccc;padding:2px 8px}}
.turn{{border:1px solid #ccc;border-radius:4px;padding:4px 8px;margin:4px 0}}
.user{{background:#dbe9f7}} .tool{{background:#fdf3d0}} .system{{background:#eee}}
mark{{background:#ffe066}} mark.evidence{{background:#b7f0c8;border-bottom:2px solid #2e8b57}}
td.quote{{max-width:40em;color:#333}}</style></head><body>
<h1>{e(drawing.title)}</h1>
{_facts(drawing)}
<p>target span: <mark>{e(drawing.target.text)}</mark></p>
{_metrics(drawing)}
<h2>Graphs</h2>
{pictures}
<h2>Edges</h2>
{edges}
<h2>Conversation up to the target</h2>
{_turns(drawing)}
</body></html>
"""
