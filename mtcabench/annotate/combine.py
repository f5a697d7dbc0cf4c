"""Combining annotators: one candidate per span, the other annotator's graph kept beside it.

When the lineage annotator and the LLM both give a graph for the same span id, the combined
candidate keeps one as its main graph and the other in ``alternatives`` with its edge F1
against the main one, so a reviewer sees both and how far they agree.

Main graph by default: **lineage**. Lineage traces a copied value by exact string match
through the turns that carried it, so for the spans it covers its graph is right by
construction about where that literal came from, and it is reproducible; an LLM's graph is a
judgement, and the local 135M model's judgement is poor. The LLM graph stays as the
alternative because it can hold what lineage cannot see (a paraphrase, a decision, an extra
source); ``main="llm"`` flips the choice for a strong annotator model.
"""

from __future__ import annotations

from collections.abc import Iterable

from mtcabench.graph import edge_prf
from mtcabench.model import AlternativeGraph, Candidate

#: The annotators, and which one's graph is the main one by default (see above).
ANNOTATORS = ("lineage", "llm")
MAIN_CHOICES = ANNOTATORS
DEFAULT_MAIN = "lineage"


def _alternative(main: Candidate, other: Candidate) -> AlternativeGraph:
    assert main.graph is not None and other.graph is not None
    f1 = edge_prf(other.graph.pairs(), main.graph.pairs())[2]
    return AlternativeGraph(annotator=other.annotator, dependency_type=other.dependency_type,
                            graph=other.graph, edge_f1=round(f1, 4))


def combine_candidates(llm: Iterable[Candidate], lineage: Iterable[Candidate],
                       main: str = DEFAULT_MAIN) -> list[Candidate]:
    """Merge the candidates of both annotators for one conversation.

    Only ``ok`` candidates with a graph are merged; rejected ones pass through unchanged (their
    ids differ from span ids, so they never collide). Output is ordered by turn and offset.
    """
    if main not in MAIN_CHOICES:
        raise ValueError(f"main must be one of {MAIN_CHOICES}, got {main!r}")
    by_id: dict[str, dict[str, Candidate]] = {}
    passthrough: list[Candidate] = []
    for family, cands in (("llm", llm), ("lineage", lineage)):
        for c in cands:
            if c.status != "ok" or c.graph is None:
                passthrough.append(c)
            else:
                by_id.setdefault(c.id, {})[family] = c
    out: list[Candidate] = []
    for pair in by_id.values():
        if len(pair) == 1:
            out.append(next(iter(pair.values())))
            continue
        first = pair[main]
        second = pair["llm" if main == "lineage" else "lineage"]
        out.append(first.model_copy(
            update={"alternatives": [*first.alternatives, _alternative(first, second)]}))
    out += passthrough

    def order(c: Candidate) -> tuple:
        s = c.span
        return (s.turn, s.start, s.end, c.id) if s else (10**9, 0, 0, c.id)

    return sorted(out, key=order)
