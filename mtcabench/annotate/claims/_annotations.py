"""Pass 1 of the annotated claims set: hand-written claim graphs read as candidates.

A person writes each claim's graph (a :class:`~mtcabench.model.ClaimAnnotation` line); it
becomes a candidate (annotator ``human``, the guide's version, the person's pseudonym),
exactly what the review stage takes from any annotator (pass 2, the checks, is read there:
:mod:`mtcabench.review`). Lines are checked as every stage checks graphs
(:func:`~mtcabench.graph.check_graph`), so a slip of the pen (a text not in the turn, an edge
pointing forwards, a tool result without its call) is one line naming the file, the line and
the rule.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from mtcabench.errors import InputError
from mtcabench.graph import check_graph, graph_from_pairs, resolve_span
from mtcabench.io import format_validation_error, iter_json_lines
from mtcabench.model import (
    Annotator,
    Candidate,
    ClaimAnnotation,
    Conversation,
    SpanKind,
    span_id,
)

#: The version of the written guide (docs/claims.md) the annotations follow.
GUIDE_VERSION = "claims-guide-1"


def claim_annotator(person: str) -> Annotator:
    """The annotator of a hand-written claim graph."""
    return Annotator(name="human", person=person, rules_version=GUIDE_VERSION)


def _record(path: Path, lineno: int, obj: dict, record_type):
    try:
        return record_type.model_validate(obj)
    except ValidationError as exc:
        raise InputError.at(path, format_validation_error(exc), line=lineno) from None


def _conversation(path: Path, lineno: int, conversations: dict[str, Conversation], cid: str
                  ) -> Conversation:
    conv = conversations.get(cid)
    if conv is None:
        raise InputError.at(path, f"conversation {cid!r} is not in the conversations given "
                            "(ingest its runs file too)", line=lineno)
    return conv


def read_annotations(path: str | Path, conversations: dict[str, Conversation]
                     ) -> list[Candidate]:
    """Pass-1 lines as candidates (one per claim; a claim annotated twice is an error)."""
    path = Path(path)
    out: dict[str, Candidate] = {}
    for lineno, obj in iter_json_lines(path):
        a: ClaimAnnotation = _record(path, lineno, obj, ClaimAnnotation)
        conv = _conversation(path, lineno, conversations, a.conversation_id)
        try:
            span = resolve_span(conv, a.turn, a.text, a.occurrence)
        except ValueError as exc:
            raise InputError.at(path, str(exc), line=lineno) from None
        rid = span_id(conv.id, span)
        graph = graph_from_pairs(conv, a.turn, a.edges)
        violations = check_graph(graph, conv, span, record=rid)
        if violations:
            raise InputError.at(path, "; ".join(f"{v.rule}: {v.detail}" for v in violations),
                                line=lineno, record=rid)
        if rid in out:
            raise InputError.at(path, "this claim is annotated twice", line=lineno, record=rid)
        out[rid] = Candidate(
            id=rid, conversation_id=conv.id, span=span, dependency_type=a.type, graph=graph,
            annotator=claim_annotator(a.annotator), rationale=a.rationale or None,
            span_kind=SpanKind.CLAIM, claim_kind=a.claim_kind)
    return list(out.values())


