"""Drawing one span: its conversation with the gold graph and a submission's graph overlaid.

Turns are drawn top to bottom up to the target turn; gold edges arc on the left,
predicted edges on the right. An edge in both is green on both sides, a gold edge the
submission missed is red and dashed, a predicted edge that is not gold is orange. The same
picture is given as SVG, as an HTML page (SVG, per-span metrics, full turn texts), and as
Mermaid or DOT text for pasting into documents.
"""

from __future__ import annotations

import difflib
import html
import re
from dataclasses import dataclass, field
from pathlib import Path

from mtcabench.errors import InputError
from mtcabench.graph import path_hops
from mtcabench.io import (
    all_or_nothing,
    atomic_write,
    check_outputs_are_not_inputs,
    derived_name,
)
from mtcabench.model import (
    BenchmarkSpan,
    Conversation,
    PredictedEdge,
    Role,
    ScoredSentence,
    parse_span_id,
)
from mtcabench.results.metrics import METRICS, score_span
from mtcabench.results.submission import read_submission
from mtcabench.scoring._highlight import best_quote, evidence_marks, highlight
from mtcabench.scoring.scorer import as_benchmark, benchmark_inputs

Pair = tuple[int, int]

BOTH, MISSED, EXTRA, GOLD = "#2e8b57", "#d62728", "#ff8c00", "#333333"
PREDICTED = "#1f77b4"  # an edge of a view without gold (mtcabench explain)
STRUCTURAL = "#888888"  # there: a tool result's edge to the turn that issued its call
_COLOURS = {"both": BOTH, "missed": MISSED, "extra": EXTRA, "gold": GOLD, "predicted": PREDICTED,
            "structural": STRUCTURAL}
_ROLE_FILL = {Role.SYSTEM: "#eeeeee", Role.USER: "#dbe9f7", Role.ASSISTANT: "#ffffff",
              Role.TOOL: "#fdf3d0"}


@dataclass
class SpanView:
    """What is drawn for one span: gold and predicted edges, classified.

    The edge sets are built once: every drawing asks the kind of each edge, and that must
    cost a set lookup, not a pass over the graph (which made drawing quadratic).
    """

    span: BenchmarkSpan
    conversation: Conversation
    predicted: list[PredictedEdge] | None  # None: no submission given
    label: str = "prediction"
    status: str = "predicted"  # predicted, missing or skipped
    #: False where the span has no gold graph (``mtcabench explain``): predictions only.
    with_gold: bool = True
    scores: dict[Pair, float] = field(default_factory=dict)
    #: A predicted edge's evidence sentences (offsets into the parent's text), best first.
    evidence: dict[Pair, list[ScoredSentence]] = field(default_factory=dict)
    #: Without gold: the predicted edges that are structural (a tool result answers a call).
    structural: frozenset[Pair] = frozenset()
    gold: frozenset[Pair] = field(init=False)
    pred: frozenset[Pair] = field(init=False)

    def __post_init__(self) -> None:
        for e in self.predicted or []:
            if e.score is not None:
                self.scores[(e.child, e.parent)] = max(e.score, self.scores.get((e.child, e.parent),
                                                                               e.score))
            if e.sentences:
                self.evidence.setdefault((e.child, e.parent), list(e.sentences))
        self.gold = frozenset(e.pair for e in self.span.graph.edges)
        self.pred = frozenset((e.child, e.parent) for e in self.predicted or [])

    def kind(self, pair: Pair) -> str:
        """'both', 'missed' (gold only), 'extra' (predicted only); 'gold' without a submission;
        'predicted' or 'structural' without gold."""
        if not self.with_gold:
            return "structural" if pair in self.structural else "predicted"
        if self.predicted is None:
            return "gold"
        if pair in self.gold and pair in self.pred:
            return "both"
        return "missed" if pair in self.gold else "extra"

    def metrics(self) -> dict[str, float | None]:
        return score_span(self.span, self.conversation, self.predicted or ()).values()

    @property
    def turns(self):
        return self.conversation.turns[: self.span.graph.target + 1]


def _colour(view: SpanView, pair: Pair) -> str:
    return _COLOURS[view.kind(pair)]


def _one_line(text: str, limit: int) -> str:
    flat = re.sub(r"\s+", " ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "\u2026"


# --------------------------------------------------------------------------- SVG


def _legend(view: SpanView) -> str:
    if not view.with_gold:
        return (f'<text x="10" y="58"><tspan fill="{STRUCTURAL}">\u25a0 structural (a tool '
                f'result answers the call of that turn)</tspan>  '
                f'<tspan fill="{PREDICTED}">\u25a0 predicted edge (score: '
                'the parent turn\'s share)</tspan></text>')
    if view.predicted is None:
        return f'<text x="10" y="58"><tspan fill="{GOLD}">\u25a0 gold edge</tspan></text>'
    return (f'<text x="10" y="58"><tspan fill="{BOTH}">\u25a0 in both</tspan>  '
            f'<tspan fill="{MISSED}">\u25a0 gold, missed</tspan>  '
            f'<tspan fill="{EXTRA}">\u25a0 predicted, not gold</tspan></text>')


def render_svg(view: SpanView) -> str:
    """The conversation up to the target, gold edges left, predicted edges right."""
    width, arc, row, gap, top = 1100, 190, 46, 8, 70
    box_x, box_w = arc + 10, width - 2 * arc - 20
    turns = view.turns
    height = top + len(turns) * (row + gap) + 20
    y = {t.index: top + t.index * (row + gap) + row / 2 for t in turns}
    e = html.escape
    out = [
        (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
         f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">'),
        "<defs>" + "".join(
            f'<marker id="arrow-{name}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
            f'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
            f'fill="{colour}"/></marker>'
            for name, colour in _COLOURS.items()) + "</defs>",
        f'<text x="10" y="20" font-size="14" font-weight="bold">{e(view.span.id)}</text>',
        (f'<text x="10" y="40">{e(view.span.dependency_type.value)}; gold edges on the left, '
         f'{e(view.label)} ({e(view.status)}) on the right</text>' if view.with_gold else
         f'<text x="10" y="40">{e(view.label)}: edges on the right</text>'),
        _legend(view),
    ]
    target = view.span.graph.target
    for t in turns:
        y0 = y[t.index] - row / 2
        stroke = 'stroke="#000" stroke-width="2.5"' if t.index == target else 'stroke="#999"'
        out.append(f'<rect x="{box_x}" y="{y0}" width="{box_w}" height="{row}" rx="4" '
                   f'fill="{_ROLE_FILL[t.role]}" {stroke}/>')
        out.append(f'<text x="{box_x + 6}" y="{y0 + 16}" font-weight="bold">#{t.index} '
                   f'{t.role.value}{" (target)" if t.index == target else ""}</text>')
        # About 7 px per character at 12 px: keep the line inside its box.
        limit = int((box_w - 12) / 7)
        line = (f'span: \u201c{_one_line(view.span.span.text, limit - 8)}\u201d'
                if t.index == target else _one_line(t.text, limit))
        out.append(f'<text x="{box_x + 6}" y="{y0 + 34}">{e(line)}</text>')
    for side, pairs in (("gold", sorted(view.gold)), ("pred", sorted(view.pred))):
        for child, parent in pairs:
            if child not in y or parent not in y:
                continue
            kind = view.kind((child, parent))
            colour = _colour(view, (child, parent))
            bend = min(arc - 15, 25 + 14 * (child - parent))
            x0 = box_x if side == "gold" else box_x + box_w
            xc = x0 - bend if side == "gold" else x0 + bend
            dash = {"missed": ' stroke-dasharray="5,4"',
                    "structural": ' stroke-dasharray="2,3"'}.get(kind, "")
            title = f"{side} edge {child}->{parent} ({kind})"
            if side == "pred" and (child, parent) in view.scores:
                title += f" score {view.scores[(child, parent)]:.3g}"
            out.append(
                f'<path d="M{x0},{y[child]} C{xc},{y[child]} {xc},{y[parent]} {x0},{y[parent]}" '
                f'fill="none" stroke="{colour}" stroke-width="2"{dash} '
                f'marker-end="url(#arrow-{kind})" class="edge {side} {kind}" '
                f'data-edge="{child}-&gt;{parent}"><title>{e(title)}</title></path>')
            if side == "pred" and (child, parent) in view.scores:
                # Beside the arc's outermost point (3/4 of the bend for this curve), on a
                # white halo: never on the line itself, legible over any arc it crosses.
                out.append(f'<text x="{x0 + 0.75 * bend + 4:.1f}" '
                           f'y="{(y[child] + y[parent]) / 2 + 4}" fill="{colour}" '
                           f'font-size="10" stroke="#fff" stroke-width="3" '
                           f'paint-order="stroke" class="score">'
                           f'{view.scores[(child, parent)]:.2f}</text>')
    out.append("</svg>")
    return "\n".join(out)


# --------------------------------------------------------------------------- HTML


def render_html(view: SpanView) -> str:
    """A page: the span's facts and metrics, the SVG, the edges, and every turn in full."""
    e = html.escape
    span = view.span
    metrics = view.metrics() if view.predicted is not None and view.with_gold else {}
    rows = "".join(
        f"<tr><td>{e(METRICS[k].label)}</td><td>{'n/a' if v is None else f'{v:.3f}'}</td></tr>"
        for k, v in metrics.items())
    # Without gold (explain) the gold and predicted columns would say "n/a" and "yes" on every
    # row: only the edge's kind (content, or structural: a tool result answers a call) stays.
    edges = "".join(
        f'<tr style="color:{_colour(view, p)}" class="{view.kind(p)}"><td>{p[0]} \u2192 {p[1]}</td>'
        + (f"<td>{'yes' if p in view.gold else 'no'}</td>"
           f"<td>{'yes' if p in view.pred else 'no'}</td>" if view.with_gold else "")
        + f"<td>{'' if p not in view.scores else f'{view.scores[p]:.4g}'}</td>"
        + (f"<td>{view.kind(p)}</td>" if view.with_gold else
           f"<td>{'structural: answers its call' if p in view.structural else 'content'}</td>")
        + f'<td class="quote">{e(best_quote(view.evidence, view.conversation, p))}</td></tr>'
        for p in sorted(view.gold | view.pred, reverse=True))
    head = ("<th>gold</th><th>predicted</th><th>score</th><th>kind</th>" if view.with_gold
            else "<th>score</th><th>kind</th>")
    marks = evidence_marks(view.evidence, view.conversation)
    turns = []
    for t in view.turns:
        text = e(t.text)
        if t.index in marks:
            text = highlight(t.text, marks[t.index])
        if t.index == span.graph.target:
            s = span.span
            text = (e(t.text[: s.start]) + "<mark>" + e(t.text[s.start : s.end]) + "</mark>"
                    + e(t.text[s.end :]))
        turns.append(f'<div class="turn {t.role.value}"><b>#{t.index} {t.role.value}</b>'
                     f"<pre>{text}</pre></div>")
    facts = (f"""<p>dependency type <b>{e(span.dependency_type.value)}</b>; source {e(span.source)}/{e(span.domain)};
gold depth {span.depth} ({_hops(span)}); gold sources {span.sources}; {e(view.label)}: <b>{e(view.status)}</b></p>"""
             if view.with_gold else f"<p>{e(view.label)}: <b>{e(view.status)}</b>; no gold graph</p>")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{e(span.id)}</title>
<style>body{{font-family:sans-serif;margin:1.5em}} pre{{white-space:pre-wrap;margin:.3em 0}}
table{{border-collapse:collapse}} td,th{{border:1px solid #ccc;padding:2px 8px}}
.turn{{border:1px solid #ccc;border-radius:4px;padding:4px 8px;margin:4px 0}}
.user{{background:#dbe9f7}} .tool{{background:#fdf3d0}} .system{{background:#eee}}
mark{{background:#ffe066}} mark.evidence{{background:#b7f0c8;border-bottom:2px solid #2e8b57}}
td.quote{{max-width:40em;color:#333}}</style></head><body>
<h1>{e(span.id)}</h1>
{facts}
<p>target span: <mark>{e(span.span.text)}</mark></p>
{f'<table><tr><th>metric (this span)</th><th>value</th></tr>{rows}</table>' if rows else ''}
<h2>Graphs</h2>
{render_svg(view)}
<h2>Edges</h2>
<table><tr><th>edge (child \u2192 parent)</th>{head}<th>best evidence in the parent</th></tr>
{edges}</table>
<h2>Conversation up to the target</h2>
{''.join(turns)}
</body></html>
"""


# --------------------------------------------------------------------------- text


def _edge_label(view: SpanView, pair: Pair) -> str:
    kind = view.kind(pair)
    label = {"both": "gold+predicted", "missed": "gold only (missed)",
             "extra": "predicted only", "gold": "gold", "predicted": "predicted"}[kind]
    if pair in view.scores:
        label += f" {view.scores[pair]:.2f}"
    return label


def _nodes(view: SpanView) -> list[int]:
    nodes = {view.span.graph.target} | {x for p in view.gold | view.pred for x in p}
    return sorted(nodes, reverse=True)


def render_mermaid(view: SpanView) -> str:
    """A Mermaid flowchart: one node per turn in either graph, edges coloured by kind."""

    def esc(text: str) -> str:
        # Mermaid's entity codes; '#' itself first so that user text cannot form one.
        return (text.replace("#", "#35;").replace('"', "#quot;").replace("|", "#124;")
                .replace("<", "#lt;").replace(">", "#gt;"))

    lines = ["flowchart RL", f"  %% {view.span.id}: gold vs {view.label} ({view.status})"]
    for n in _nodes(view):
        t = view.conversation.turns[n]
        text = view.span.span.text if n == view.span.graph.target else t.text
        lines.append(f'  t{n}["turn {n}, {t.role.value}: {esc(_one_line(text, 48))}"]')
    styles = []
    for i, pair in enumerate(sorted(view.gold | view.pred, reverse=True)):
        kind = view.kind(pair)
        arrow = "-.->" if kind == "missed" else "-->"
        lines.append(f'  t{pair[0]} {arrow}|"{esc(_edge_label(view, pair))}"| t{pair[1]}')
        styles.append(f"  linkStyle {i} stroke:{_colour(view, pair)},stroke-width:2px")
    lines.append(f"  style t{view.span.graph.target} stroke-width:3px")
    return "\n".join(lines + styles) + "\n"


def render_dot(view: SpanView) -> str:
    """The same picture as Graphviz DOT."""

    def esc(text: str) -> str:
        return text.replace("\\", "\\\\").replace('"', '\\"')

    lines = [f'digraph "{esc(view.span.id)}" {{', "  rankdir=RL;",
             "  node [shape=box, fontname=sans];",
             f'  label="{esc(view.span.id)}: gold vs {esc(view.label)} ({view.status})";']
    for n in _nodes(view):
        t = view.conversation.turns[n]
        text = view.span.span.text if n == view.span.graph.target else t.text
        pen = ", penwidth=3" if n == view.span.graph.target else ""
        lines.append(f'  t{n} [label="turn {n}, {t.role.value}: {esc(_one_line(text, 48))}", '
                     f'style=filled, fillcolor="{_ROLE_FILL[t.role]}"{pen}];')
    for pair in sorted(view.gold | view.pred, reverse=True):
        style = ", style=dashed" if view.kind(pair) == "missed" else ""
        lines.append(f'  t{pair[0]} -> t{pair[1]} [color="{_colour(view, pair)}", '
                     f'label="{esc(_edge_label(view, pair))}"{style}];')
    lines.append("}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- loading, files


def span_views(
    span_ids: list[str],
    benchmark,
    submission: str | Path | None = None,
) -> list[SpanView]:
    """The views of some spans of a benchmark, with a submission's edges if one is given.

    The submission is checked against the benchmark as for scoring, so what is drawn is
    exactly what is scored.
    """
    bench = as_benchmark(benchmark)
    index = bench.span_index()
    sub = None
    if submission is not None:
        sub = read_submission(submission, bench, keep=span_ids)
    views = []
    for span_id in span_ids:
        span = index.get(span_id)
        if span is None:
            raise InputError(f"span id {span_id!r} is not in the benchmark {bench.origin}"
                             f"{_hint(span_id, index)}")
        conv = bench.conversation_of(span)
        if sub is None:
            views.append(SpanView(span, conv, None, label="no submission", status="gold only"))
            continue
        entry = sub.entries.get(span_id)
        status = sub.status(span_id)
        views.append(SpanView(span, conv, list(entry.edges) if entry and not entry.skipped else [],
                              label=sub.label, status=status))
    return views


def _hint(span_id: str, index: dict[str, BenchmarkSpan]) -> str:
    """Spans to suggest: those of the id's conversation (parsed from the right), else the
    closest ids."""
    try:
        conv_id = parse_span_id(span_id)[0]
    except ValueError:
        conv_id = None
    same = sorted(s for s, span in index.items() if span.conversation_id == conv_id)
    close = same[:5] or difflib.get_close_matches(span_id, list(index), n=3, cutoff=0.6)
    if close:
        more = f" (and {len(same) - 5} more)" if len(same) > 5 else ""
        return f"; did you mean {', '.join(close)}{more}?"
    return f"; the benchmark has {len(index)} spans (see its spans file)"


def safe_name(span_id: str) -> str:
    """A file name for a span id (ids hold '/', '#' and ':'), by the one name policy
    (:func:`mtcabench.files.derived_name`): never hidden, short enough for ``-N.html``."""
    return derived_name(span_id, default="span", room=len("-99.html"))


def picture_names(span_ids: list[str]) -> list[str]:
    """:func:`safe_name` of each span id, numbered (``-2``...) where two ids would share a
    name (``a#1:0-4`` and ``a_1_0-4`` both read ``a_1_0-4``), so no picture replaces another."""
    out, used = [], set()
    for sid in span_ids:
        name, k = safe_name(sid), 2
        candidate = name
        while candidate in used:
            candidate, k = f"{name}-{k}", k + 1
        used.add(candidate)
        out.append(candidate)
    return out


def picture_paths(span_ids: list[str], out: str | Path, fmt: str = "html") -> list[Path]:
    """Where the pictures of the spans go: ``<out>/<safe span id>.html`` (or ``.svg``)."""
    return [Path(out) / f"{name}.{fmt}" for name in picture_names(span_ids)]


def write_views(views: list[SpanView], out: str | Path, fmt: str = "html") -> list[Path]:
    """Write each view as ``<out>/<safe span id>.html`` (or ``.svg``); returns the paths."""
    if fmt not in ("html", "svg"):
        raise InputError(f"--format must be html or svg, got {fmt!r}")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: exists and is not a folder; choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    paths = picture_paths([v.span.id for v in views], out, fmt)
    with all_or_nothing():  # the pictures asked for appear together, or none of them
        for view, path in zip(views, paths):
            with atomic_write(path) as fh:
                fh.write(render_html(view) if fmt == "html" else render_svg(view))
    return paths


def draw_spans(
    span_ids: list[str],
    benchmark,
    submission: str | Path | None = None,
    out: str | Path = ".",
    fmt: str = "html",
) -> tuple[list[SpanView], list[Path]]:
    """What ``mtcabench show`` does: check, read, draw and write each span's picture.

    A picture path that is one of the inputs (the submission, a benchmark file) is refused
    before anything is read.
    """
    if fmt not in ("html", "svg"):
        raise InputError(f"--format must be html or svg, got {fmt!r}")
    inputs: list[Path] = [Path(submission)] if submission is not None else []
    inputs += benchmark_inputs(benchmark)
    check_outputs_are_not_inputs(inputs, picture_paths(list(span_ids), out, fmt))
    views = span_views(span_ids, benchmark, submission)
    return views, write_views(views, out, fmt)


def _hops(span) -> str:
    """The gold path's hops beside its depth: content and call structure."""
    content, structural = path_hops(span.graph)
    return f"{content} content hops, {structural} call-structure hops"
