"""The name rule of sources, domains and agent models (mtcabench.model._names), and the bound
on trial numbers: what every record made or read is held to."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from mtcabench.model import (
    MAX_TRIAL,
    Conversation,
    Role,
    Turn,
    agent_model_name,
    domain_name,
    source_name,
)


def conversation(**fields) -> Conversation:
    base = {"id": "c", "source": "tau2", "domain": "airline",
            "turns": [Turn(index=0, role=Role.USER, content="hi")]}
    return Conversation(**{**base, **fields})


@pytest.mark.parametrize("given, name", [
    ("airline", "airline"), ("Airline", "airline"), ("airline ", "airline"),
    ("  Medical Triage ", "medical_triage"), ("telecom-solo", "telecom-solo"),
])
def test_a_domain_is_normalised_once(given, name):
    assert domain_name(given) == name
    assert domain_name(name) == name  # normal: unchanged
    assert conversation(domain=given).domain == name


@pytest.mark.parametrize("given, says", [
    ("telecom\n", "control character '\\n'"),
    ("air\x1b[2Jline", "control character '\\x1b'"),
    ("", "is empty"),
    ("   ", "is empty"),
    ("airline-conversations", "ends in '-conversations'"),
    ("spans", "config every release has"),
    ("all", "config every release has"),
    ("<b>d</b>", "holds '<'"),
    ("air/line", "holds '/'"),
    ("café", "holds 'é'"),
    ("-x", "holds '-'"),
    ("a" * 101, "more than 100"),
])
def test_a_domain_that_cannot_name_a_file_and_a_config_is_refused(given, says):
    with pytest.raises(ValueError, match="the domain") as exc:
        domain_name(given)
    assert says in str(exc.value)
    with pytest.raises(ValidationError, match="domain"):
        conversation(domain=given)


def test_a_source_follows_the_domain_rule():
    assert source_name(" TAU2 ") == "tau2"
    with pytest.raises(ValueError, match="the source 'spans' is the name of a config"):
        source_name("spans")
    with pytest.raises(ValidationError, match="source"):
        conversation(source="tau2\n")


@pytest.mark.parametrize("given", [
    "gpt-4.1", "ft:gpt-4.1-2025-04-14:sierra:tau2-full-sft:BzrYdMNm", "deepseek/deepseek-chat",
    "ollama_chat/qwen2.5:7b", "Qwen2.5-7B-Instruct",
])
def test_an_agent_model_keeps_its_case(given):
    assert agent_model_name(given) == given == conversation(agent_model=given).agent_model
    assert agent_model_name(f" {given} ") == given


@pytest.mark.parametrize("given, says", [
    ("unknown", "what mtcabench shows for conversations that name no agent"),
    ("Unknown", "what mtcabench shows"),
    ("http://admin:SECRET@host:8000/v1#gpt-4.1", "endpoint URL"),
    ("gpt|4o", "holds '|'"),
    ("gpt 4o", "holds ' '"),
    ("<img src=x onerror=alert(1)>", "holds '<'"),
    ("gpt\n", "control character"),
    ("", "is empty"),
])
def test_an_agent_model_that_reads_as_something_else_is_refused(given, says):
    with pytest.raises(ValueError, match="the agent model") as exc:
        agent_model_name(given)
    assert says in str(exc.value)
    assert "SECRET" not in str(exc.value)
    with pytest.raises(ValidationError):
        conversation(agent_model=given)


def test_no_agent_stays_none():
    assert conversation().agent_model is None and agent_model_name(None) is None


@pytest.mark.parametrize("trial", [-1, MAX_TRIAL + 1, 2**63, 10**20])
def test_a_trial_past_the_release_s_column_is_refused(trial):
    with pytest.raises(ValidationError, match="trial"):
        conversation(trial=trial)
    assert conversation(trial=MAX_TRIAL).trial == MAX_TRIAL
