"""Multi-source clause spans (rules ``lineage-v2``): a clause that joins values of independent
sources.

A copied value has one source: its *origin*, the exogenous turn (user, system or tool result)
that its chain of parents reaches first, through any assistant turns that restated it. A
clause of an answer (a sentence, or a line of a listing) holding copied values whose origins
are independent is a span of its own: "Visa card ending in 7447: $55" joins the card the
profile gave (turn 7) with the amount the booking result gave (turn 29).

Two values have **independent sources** when their origins are different turns and neither
origin shows the other value (under the rules' matching). A turn that shows both would be one
source for both; the latest-carrier rule then links both to the later of the two turns, so
values read from one result ("Flight HAT136 (JFK to ATL)") never make a multi-source span.
The span is the clause without list markers, markdown emphasis and closing punctuation; its
graph is the union of its values' graphs; its type is multi-source.
"""

from __future__ import annotations

from bisect import bisect_left

from mtcabench.lineage._tracing import ProposedSpan, Tracer, clauses
from mtcabench.lineage._values import Value
from mtcabench.model import DependencyType, Role, TargetSpan

def origin(tracer: Tracer, target: int, key: str) -> int | None:
    """The exogenous turn the value was read from: its parent, or, when the parent is an
    assistant turn that restated it, that turn's origin."""
    node, anchors = target, None
    while True:
        p, anchors = tracer.step(node, key, anchors)
        if p is None or tracer.turns[p].role is not Role.ASSISTANT:
            return p
        node = p


def independent(tracer: Tracer, a: tuple[int, str], b: tuple[int, str]) -> bool:
    """Whether values a and b (as (origin, value key)) have independent sources."""
    (oa, ka), (ob, kb) = a, b
    return oa != ob and tracer.occurrence(oa, kb) is None and tracer.occurrence(ob, ka) is None


def clause_spans(tracer: Tracer, c: int, copied: list[ProposedSpan]) -> list[ProposedSpan]:
    """The multi-source clauses of answer turn ``c``, built from its copied-value spans."""
    content = tracer.turns[c].content
    out: list[ProposedSpan] = []
    # the copied values in text order (as span selection made them), found by bisection:
    # an answer listing thousands of values has thousands of clauses
    values = [s for s in copied if s.value.kind != "derived-amount"]
    starts = [s.span.start for s in values]
    for start, end in clauses(content):
        members = [s for s in values[bisect_left(starts, start):bisect_left(starts, end)]
                   if s.span.end <= end]
        if len(members) < 2:
            continue
        sourced = [(origin(tracer, c, s.value.key), s.value.key) for s in members]
        pairs = [(a, b) for i, a in enumerate(sourced) for b in sourced[i + 1:]
                 if a[0] is not None and b[0] is not None and independent(tracer, a, b)]
        if not pairs:
            tracer.summary.skipped["clause-one-source"] += 1
            continue
        edges: dict = {}
        for s in members:
            for e in s.graph.edges:
                edges.setdefault(e.pair, e)
        origins = sorted({o for o, _ in sourced if o is not None})
        span = TargetSpan(turn=c, start=start, end=end, text=content[start:end])
        read = ", ".join(f"{s.span.text!r} from turn {o}"
                         for s, (o, _) in zip(members, sourced, strict=True))
        note = (f"clause joining values of independent sources (turns "
                f"{', '.join(map(str, origins))}): {read}")
        value = Value(span.text, "clause", ())
        out.append(ProposedSpan(span, value, tracer.graph(c, edges),
                                DependencyType.MULTI_SOURCE, note))
    return out
