"""Fixtures of the review tests: a real Label Studio server, the sample, hand-built candidates.

The server is started once per session from the migrated template (the first run on a
machine migrates it, about 3 minutes); a failure to start fails the tests, never skips.
Each test uses its own project (a fresh title), so tests do not see each other's tasks.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from mtcabench.ingest import read_taubench
from mtcabench.io import write_records
from mtcabench.model import (
    AlternativeGraph,
    Annotator,
    Candidate,
    Conversation,
    DependencyType,
    Edge,
    EdgeKind,
    ProvenanceGraph,
    Role,
    TargetSpan,
    ToolCall,
    Turn,
    span_id,
)
from mtcabench.review import Connection, ReviewClient
from mtcabench.services.label_studio import LabelStudioServer, start_label_studio

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "raw" / "sample" / "sample-airline.json"

S1 = "taubench/airline/sample/task-s1/trial-0"
S2 = "taubench/airline/sample/task-s2/trial-0"
S3 = "taubench/airline/sample/task-s3/trial-0"
XSS = "test/xss/conversation-1"

LLM = Annotator(name="llm", model="smollm2-135m", prompt_version="verify-v1")
LINEAGE = Annotator(name="lineage", rules_version="r1")

# Markup a reviewer's browser must show as text and never run.
XSS_USER = ('Please check <img src=x onerror="window.__mtca_xss=(window.__mtca_xss||0)+1"> '
            'and <script>window.__mtca_xss=(window.__mtca_xss||0)+1</script> my booking ZX9.')
XSS_TOOL = '{"note": "<img src=y onerror=window.__mtca_xss=7>", "code": "ZX9"}'


def content(child: int, parent: int) -> Edge:
    return Edge(child=child, parent=parent, kind=EdgeKind.CONTENT)


def structural(child: int, parent: int) -> Edge:
    return Edge(child=child, parent=parent, kind=EdgeKind.STRUCTURAL)


def make_candidate(conv: Conversation, turn: int, text: str, dep: DependencyType,
                   edges: list[Edge], *, annotator: Annotator = LLM,
                   alternatives: list[AlternativeGraph] | None = None) -> Candidate:
    start = conv.turns[turn].text.index(text)
    span = TargetSpan(turn=turn, start=start, end=start + len(text), text=text)
    nodes = sorted({turn} | {e.child for e in edges} | {e.parent for e in edges})
    return Candidate(
        id=span_id(conv.id, span), conversation_id=conv.id, span=span, dependency_type=dep,
        graph=ProvenanceGraph(target=turn, nodes=nodes, edges=edges), annotator=annotator,
        confidence=0.8, alternatives=alternatives or [],
    )


def xss_conversation() -> Conversation:
    return Conversation(
        id=XSS, source="test", domain="xss", turns=[
            Turn(index=0, role=Role.SYSTEM, content="You are a <b>helpful</b> agent."),
            Turn(index=1, role=Role.USER, content=XSS_USER),
            Turn(index=2, role=Role.ASSISTANT, tool_calls=[
                ToolCall(id="c1", name="lookup", arguments={"q": "<script>window.__mtca_xss=9</script>"})]),
            Turn(index=3, role=Role.TOOL, tool_call_id="c1", name="lookup", content=XSS_TOOL),
            Turn(index=4, role=Role.ASSISTANT,
                 content='Booking ZX9 is fine. <img src=z onerror="window.__mtca_xss=5"> Done.'),
        ])


@pytest.fixture(scope="session")
def conversations() -> dict[str, Conversation]:
    convs = {c.id: c for c in read_taubench(SAMPLE)}
    convs[XSS] = xss_conversation()
    return convs


@pytest.fixture(scope="session")
def candidates(conversations) -> list[Candidate]:
    return sample_candidates(conversations)


def sample_candidates(conversations: dict[str, Conversation]) -> list[Candidate]:
    """Hand-built candidates on the sample (one per dependency type) and the XSS conversation."""
    s1, s2, s3, x = (conversations[k] for k in (S1, S2, S3, XSS))
    chained = make_candidate(s1, 10, "HAT136", DependencyType.CHAINED,
                             [content(10, 8), content(8, 7), structural(7, 6)],
                             alternatives=[AlternativeGraph(
                                 annotator=LINEAGE, dependency_type=DependencyType.DIRECT,
                                 graph=ProvenanceGraph(target=10, nodes=[6, 7, 10],
                                                       edges=[content(10, 7), structural(7, 6)]),
                                 edge_f1=0.4)])
    return [
        make_candidate(s1, 4, "4WQ150 and VAAOXJ", DependencyType.DIRECT,
                       [content(4, 3), structural(3, 2)]),
        chained,
        make_candidate(s2, 6, "$72 would remain to pay", DependencyType.MULTI_SOURCE,
                       [content(6, 5), structural(5, 4), content(6, 3), structural(3, 2)],
                       alternatives=[AlternativeGraph(
                           annotator=LINEAGE, graph=ProvenanceGraph(
                               target=6, nodes=[2, 3, 4, 5, 6],
                               edges=[content(6, 5), structural(5, 4), content(6, 3),
                                      structural(3, 2)]), edge_f1=1.0)]),
        make_candidate(s3, 4, "18:25:00", DependencyType.HALLUCINATION,
                       [content(4, 3), structural(3, 2)], annotator=LINEAGE),
        make_candidate(x, 4, "Booking ZX9 is fine.", DependencyType.MULTI_SOURCE,
                       [content(4, 1), content(4, 3), structural(3, 2)]),
    ]


@pytest.fixture(scope="session")
def conversations_file(tmp_path_factory, conversations) -> Path:
    path = tmp_path_factory.mktemp("review-inputs") / "conversations.jsonl"
    write_records(path, conversations.values())
    return path


@pytest.fixture(scope="session")
def candidates_file(tmp_path_factory, candidates) -> Path:
    path = tmp_path_factory.mktemp("review-inputs") / "candidates.jsonl"
    write_records(path, candidates)
    return path


@pytest.fixture(scope="session")
def label_studio() -> LabelStudioServer:
    """A real local Label Studio for the whole session; stopped at the end."""
    try:
        server = start_label_studio()
    except Exception as exc:  # noqa: BLE001 - the reason must be in the failure
        pytest.fail(f"the local Label Studio server did not start: {exc}")
    yield server
    server.stop()


@pytest.fixture
def connection(label_studio) -> Connection:
    return Connection.resolve(label_studio.url, label_studio.api_key)


@pytest.fixture
def client(connection) -> ReviewClient:
    with ReviewClient(connection) as c:
        yield c


@pytest.fixture
def project_title() -> str:
    return f"review-test-{uuid.uuid4().hex[:8]}"
