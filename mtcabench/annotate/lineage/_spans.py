"""Span selection: the copied and derived-amount spans of one answer turn."""

from __future__ import annotations

import re
from decimal import Decimal

from mtcabench.annotate.lineage._find import _bounded, find_value
from mtcabench.annotate.lineage._hallucination import _Hallucinations
from mtcabench.annotate.lineage._span import _Span
from mtcabench.annotate.lineage._values import Value
from mtcabench.graph import infer_dependency_type
from mtcabench.model import TargetSpan

#: A dollar amount in an answer, for the derived-amount rule.
_AMOUNT = re.compile(r"\$\s?(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)")


class _Tracer(_Hallucinations):
    """The values of one conversation, where they occur, and the graphs they give.

    Its roles are layered one module each (vocabulary, occurrences, tracing, hallucination);
    this top layer selects the spans of an answer turn.
    """

    def spans(self, c: int) -> list[_Span]:
        turn = self.turns[c]
        content = turn.content
        matches: list[tuple[int, int, str]] = []
        for key, value in self.values.items():
            if self.known_from[key] >= c:
                continue
            lo = 0
            while (hit := find_value(content, value, lo)) is not None:
                if not value.currency_only or content[: hit[0]].rstrip(" ").endswith("$"):
                    matches.append((hit[0], hit[1], key))
                lo = hit[0] + 1
        # Longest match first at a position; no overlaps ("credit_card_7815826" wins over parts).
        matches.sort(key=lambda m: (m[0], -(m[1] - m[0])))
        chosen: list[tuple[int, int, str]] = []
        covered_until = -1
        for start, end, key in matches:
            if start >= covered_until:
                chosen.append((start, end, key))
                covered_until = end
        out: list[_Span] = []
        done: set[str] = set()
        for start, end, key in chosen:
            if key in done:
                self.summary.skipped["repeat-in-turn"] += 1
                continue
            done.add(key)
            made = self._copied_span(c, start, end, key)
            if made is not None:
                out.append(made)
        covered = [(s, e) for s, e, _ in chosen]
        if self.config.derived_amounts:
            out += self._derived_spans(c, covered, out)
        covered += [(s.span.start, s.span.end) for s in out]
        out += self._unsupported_spans(c, covered)
        out.sort(key=lambda s: s.span.start)
        return out

    def _copied_span(self, c: int, start: int, end: int, key: str) -> _Span | None:
        if self.turns_holding(c, key) > self.config.max_value_turns:
            self.summary.skipped["frequent-value"] += 1
            return None
        if self.parent(c, key) is None:
            self.summary.skipped["no-source"] += 1
            return None
        edges, unsourced = self.trace(c, [(c, key)])
        self._count_unsourced(unsourced)
        graph = self.graph(c, edges)
        value = self.values[key]
        span = TargetSpan(turn=c, start=start, end=end, text=self.turns[c].content[start:end])
        note = f"copied {value.kind} {span.text!r}: {self.chain_note(c, key)}"
        return _Span(span, value, graph, infer_dependency_type(graph, self.conv), note)

    def _derived_spans(
        self, c: int, covered: list[tuple[int, int]], copied: list[_Span]
    ) -> list[_Span]:
        content = self.turns[c].content
        amounts = []  # traced "$x" spans, in order
        for s in copied:
            if s.value.kind == "number" and content[:s.span.start].rstrip(" ").endswith("$"):
                amounts.append(s)
        out: list[_Span] = []
        done: set[Decimal] = set()
        for m in _AMOUNT.finditer(content):
            start, end = m.span(1)
            if any(s < end and start < e for s, e in covered):
                continue
            if not _bounded(content, start, end, m.group(1)):
                continue
            x = Decimal(m.group(1).replace(",", ""))
            if x in done:
                self.summary.skipped["repeat-in-turn"] += 1
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
                self.summary.skipped["ambiguous-derivation"] += 1
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
            graph = self.graph(c, edges)
            span = TargetSpan(turn=c, start=start, end=end, text=m.group(1))
            value = Value(span.text, "derived-amount", (span.text,))
            note = (f"derived amount {span.text!r} = {a.span.text} {op} {b.span.text}: "
                    f"{a.span.text} from turn {self.parent(c, a.value.key)}, "
                    f"{b.span.text} from turn {self.parent(c, b.value.key)}")
            out.append(_Span(span, value, graph, infer_dependency_type(graph, self.conv), note))
            covered.append((start, end))
            done.add(x)
        return out
