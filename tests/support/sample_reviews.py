"""Review decisions written by hand for the bundled sample conversations (raw/sample/).

Each span is found in its turn's text by its words, so the offsets are right by
construction; the graphs are the provenance a careful reader gives them, and cover the four
dependency types, human and automatic decisions, edits, rejections and several decisions on
one span. Also used by benchmarks/release_build.py to generate a full-size release.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from mtcabench.ingest import read_taubench
from mtcabench.model import (
    Annotator,
    Conversation,
    DecisionSource,
    DependencyType,
    Edge,
    EdgeKind,
    GraphEdit,
    ProvenanceGraph,
    ReviewDecision,
    TargetSpan,
    Verdict,
    span_id,
)

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "raw" / "sample" / "sample-airline.json"
S1 = "taubench/airline/sample/task-s1/trial-0"
S2 = "taubench/airline/sample/task-s2/trial-0"
S3 = "taubench/airline/sample/task-s3/trial-0"

ANNOTATOR = Annotator(name="llm", model="SmolLM2-135M-Instruct", prompt_version="verify-v1",
                      prompt_hash="a" * 64)
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)

#: (conversation, turn, span words, type, content edges child->parent, tool turns in graph)
SPANS = [
    (S1, 4, "4WQ150 and VAAOXJ", DependencyType.DIRECT, [(4, 3)], [3]),
    (S1, 8, "credit_card_7815826", DependencyType.DIRECT, [(8, 7)], [7]),
    (S1, 10, "HAT136", DependencyType.CHAINED, [(10, 8), (8, 7)], [7]),
    (S1, 10, "$151", DependencyType.DIRECT, [(10, 7)], [7]),
    (S2, 6, "$72", DependencyType.MULTI_SOURCE, [(6, 5), (6, 3)], [5, 3]),
    (S2, 6, "HAT227", DependencyType.DIRECT, [(6, 5)], [5]),
    (S3, 4, "18:25:00", DependencyType.HALLUCINATION, [(4, 3)], [3]),
    (S3, 4, "your seat 14C is confirmed", DependencyType.HALLUCINATION, [(4, 1)], []),
    (S3, 8, "transferred to a human agent", DependencyType.MULTI_SOURCE, [(8, 7), (8, 5)], [7]),
]


def sample_conversations() -> dict[str, Conversation]:
    return {c.id: c for c in read_taubench(SAMPLE)}


def make_span(conv: Conversation, turn: int, words: str) -> TargetSpan:
    text = conv.turns[turn].text
    start = text.index(words)
    return TargetSpan(turn=turn, start=start, end=start + len(words), text=words)


def make_graph(conv: Conversation, target: int, content: list[tuple[int, int]],
               tools: list[int]) -> ProvenanceGraph:
    edges = [Edge(child=c, parent=p) for c, p in content]
    edges += [Edge(child=t, parent=conv.call_turn(t), kind=EdgeKind.STRUCTURAL) for t in tools]
    nodes = sorted({target} | {e.child for e in edges} | {e.parent for e in edges})
    return ProvenanceGraph(target=target, nodes=nodes, edges=edges)


def decision(conv: Conversation, turn: int, words: str, dtype: DependencyType,
             content: list[tuple[int, int]], tools: list[int], *, verdict=Verdict.ACCEPT,
             source=DecisionSource.HUMAN, reviewer: str | None = "ana@example.org",
             at: datetime = T0, edit: GraphEdit | None = None) -> ReviewDecision:
    span = make_span(conv, turn, words)
    return ReviewDecision(
        id=span_id(conv.id, span), conversation_id=conv.id, span=span, dependency_type=dtype,
        graph=make_graph(conv, turn, content, tools), verdict=verdict, decision_source=source,
        reviewer=reviewer if source is DecisionSource.HUMAN else None, decided_at=at,
        edited=edit is not None, edit=edit, annotator=ANNOTATOR,
    )


def sample_decisions(convs: dict[str, Conversation] | None = None) -> list[ReviewDecision]:
    """Decisions on the nine sample spans: seven released, one rejected, one overturned.

    - spans 0-5: accepted by ana (span 2 with an edit);
    - span 1 also has an earlier automatic acceptance, ignored once a person decided;
    - span 5 was rejected by ben, then accepted by ana and carla: released (2 against 1);
    - span 6 (hallucination): accepted automatically only (decision_source auto);
    - span 7: ana accepted, then changed her mind and rejected it: not released;
    - span 8: accepted automatically, then rejected by ben: not released.
    """
    convs = convs or sample_conversations()
    out = []
    for i, (cid, turn, words, dtype, content, tools) in enumerate(SPANS):
        c = convs[cid]
        at = T0 + timedelta(minutes=10 * i)
        args = (c, turn, words, dtype, content, tools)
        if i == 2:
            out.append(decision(*args, verdict=Verdict.ACCEPT_WITH_EDITS, at=at,
                                edit=GraphEdit(edges_added=[(10, 8)], edges_removed=[(10, 7)],
                                               type_changed=("direct", "chained"))))
        elif i == 1:
            out.append(decision(*args, source=DecisionSource.AUTO, at=at - timedelta(days=1)))
            out.append(decision(*args, at=at))
        elif i == 5:
            out.append(decision(*args, verdict=Verdict.REJECT, reviewer="ben@example.org", at=at))
            out.append(decision(*args, at=at + timedelta(minutes=1)))
            out.append(decision(*args, reviewer="carla@example.org", at=at + timedelta(minutes=2)))
        elif i == 6:
            out.append(decision(*args, source=DecisionSource.AUTO, at=at))
        elif i == 7:
            out.append(decision(*args, at=at))
            out.append(decision(*args, verdict=Verdict.REJECT, at=at + timedelta(hours=1)))
        elif i == 8:
            out.append(decision(*args, source=DecisionSource.AUTO, at=at))
            out.append(decision(*args, verdict=Verdict.REJECT, reviewer="ben@example.org",
                                at=at + timedelta(hours=1)))
        else:
            out.append(decision(*args, at=at))
    return out


#: What sample_decisions() releases: span index -> (decision source, verdict).
RELEASED = {0: "human", 1: "human", 2: "human", 3: "human", 4: "human", 5: "human", 6: "auto"}
