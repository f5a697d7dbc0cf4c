"""Span selection: the copied, derived-amount and (v2) clause spans of one answer turn.

Every standalone occurrence, in an assistant turn's content, of a value known before that
turn is a candidate span; overlaps go to the longest match and each value gets one span per
turn (its first occurrence). A ``$`` amount equal to the sum or difference of exactly one
pair of traced amounts stated earlier in the turn is a derived (multi-source) span. What is
left unsupported goes to the hallucination decision; under the v2 rules a clause joining
values of independent sources is a multi-source span too (``_clauses``).
"""

from __future__ import annotations

import re
from decimal import Decimal

from mtcabench.lineage._amounts import amount_spans
from mtcabench.lineage._clauses import clause_spans
from mtcabench.lineage._hallucination import unsupported_spans
from mtcabench.lineage._tracing import Covered, ProposedSpan, Tracer
from mtcabench.lineage._values import Value, _bounded
from mtcabench.graph import infer_dependency_type
from mtcabench.model import TargetSpan

#: A dollar amount in an answer, for the derived-amount rule.
_AMOUNT = re.compile(r"\$\s?(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)")


def answer_spans(tracer: Tracer, c: int) -> list[ProposedSpan]:
    """The spans of answer turn ``c``: copied values, derived amounts, hallucinations."""
    chosen = tracer.content_matches(c)
    out: list[ProposedSpan] = []
    if tracer.applies("amount_claims") and tracer.config.hallucinations:
        # v5: a reported amount the recorded payment contradicts is that, even where the
        # same number stands in an earlier turn (a fare, a balance): it was not copied
        amounts = amount_spans(tracer, c)
        chosen = [(s, e, k) for s, e, k in chosen
                  if not any(s < a.span.end and a.span.start < e for a in amounts)]
    else:
        amounts = []
    done: set[str] = set()
    for start, end, key in chosen:
        if key in done:
            tracer.summary.skipped["repeat-in-turn"] += 1
            continue
        done.add(key)
        made = _copied_span(tracer, c, start, end, key)
        if made is not None:
            out.append(made)
    covered = Covered([(s, e) for s, e, _ in chosen]
                      + [(a.span.start, a.span.end) for a in amounts])
    if tracer.config.derived_amounts:
        out += _derived_spans(tracer, c, covered, out)
    for s in out:
        covered.add(s.span.start, s.span.end)
    copied = list(out)
    out += unsupported_spans(tracer, c, covered)
    if tracer.rules.clause_spans and tracer.config.clause_spans:
        out += clause_spans(tracer, c, copied)
    out += amounts
    out.sort(key=lambda s: s.span.start)
    return out


def _copied_span(tracer: Tracer, c: int, start: int, end: int, key: str
                 ) -> ProposedSpan | None:
    if tracer.turns_holding(c, key) > tracer.config.max_value_turns:
        tracer.summary.skipped["frequent-value"] += 1
        return None
    if tracer.read_from(c, key) is None:
        tracer.summary.skipped["no-source"] += 1
        return None
    edges, unsourced = tracer.trace(c, [(c, key)])
    if edges is None:  # larger than MAX_GRAPH_TURNS (counted by trace)
        return None
    tracer.count_unsourced(unsourced)
    graph = tracer.graph(c, edges)
    value = tracer.values[key]
    span = TargetSpan(turn=c, start=start, end=end, text=tracer.turns[c].content[start:end])
    note = f"copied {value.kind} {span.text!r}: {tracer.chain_note(c, key)}"
    return ProposedSpan(span, value, graph, infer_dependency_type(graph, tracer.conv), note)


def _derived_spans(
    tracer: Tracer, c: int, covered: Covered, copied: list[ProposedSpan]
) -> list[ProposedSpan]:
    content = tracer.turns[c].content
    amounts = []  # traced "$x" spans, in order
    for s in copied:
        if s.value.kind == "number" and content[:s.span.start].rstrip(" ").endswith("$"):
            amounts.append(s)
    out: list[ProposedSpan] = []
    done: set[Decimal] = set()
    for m in _AMOUNT.finditer(content):
        start, end = m.span(1)
        if covered.overlaps(start, end):
            continue
        if not _bounded(content, start, end, m.group(1)):
            continue
        x = Decimal(m.group(1).replace(",", ""))
        if x in done:
            tracer.summary.skipped["repeat-in-turn"] += 1
            continue
        earlier = [a for a in amounts if a.span.end <= start]
        pairs = {
            (a.value.key, b.value.key, op)
            for i, a in enumerate(earlier)
            for b in earlier[i + 1:]
            for op, ok in (
                ("+", Decimal(a.value.key) + Decimal(b.value.key) == x),
                ("-", abs(Decimal(a.value.key) - Decimal(b.value.key)) == x),
            )
            if ok and a.value.key != b.value.key
        }
        if not pairs:
            continue
        if len(pairs) > 1:
            tracer.summary.skipped["ambiguous-derivation"] += 1
            continue
        ka, kb, op = pairs.pop()
        a = next(s for s in earlier if s.value.key == ka)
        b = next(s for s in earlier if s.value.key == kb)
        if op == "-" and Decimal(ka) < Decimal(kb):
            a, b = b, a
        edges: dict = {}
        for operand in (a, b):
            for e in operand.graph.edges:
                edges.setdefault(e.pair, e)
        graph = tracer.graph(c, edges)
        span = TargetSpan(turn=c, start=start, end=end, text=m.group(1))
        value = Value(span.text, "derived-amount", (span.text,))
        note = (f"derived amount {span.text!r} = {a.span.text} {op} {b.span.text}: "
                f"{a.span.text} from turn {tracer.read_from(c, a.value.key)}, "
                f"{b.span.text} from turn {tracer.read_from(c, b.value.key)}")
        out.append(ProposedSpan(span, value, graph, infer_dependency_type(graph, tracer.conv),
                                note))
        covered.add(start, end)
        done.add(x)
    return out
