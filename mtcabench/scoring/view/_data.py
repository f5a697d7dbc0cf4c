"""What the run's page shows, gathered once in Python: every span, its gold graph, and each
submission's prediction and per-span scores, as one JSON document for the page's script.

Offsets (a span's, an evidence range's) are sent in UTF-16 code units, the unit JavaScript
slices strings by (:func:`~mtcabench.model.browser_offset`): after an emoji, a code-point
offset would highlight beside the value. Text is stored once: a conversation's turns refer to a table of distinct texts, so that a
system policy repeated in every run weighs once, not once per conversation. Nothing here is
HTML: the page builds its elements from these values as text, so no value can become markup.

The metrics come from the metrics table (:data:`~mtcabench.results.metrics.METRICS`): the
document lists them (name, label, formula, and the title of the table column of those that
have one) and each method's row holds every metric's value in that order, so a new entry of
the table reaches the page with no change here or in ``view.js``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from mtcabench.benchmark import Benchmark
from mtcabench.errors import InputError
from mtcabench.graph import path_hops
from mtcabench.model import NO_AGENT, DependencyType, Role, browser_offset
from mtcabench.results.metrics import EVIDENCE_K, METRICS, gold_evidence
from mtcabench.scoring.scorer import score_spans
from mtcabench.render import EDGE_COLOURS, ROLE_FILL
from mtcabench.results.submission import read_submission

#: The layout of the document; the page refuses another one with a clear message.
DATA_VERSION = 2


def _labels(subs) -> list[str]:
    """Each submission's label (method/scorer), with its file name where two labels agree."""
    labels = [s.label for s in subs]
    return [f"{lab} ({s.name})" if labels.count(lab) > 1 else lab for lab, s in zip(labels, subs)]


def view_data(benchmark: Benchmark, submissions: Sequence[str | Path]) -> dict:
    """The page's document: spans, conversations, and one result table per submission."""
    if not benchmark.spans:
        raise InputError(f"{benchmark.origin}: the benchmark has no spans to view")
    ids = [s.id for s in benchmark.spans]
    subs = [read_submission(p, benchmark, keep=ids) for p in submissions]
    texts: dict[str, int] = {}

    def text_id(text: str) -> int:
        return texts.setdefault(text, len(texts))

    conv_index: dict[str, int] = {}
    conversations = []
    for span in benchmark.spans:
        if span.conversation_id in conv_index:
            continue
        conv = benchmark.conversations[span.conversation_id]
        conv_index[conv.id] = len(conversations)
        conversations.append({"id": conv.id, "source": conv.source, "domain": conv.domain,
                              "agent": conv.agent_model or NO_AGENT,
                              "turns": [[t.role.value, text_id(t.text)] for t in conv.turns]})
    def units(span, turn: int, offset: int) -> int:
        # Offsets reach the page in UTF-16 code units, as JavaScript slices strings.
        turns = benchmark.conversations[span.conversation_id].turns
        return browser_offset(turns[turn].text, offset) if 0 <= turn < len(turns) else offset

    spans = [{
        "id": s.id, "text": s.span.text,  # the span column shows it (offsets need no slicing)
        "conv": conv_index[s.conversation_id], "turn": s.span.turn,
        "start": units(s, s.span.turn, s.span.start), "end": units(s, s.span.turn, s.span.end),
        "type": s.dependency_type.value,
        "depth": s.depth, "hops": list(path_hops(s.graph)), "origin": s.origin.value,
        # "value", or "claim: <claim kind>" (the span-kind facet reads both parts).
        "kind": s.span_kind.value + (f": {s.claim_kind.value}" if s.claim_kind else ""),
        "source": s.source, "sources": list(s.sources),
        "gold": [[e.child, e.parent] for e in s.graph.edges],
        "evidence": [[c, p, units(s, p, a), units(s, p, b)]
                     for (c, p), (a, b) in gold_evidence(s.graph.edges).items()],
    } for s in benchmark.spans]
    methods = []
    for sub, label in zip(subs, _labels(subs)):
        scored = score_spans(sub, benchmark)
        rows = []
        for span, score in zip(benchmark.spans, scored.scores):
            entry = sub.entries.get(span.id)
            edges = [] if entry is None or entry.skipped else [
                [e.child, e.parent, e.score,
                 [[units(span, e.parent, x.start), units(span, e.parent, x.end), x.score]
                  for x in e.sentences or []]] for e in entry.edges]
            rows.append({
                "status": sub.status(span.id), "edges": edges,
                # Every metric, in the order of "metrics" (None: undefined on the span).
                "values": [None if v is None else round(v, 4) for v in score.values().values()],
                # Every gold source recovered: source recall 1 (with the metric's conventions).
                "source_hit": score.source_recall == 1.0,
            })
        methods.append({"label": label, "file": sub.path.name, "rows": rows})
    return {
        "version": DATA_VERSION,
        "benchmark": benchmark.origin,
        "types": [t.value for t in DependencyType],
        "evidence_k": EVIDENCE_K,
        "metrics": [{"name": name, "label": m.label, "definition": m.definition, "view": m.view}
                    for name, m in METRICS.items()],
        "colours": dict(EDGE_COLOURS),
        "role_fill": {r.value: ROLE_FILL[r] for r in Role},
        "texts": list(texts),
        "conversations": conversations,
        "spans": spans,
        "methods": methods,
    }
