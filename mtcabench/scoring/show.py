"""Drawing one span: its conversation with the gold graph and a submission's graph overlaid.

A benchmark span and a submission's entry, given to the renderer (:mod:`mtcabench.render`)
as a drawing with gold: turns top to bottom up to the target turn, gold edges arcing on the
left, predicted edges on the right; an edge in both is green on both sides, a gold edge the
submission missed is red and dashed, a predicted edge that is not gold is orange. The same
picture is given as SVG, as an HTML page (SVG, per-span metrics, full turn texts), and as
Mermaid or DOT text for pasting into documents.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path

from mtcabench import render
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
    ScoredSentence,
    parse_span_id,
)
from mtcabench.render import Drawing, Fact, Graph
from mtcabench.results.metrics import METRICS, score_span
from mtcabench.results.submission import read_submission
from mtcabench.scoring.scorer import as_benchmark, benchmark_inputs

Pair = tuple[int, int]


@dataclass
class SpanView:
    """What is drawn for one span: its gold graph and a submission's edges (None: no
    submission given), as the renderer's :class:`~mtcabench.render.Drawing` (built once)."""

    span: BenchmarkSpan
    conversation: Conversation
    predicted: list[PredictedEdge] | None  # None: no submission given
    label: str = "prediction"
    status: str = "predicted"  # predicted, missing or skipped
    drawing: Drawing = field(init=False)

    def __post_init__(self) -> None:
        span = self.span
        graph = Graph(self.label, self.predicted, status=self.status)
        self.drawing = Drawing(
            span.id, self.conversation, span.span, [graph],
            gold=frozenset(e.pair for e in span.graph.edges),
            note=span.dependency_type.value,
            facts=[[Fact("dependency type", span.dependency_type.value, strong=True),
                    Fact("source", f"{span.source}/{span.domain}")],
                   [Fact("gold depth", f"{span.depth} ({_hops(span)})"),
                    Fact("gold sources", str(span.sources))]])

    @property
    def graph(self) -> Graph:
        return self.drawing.graphs[0]

    @property
    def gold(self) -> frozenset[Pair]:
        return self.drawing.gold_pairs()

    @property
    def pred(self) -> frozenset[Pair]:
        return self.graph.pairs

    @property
    def scores(self) -> dict[Pair, float]:
        return self.graph.scores

    @property
    def evidence(self) -> dict[Pair, list[ScoredSentence]]:
        """A predicted edge's evidence sentences (offsets into the parent's text), best first."""
        return self.graph.evidence

    def kind(self, pair: Pair) -> str:
        """'both', 'missed' (gold only), 'extra' (predicted only); 'gold' without a submission."""
        return self.drawing.kind(pair, self.graph)

    def metrics(self) -> dict[str, float | None]:
        return score_span(self.span, self.conversation, self.predicted or ()).values()

    @property
    def turns(self):
        return self.conversation.turns[: self.span.graph.target + 1]


def _metric_rows(view: SpanView) -> list[tuple[str, float | None]]:
    """The span's metrics as the page's table rows: (label, value)."""
    return [(METRICS[k].label, v) for k, v in view.metrics().items()]


def render_svg(view: SpanView) -> str:
    """The conversation up to the target, gold edges left, predicted edges right."""
    return render.to_svg(view.drawing)


def render_html(view: SpanView) -> str:
    """A page: the span's facts and metrics, the SVG, the edges, and every turn in full."""
    if view.predicted is not None:  # scored here: only the page shows them
        view.graph.metrics = _metric_rows(view)
    return render.to_html(view.drawing)


def render_mermaid(view: SpanView) -> str:
    """A Mermaid flowchart: one node per turn in either graph, edges coloured by kind."""
    return render.to_mermaid(view.drawing)


def render_dot(view: SpanView) -> str:
    """The same picture as Graphviz DOT."""
    return render.to_dot(view.drawing)


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
