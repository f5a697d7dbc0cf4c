"""lineage-v4 on the domains and runs added in issue 45: medical_triage (and the runs named
medical), whose record ids and triage levels are one value each; telecom worked by the solo
agent, with no user, where lineage proposes nothing (its answers are tool calls and a stop
token); the earlier domains' tokens unchanged."""

from __future__ import annotations

from collections import Counter

import pytest

from mtcabench.lineage import LineageConfig, LineageSummary, propose_lineage
from mtcabench.graph import check_graph
from mtcabench.ingest import read_tau2
from mtcabench.model import Conversation, Role, ToolCall, Turn

from tests.support.paths import every_real_runs_file


def _clinic(domain: str) -> Conversation:
    """A user gives a patient id; the lookup fails; the answer repeats the id and a level."""
    return Conversation(id=f"t/{domain}", source="t", domain=domain, turns=[
        Turn(index=0, role=Role.SYSTEM, content="# Medical Triage Agent Policy\nBe careful."),
        Turn(index=1, role=Role.USER, content="My patient ID is **PS-84201**, level ESI-3."),
        Turn(index=2, role=Role.ASSISTANT, tool_calls=[
            ToolCall(id="c1", name="get_patient_details", arguments={"patient_id": "PS-84201"})]),
        Turn(index=3, role=Role.TOOL, tool_call_id="c1", name="get_patient_details",
             content="Error: Patient PS-84201 not found"),
        Turn(index=4, role=Role.ASSISTANT,
             content="I could not find patient ID PS-84201 (you said ESI-3)."),
    ])


@pytest.mark.parametrize("domain", ["medical_triage", "medical"])
def test_a_medical_record_id_and_a_triage_level_are_one_value_each(domain):
    cands = list(propose_lineage([_clinic(domain)], LineageConfig()))
    spans = sorted(c.span.text for c in cands)
    assert spans == ["ESI-3", "PS-84201"]
    for c in cands:
        assert check_graph(c.graph, _clinic(domain), c.span, record=c.id) == []


def test_other_domains_keep_their_tokens():
    # airline's vocabulary has no such token: the id is a value only as the call's argument,
    # and the triage level is none
    spans = {c.span.text for c in propose_lineage([_clinic("airline")], LineageConfig())}
    assert spans == {"PS-84201"}


@pytest.fixture(scope="module")
def new_runs(tmp_path_factory):
    files = every_real_runs_file()
    if files is None:
        pytest.fail("the real runs files are needed: `mtcabench raw fetch --from ../shared/raw`")
    by_name = {f.name: f for f in files}
    convs = read_tau2(by_name["medical_triage-claude-opus-4-6-cascata.json"])
    convs += read_tau2(by_name["telecom-solo-gpt-4.1.json"])
    convs += read_tau2(by_name["telecom-solo-ft-gpt-4.1.json"])
    summary = LineageSummary()
    return convs, list(propose_lineage(convs, LineageConfig(), summary=summary)), summary


@pytest.mark.real_runs
def test_medical_triage_spans_are_the_user_s_values_and_whole_record_ids(new_runs):
    convs, cands, summary = new_runs
    by_id = {c.id: c for c in convs}
    medical = [c for c in cands if by_id[c.conversation_id].domain == "medical_triage"]
    # every lookup of these runs failed ("Error: Patient ... not found"): the values are
    # the names, dates of birth, ids and readings the user gave, and no hallucination
    assert summary.as_dict()["by_type"] == {"direct": 117, "chained": 24, "multi-source": 4,
                                            "hallucination": 0}
    texts = Counter(c.span.text for c in medical)
    assert texts["PH-884201"] > 0 and texts["884201"] == 0 and texts["PT-20451"] > 0
    for c in medical:
        assert check_graph(c.graph, by_id[c.conversation_id], c.span, record=c.id) == []


@pytest.mark.real_runs
def test_the_solo_runs_get_no_span_their_answers_being_calls_and_a_stop(new_runs):
    convs, cands, _ = new_runs
    solo = {c.id for c in convs if c.agent_implementation == "llm_agent_solo"}
    assert len(solo) == 80 and not [c for c in cands if c.conversation_id in solo]
    texts = Counter(t.content for c in convs if c.id in solo for t in c.turns
                    if t.role is Role.ASSISTANT and t.content and not t.tool_calls)
    assert set(texts) <= {"###STOP###"} | {t for t in texts if len(t) < 80}
