"""The released tables' typed columns (``datasets.Features``) and rows <-> records.

The spans table holds :class:`~mtcabench.model.BenchmarkSpan` records, the conversations
table :class:`~mtcabench.model.Conversation` records, column for field, so that
``datasets.load_dataset`` gives typed rows (edges as a list of structs) and the package
loader rebuilds our records from them exactly. Two deliberate departures from the records:
tool-call arguments and conversation metadata are JSON text (their shapes vary from tool to
tool, so no fixed struct fits them), and each turn also carries its canonical ``text``,
which every offset refers to, so that users need not re-render tool calls themselves.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from datasets import Features, List, Value

from mtcabench.io import loads
from mtcabench.model import BenchmarkSpan, Conversation, SpanKind, SpanOrigin, Turn

_str = Value("string")
_int = Value("int32")

ANNOTATOR = {
    "name": _str,
    "model": _str,
    "endpoint": _str,
    "prompt_version": _str,
    "prompt_hash": _str,
    "rules_version": _str,
}

SPAN_FEATURES = Features(
    {
        "id": _str,
        "conversation_id": _str,
        "source": _str,
        "domain": _str,
        "span": {"turn": _int, "start": _int, "end": _int, "text": _str},
        "dependency_type": _str,
        "graph": {
            "target": _int,
            "nodes": List(_int),
            "edges": List(
                {
                    "child": _int,
                    "parent": _int,
                    "kind": _str,
                    "score": Value("float64"),
                    "evidence": {"quote": _str, "start": _int, "end": _int},
                }
            ),
        },
        "depth": _int,
        "sources": List(_int),
        "decision_source": _str,
        "verdict": _str,
        "reviewers": List(_str),
        "annotator": ANNOTATOR,
        "schema_version": _int,
    }
)

#: The columns a release adds when it holds counterfactual spans (``origin`` and the edit);
#: a release without any has exactly the columns of SPAN_FEATURES, so that releases of real
#: spans stay byte for byte what they were. A real span's row leaves both empty (null).
COUNTERFACTUAL_COLUMNS = {
    "origin": _str,
    "counterfactual": {
        "conversation_id": _str,
        "field": _str,
        "original": _str,
        "replacement": _str,
        "source_turn": _int,
        "source_quote": _str,
        "source_start": _int,
        "source_end": _int,
        "entity_turn": _int,
        "original_start": _int,
    },
}


#: The columns a release adds when it holds claims: the span's kind and the claim's, and the
#: human annotator's pseudonym. A value's row leaves them empty (null); a release of values
#: has none of them, byte for byte as before claims existed.
CLAIM_COLUMNS = {"span_kind": _str, "claim_kind": _str}
ANNOTATOR_WITH_PERSON = {**ANNOTATOR, "person": _str}


def span_features(spans: Iterable[BenchmarkSpan]) -> Features:
    """The spans table's columns for these spans: SPAN_FEATURES, plus the counterfactual
    columns when any span is counterfactual and the claim columns when any is a claim."""
    spans = list(spans)
    columns = dict(SPAN_FEATURES)
    if any(s.span_kind is SpanKind.CLAIM for s in spans):
        columns = {**columns, **CLAIM_COLUMNS, "annotator": ANNOTATOR_WITH_PERSON}
    if any(s.origin is SpanOrigin.COUNTERFACTUAL for s in spans):
        columns = {**columns, **COUNTERFACTUAL_COLUMNS}
    return Features(columns) if len(columns) > len(SPAN_FEATURES) else SPAN_FEATURES


CONVERSATION_FEATURES = Features(
    {
        "id": _str,
        "source": _str,
        "domain": _str,
        "agent_model": _str,
        "task_id": _str,
        "trial": _int,
        "turns": List(
            {
                "index": _int,
                "role": _str,
                "content": _str,
                "text": _str,
                "tool_calls": List({"id": _str, "name": _str, "arguments": _str}),
                "tool_call_id": _str,
                "name": _str,
            }
        ),
        "metadata": _str,
        "schema_version": _int,
    }
)


def _json(value: Any) -> str:
    # Key order is kept (not sorted): Turn.text renders arguments in their given order, and
    # offsets depend on that text.
    return json.dumps(value, ensure_ascii=False)


def span_row(span: BenchmarkSpan) -> dict[str, Any]:
    """The spans-table row of a released span (a real span's has no origin: see
    COUNTERFACTUAL_COLUMNS)."""
    row = span.model_dump(mode="json", exclude={"kind"})
    for edge in row["graph"]["edges"]:
        edge.setdefault("evidence", None)
        edge.pop("sentences", None)  # a predicted edge's evidence; gold edges have none
    return row


def span_from_row(row: dict[str, Any]) -> BenchmarkSpan:
    """The BenchmarkSpan of a spans-table row (inverse of :func:`span_row`)."""
    # A real span's and a value's empty cells, and a model annotator's empty person.
    row = {k: v for k, v in row.items()
           if not ((k in COUNTERFACTUAL_COLUMNS or k in CLAIM_COLUMNS) and v is None)}
    if isinstance(row.get("annotator"), dict) and row["annotator"].get("person", 0) is None:
        row["annotator"] = {k: v for k, v in row["annotator"].items() if k != "person"}
    return BenchmarkSpan.model_validate({**row, "kind": BenchmarkSpan.KIND})


def conversation_row(conv: Conversation) -> dict[str, Any]:
    """The conversations-table row of a conversation."""
    return {
        "id": conv.id,
        "source": conv.source,
        "domain": conv.domain,
        "agent_model": conv.agent_model,
        "task_id": conv.task_id,
        "trial": conv.trial,
        "turns": [
            {
                "index": t.index,
                "role": t.role.value,
                "content": t.content,
                "text": t.text,
                "tool_calls": [
                    {"id": c.id, "name": c.name, "arguments": _json(c.arguments)}
                    for c in t.tool_calls
                ],
                "tool_call_id": t.tool_call_id,
                "name": t.name,
            }
            for t in conv.turns
        ],
        "metadata": _json(conv.metadata),
        "schema_version": conv.schema_version,
    }


def conversation_from_row(row: dict[str, Any]) -> Conversation:
    """The Conversation of a conversations-table row (inverse of :func:`conversation_row`).

    Raises ValueError when a turn's stored text differs from the text our model renders:
    offsets would then point at the wrong characters.
    """
    turns = []
    for t in row["turns"]:
        turn = Turn(
            index=t["index"],
            role=t["role"],
            content=t["content"],
            tool_calls=[
                {"id": c["id"], "name": c["name"], "arguments": loads(c["arguments"])}
                for c in t["tool_calls"]
            ],
            tool_call_id=t["tool_call_id"],
            name=t["name"],
        )
        if turn.text != t["text"]:
            raise ValueError(
                f"conversation {row['id']} turn {t['index']}: stored text differs from the "
                "rendered text; the release was made with an incompatible mtcabench"
            )
        turns.append(turn)
    return Conversation(
        id=row["id"],
        source=row["source"],
        domain=row["domain"],
        agent_model=row["agent_model"],
        task_id=row["task_id"],
        trial=row["trial"],
        turns=turns,
        metadata=loads(row["metadata"]),
        schema_version=row["schema_version"],
    )
