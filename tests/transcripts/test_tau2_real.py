"""The 19 real tau2-bench results files (663 runs): every one ingests, with the counts per
domain and agent the upstream README gives; telecom's user calls and their results form the
right structure; no run's settings reach the records."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.graph import check_graph, with_structural_edges
from mtcabench.io import read_records
from mtcabench.model import METADATA_KEYS, Conversation, Edge, ProvenanceGraph, Role

from tests.support.paths import release_2_tau2_files

#: Runs per (domain, agent model, implementation), as the upstream files hold them.
EXPECTED = {
    ("airline", "claude-opus-4-6", "experimental_agent"): 50,
    ("airline", "claude-opus-4-6", "llm_agent"): 44,
    ("airline", "claude-sonnet-4-5", "llm_agent"): 50,
    ("airline", "claude-sonnet-4-6", "ironforge"): 7,
    ("airline", "deepseek/deepseek-chat", "ironforge"): 4,
    ("airline", "ft:gpt-4.1-2025-04-14:sierra:tau2-full-sft:BzrYdMNm", "llm_agent"): 20,
    ("airline", "gpt-4.1", "llm_agent"): 20,
    ("airline", "gpt-4.1-mini-2025-04-14", "llm_agent"): 50,
    ("airline", "gpt-5.4", "ironforge"): 7,
    ("airline", "gpt-5.4", "llm_agent"): 50,
    ("airline", "o3", "ironforge"): 9,
    ("airline", "whissle", "whissle"): 50,
    ("airline", "xai/grok-3", "ironforge"): 8,
    ("retail", "ft:gpt-4.1-2025-04-14:sierra:tau2-full-sft:BzrYdMNm", "llm_agent"): 40,
    ("retail", "gpt-4.1", "llm_agent"): 40,
    ("retail", "gpt-4.1-mini-2025-04-14", "llm_agent"): 114,
    ("telecom", "ft:gpt-4.1-2025-04-14:sierra:tau2-full-sft:BzrYdMNm", "llm_agent"): 40,
    ("telecom", "gpt-4.1", "llm_agent"): 40,
    ("telecom", "gpt-4o", "llm_agent"): 20,
}


@pytest.fixture(scope="module")
def ingested(tau2_results, tmp_path_factory):
    files = release_2_tau2_files(tau2_results)
    out = tmp_path_factory.mktemp("tau2") / "conversations.jsonl"
    res = CliRunner().invoke(app, ["ingest", "tau2", *map(str, files), "--out", str(out)])
    assert res.exit_code == 0, res.output
    return out, list(read_records(out, Conversation))


def test_all_19_files_ingest_with_the_counts_per_domain_and_agent(ingested):
    _, convs = ingested
    assert len(convs) == 663 and len({c.id for c in convs}) == 663
    assert Counter(c.domain for c in convs) == {"airline": 369, "retail": 194, "telecom": 100}
    assert Counter((c.domain, c.agent_model, c.agent_implementation) for c in convs) == EXPECTED
    assert len({c.agent_model for c in convs}) == 12
    # two submissions of one model: distinct ids by their implementation
    opus = {c.id.split("/")[3] for c in convs if c.agent_model == "claude-opus-4-6"}
    assert opus == {"experimental_agent", "llm_agent"}


def test_each_conversation_opens_with_the_system_turn_and_the_greeting(ingested):
    _, convs = ingested
    templates = Counter()
    for c in convs:
        assert c.turns[0].role is Role.SYSTEM and c.turns[1].role is Role.ASSISTANT
        template = c.metadata["system_turn"]["template"]
        templates[template] += 1
        if c.agent_implementation == "llm_agent":
            assert template == "llm_agent" and c.turns[0].content.startswith("<instructions>\n")
            assert c.turns[0].content.endswith("\n</policy>")
        else:
            assert template == "policy-only" and not c.turns[0].content.startswith("<")
    assert templates == {"llm_agent": 528, "policy-only": 135}


def test_telecom_user_calls_and_their_results_form_the_right_structure(ingested):
    _, convs = ingested
    user_calls = answered = 0
    for c in (c for c in convs if c.domain == "telecom"):
        for t in c.turns:
            if t.role is Role.USER and t.tool_calls:
                user_calls += len(t.tool_calls)
            if t.role is Role.TOOL and c.turns[c.call_turn(t.index)].role is Role.USER:
                answered += 1
                call = c.call_turn(t.index)
                # the result's structural edge goes to the user turn that called, a leaf
                alone = with_structural_edges(ProvenanceGraph(target=t.index, nodes=[t.index],
                                                              edges=[]), c)
                assert [e.pair for e in alone.edges] == [(t.index, call)]
                answer = next((a.index for a in c.turns[t.index:] if a.role is Role.ASSISTANT),
                              None)
                if answer is not None:  # an answer drawing on the result: a valid graph
                    g = with_structural_edges(ProvenanceGraph(
                        target=answer, nodes=[t.index, answer],
                        edges=[Edge(child=answer, parent=t.index)]), c)
                    assert check_graph(g, c) == []
    assert user_calls == answered == 420 + 482 + 125  # every user call answered
    assert not any(t.tool_calls for c in convs if c.domain != "telecom" for t in c.turns
                   if t.role is Role.USER)


def test_only_allow_listed_metadata_and_no_settings(ingested):
    out, convs = ingested
    assert {k for c in convs for k in c.metadata} <= set(METADATA_KEYS)
    text = out.read_text()
    for setting in ('"llm_args"', '"temperature"', '"user_info"', '"agent_info"',
                    '"tool_defs"', '"agent_cost"', '"raw_data"', '"usage"'):
        assert setting not in text
    reasons = Counter(json.loads(line)["metadata"]["termination_reason"]
                      for line in text.splitlines())
    assert reasons == {"user_stop": 657, "max_steps": 5, "too_many_errors": 1}
