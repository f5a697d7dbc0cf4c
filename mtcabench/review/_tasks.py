"""Candidates as Label Studio tasks: the conversation to show and the proposal as a prediction.

One task per target span. Paragraph ``i`` of the dialogue is turn ``i`` of the
conversation, so a region's paragraph index is the turn index of a graph node. Every turn
is shown with its canonical text (:attr:`Turn.text`: an assistant turn's tool calls as
``name({...})`` lines), so the target region's offsets are the span's own offsets; the
author line gives the turn index, the role and, for a tool result, the tool's name.
"""

from __future__ import annotations

from typing import Any

from mtcabench.model import (
    browser_offset,
    Candidate,
    ClaimKind,
    Conversation,
    DependencyType,
    EdgeKind,
    ProvenanceGraph,
    Role,
    TargetSpan,
    Turn,
)
from mtcabench.review import _ui as ui

#: Version of the task layout (data and meta keys); pull reads tasks of this version.
TASK_LAYOUT = 1


def turn_author(turn: Turn) -> str:
    """Author shown for a turn: its index and role, and the tool's name for a tool result."""
    author = f"#{turn.index} {turn.role.value}"
    if turn.role is Role.TOOL and turn.name:
        author += f" · {turn.name}"
    return author


def turn_display_text(turn: Turn) -> str:
    """Text shown for a turn: its canonical text, so region offsets are span offsets.

    Label Studio shows paragraph text as plain text (markup is not interpreted) and folds
    whitespace, so indenting JSON tool results would not make them easier to read; the
    author line names the tool instead.
    """
    return turn.text


def dialogue(conversation: Conversation) -> list[dict[str, str]]:
    """The ``$dialogue`` value: one ``{author, text}`` paragraph per turn, in order."""
    return [{"author": turn_author(t), "text": turn_display_text(t)} for t in conversation.turns]


def disagreement(candidate: Candidate) -> float | None:
    """1 - mean edge F1 of the other annotators' graphs against this one (None if unknown)."""
    f1s = [a.edge_f1 for a in candidate.alternatives if a.edge_f1 is not None]
    if not f1s:
        return None
    return round(1.0 - sum(f1s) / len(f1s), 6)


def review_order(candidates: list[Candidate]) -> list[Candidate]:
    """Most disputed first (highest disagreement), then those without a second opinion.

    Label Studio serves tasks in creation order by default, so importing in this order
    puts the spans that annotators disagree on at the head of every reviewer's queue.
    """
    indexed = list(enumerate(candidates))
    indexed.sort(key=lambda ic: (disagreement(ic[1]) is None, -(disagreement(ic[1]) or 0.0), ic[0]))
    return [c for _, c in indexed]


def node_label(turn: Turn, target: int, dependency_type: DependencyType | None) -> str:
    """The region label of a graph node, from its role and the span's dependency type."""
    if turn.index == target:
        return ui.TARGET
    if turn.role is Role.ASSISTANT:
        return ui.INTERMEDIATE
    if dependency_type is DependencyType.HALLUCINATION:
        return ui.HALLUCINATED_SOURCE
    return ui.SOURCE


def region_id(turn: int) -> str:
    return f"turn{turn}"


def graph_result(
    conversation: Conversation, span: TargetSpan, graph: ProvenanceGraph,
    dependency_type: DependencyType | None, claim_kind: ClaimKind | None = None,
) -> list[dict[str, Any]]:
    """A graph as Label Studio results: one region per node, one relation per edge, the
    dependency type's choice and, for a claim, its kind's choice. What the browser holds
    for a proposal or a reviewer's graph (a prediction's result, an annotation's)."""
    texts = dialogue(conversation)
    result: list[dict[str, Any]] = []
    for node in sorted(set(graph.nodes)):
        turn = conversation.turns[node]
        if node == graph.target:
            start, end, text = span.start, span.end, span.text
        else:
            text = texts[node]["text"]
            start, end = 0, len(text)
        shown = texts[node]["text"]
        result.append({
            "id": region_id(node),
            "from_name": ui.NODES,
            "to_name": ui.DIALOGUE,
            "type": "paragraphlabels",
            "value": {
                "start": str(node), "end": str(node),
                "startOffset": browser_offset(shown, start),
                "endOffset": browser_offset(shown, end), "text": text,
                "paragraphlabels": [node_label(turn, graph.target, dependency_type)],
            },
        })
    for edge in graph.edges:
        result.append({
            "from_id": region_id(edge.child),
            "to_id": region_id(edge.parent),
            "type": "relation",
            "direction": "right",
            "labels": [ui.ANSWERS_CALL if edge.kind is EdgeKind.STRUCTURAL else ui.DEPENDS_ON],
        })
    if dependency_type is not None:
        result.append({
            "id": "dependency-type",
            "from_name": ui.DEPENDENCY_TYPE,
            "to_name": ui.DIALOGUE,
            "type": "choices",
            "value": {"choices": [dependency_type.value]},
        })
    if claim_kind is not None:
        result.append({
            "id": "claim-kind",
            "from_name": ui.CLAIM_KIND,
            "to_name": ui.DIALOGUE,
            "type": "choices",
            "value": {"choices": [claim_kind.value]},
        })
    return result


def prediction_result(candidate: Candidate, conversation: Conversation) -> list[dict[str, Any]]:
    """The candidate's graph as Label Studio results: regions, relations, type (and kind)."""
    assert candidate.span is not None and candidate.graph is not None  # checked by the caller
    return graph_result(conversation, candidate.span, candidate.graph,
                        candidate.dependency_type, candidate.claim_kind)


def target_info(candidate: Candidate, conversation: Conversation) -> str:
    """One line above the conversation: where the target is and who proposed what."""
    assert candidate.span is not None
    span = candidate.span
    role = conversation.turns[span.turn].role.value
    parts = [f"Target span in turn #{span.turn} ({role}), characters {span.start}-{span.end}: "
             f"\u201c{span.text}\u201d"]
    parts.append(f"proposed by {candidate.annotator.label}")
    if candidate.dependency_type is not None:
        parts.append(f"proposed type: {candidate.dependency_type.value}")
    if candidate.claim_kind is not None:
        parts.append(f"a claim; proposed kind: {candidate.claim_kind.value}")
    d = disagreement(candidate)
    if d is not None:
        parts.append(f"annotator disagreement: {d:.2f}")
    return " · ".join(parts)


def build_task(candidate: Candidate, conversation: Conversation) -> dict[str, Any]:
    """The Label Studio task for one candidate (data, meta, prediction).

    The candidate itself travels in the task data so that ``review pull`` can tell what the
    reviewer changed without the candidates file.
    """
    assert candidate.span is not None and candidate.graph is not None
    d = disagreement(candidate)
    data = {
        "dialogue": dialogue(conversation),
        "target_info": target_info(candidate, conversation),
        "span_id": candidate.id,
        "conversation_id": candidate.conversation_id,
        "disagreement": d,
        # The kinds a claim may be given (none for a value span: its task shows no choice).
        "claim_kind_header": "Claim kind" if candidate.claim_kind is not None else "",
        "claim_kinds": ([{"value": k.value} for k in ClaimKind]
                        if candidate.claim_kind is not None else []),
        "mtcabench": {
            "layout": TASK_LAYOUT,
            "candidate": candidate.model_dump(
                mode="json", exclude_none=True,
                include={"id", "conversation_id", "span", "dependency_type", "graph",
                         "annotator", "span_kind", "claim_kind"},
            ),
        },
    }
    prediction: dict[str, Any] = {
        "model_version": candidate.annotator.label,
        "result": prediction_result(candidate, conversation),
    }
    if candidate.confidence is not None:
        prediction["score"] = candidate.confidence
    return {
        "data": data,
        "meta": {"span_id": candidate.id, "mtcabench_layout": TASK_LAYOUT},
        "predictions": [prediction],
    }
