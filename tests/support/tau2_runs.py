"""Small tau2-bench results files written by hand for the tests (never excerpts of real runs):
an airline-like run of the default agent, and a telecom-like run where the user calls tools
on their own phone. Each function returns a fresh value to mutate."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

POLICY = "# Skyway policy\n\nThe current time is 2030-01-02 10:00.\nHelp the customer {kindly}."
PHONE_POLICY = "# Ringo Mobile policy\n\nGuide the customer through fixes on their own phone."


def _info(domain: str, policy: str, model: str, implementation: str) -> dict[str, Any]:
    return {
        "git_commit": "0000000000000000000000000000000000000000",
        "num_trials": 1,
        "user_info": {"implementation": "user_simulator", "llm": "gpt-4.1",
                      "llm_args": {"temperature": 0.0}},
        "agent_info": {"implementation": implementation, "llm": model,
                       "llm_args": {"temperature": 0.0}},
        "environment_info": {"domain_name": domain, "policy": policy, "tool_defs": {}},
        "seed": 7,
    }


def airline(model: str = "gpt-test", implementation: str = "llm_agent") -> dict[str, Any]:
    """One airline-like simulation: greeting, a lookup by the agent, an answer in JSON."""
    return {
        "timestamp": "2030-01-02T10:00:00",
        "info": _info("airline", POLICY, model, implementation),
        "tasks": [{"id": "7", "evaluation_criteria": {
            "actions": [{"action_id": "a0", "requestor": "assistant", "name": "get_booking",
                         "arguments": {"booking_id": "BK7Q2"}, "info": None,
                         "compare_args": None}],
            "communicate_info": ["BK7Q2 leaves at 09:40"]}}],
        "simulations": [{
            "id": "sim-airline-1", "task_id": "7", "trial": 0,
            "termination_reason": "user_stop", "reward_info": {"reward": 1.0},
            "agent_cost": 0.01,
            "messages": [
                {"role": "assistant", "content": "Hi! How can I help you today?",
                 "tool_calls": None, "turn_idx": 0},
                {"role": "user", "content": "When does my booking BK7Q2 leave?",
                 "tool_calls": None, "turn_idx": 1},
                {"role": "assistant", "content": None, "turn_idx": 2, "tool_calls": [
                    {"id": "call_b", "name": "get_booking",
                     "arguments": {"booking_id": "BK7Q2"}, "requestor": "assistant"}]},
                {"id": "call_b", "role": "tool", "requestor": "assistant", "error": False,
                 "content": "{\"booking_id\": \"BK7Q2\", \"departs\": \"09:40\"}",
                 "turn_idx": 3},
                {"role": "assistant", "turn_idx": 4, "tool_calls": None,
                 "content": "{\"message\": \"BK7Q2 leaves at 09:40.\"}"},
            ]}],
    }


def telecom(model: str = "gpt-test", implementation: str = "llm_agent") -> dict[str, Any]:
    """One telecom-like simulation: the agent asks, the user checks their own phone (two
    calls of the user, answered), the user relays, the agent concludes, quoting a value of
    the user's own tool result (its graph reaches the user's call)."""
    return {
        "timestamp": "2030-01-02T10:00:00",
        "info": _info("telecom", PHONE_POLICY, model, implementation),
        "tasks": [{"id": "[no_service]airplane_mode_on[PERSONA:None]", "evaluation_criteria": {
            "actions": [{"action_id": "t0", "requestor": "user", "name": "toggle_airplane_mode",
                         "arguments": {}, "info": None, "compare_args": None}],
            "communicate_info": None}}],
        "simulations": [{
            "id": "sim-telecom-1", "task_id": "[no_service]airplane_mode_on[PERSONA:None]",
            "trial": 2, "termination_reason": "user_stop", "reward_info": {"reward": 0.0},
            "messages": [
                {"role": "assistant", "content": "Hi! How can I help you today?"},
                {"role": "user", "content": "My phone has no service."},
                {"role": "assistant", "content": "Please check your status bar for me."},
                {"role": "user", "content": None, "tool_calls": [
                    {"id": "u1", "name": "check_status_bar", "arguments": {},
                     "requestor": "user"},
                    {"id": "u2", "name": "check_network", "arguments": {"detail": "full"},
                     "requestor": "user"}]},
                {"id": "u1", "role": "tool", "requestor": "user", "error": False,
                 "content": "Status bar: airplane mode ON, signal none"},
                {"id": "u2", "role": "tool", "requestor": "user", "error": False,
                 "content": "{\"network\": \"none\", \"cell_id\": \"CX-20417\"}"},
                {"role": "user", "content": "It says airplane mode is ON."},
                {"role": "assistant",
                 "content": "Airplane mode is ON: please turn it off (cell CX-20417)."},
            ]}],
    }


#: A policy whose title names its domain, as the later layouts' policies do.
CLINIC_POLICY = "# Harbor Clinic Agent Policy\n\nThe current time is 2031-03-04 09:00.\nBe precise."
#: What a provider's raw response and a run's settings may hold: never in a record.
PROVIDER_SECRET = "sk-live-DO-NOT-COPY-4242"


def later_simulation(task_id: str = "3", policy: str | None = CLINIC_POLICY) -> dict[str, Any]:
    """One simulation as tau2's later layouts write it: its own ``policy``, and messages with
    the provider's output and speech fields beside the ones a reader takes."""
    extra = {"turn_idx": 0, "timestamp": "2031-03-04T09:00:01", "cost": 0.002,
             "usage": {"prompt_tokens": 812, "completion_tokens": 9},
             "raw_data": {"model": "user-sim-model", "api_base": "https://llm.example.test/v1",
                          "headers": {"authorization": PROVIDER_SECRET}},
             "is_audio": False, "audio_path": None, "audio_format": None,
             "speech_effects": None, "turn_taking_action": None, "contains_speech": True}
    return {
        "id": f"sim-clinic-{task_id}", "task_id": task_id, "trial": 0, "seed": 11,
        "termination_reason": "user_stop", "agent_cost": 0.03, "user_cost": 0.01,
        "reward_info": {"reward": 1.0, "info": {"judge": PROVIDER_SECRET}}, "info": None,
        "mode": "half_duplex", "speech_environment": None, "policy": policy,
        "messages": [
            {**extra, "role": "assistant", "content": "Hi! How can I help you today?",
             "tool_calls": None},
            {**extra, "role": "user", "content": "I am Ada Quill, born 1990-02-03."},
            {**extra, "role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "name": "find_patient_by_name_dob", "requestor": "assistant",
                 "arguments": {"name": "Ada Quill", "dob": "1990-02-03"}}]},
            {**extra, "role": "tool", "id": "c1", "requestor": "assistant", "error": False,
             "content": "{\"patient_id\": \"PT-5521\"}"},
            {**extra, "role": "assistant", "content": "Found you: patient PT-5521.",
             "tool_calls": None},
        ]}


def wrapper(*sims: dict[str, Any], domain: str = "harbor_clinic",
            agent: str = "adaptive_agent", model: str = "model-x") -> dict[str, Any]:
    """The wrapper layout ``{domain, agent, model, total_tasks, passed, pass_rate,
    simulations}`` (no ``info``, no ``tasks``)."""
    sims = sims or (later_simulation(),)
    return {"domain": domain, "agent": agent, "model": model, "total_tasks": len(sims),
            "passed": len(sims), "pass_rate": 100.0, "simulations": list(sims)}


def error_run(task_id: str = "9") -> dict[str, Any]:
    """A run that never started, as the later layouts record one: no reward, no messages, no
    policy."""
    return {"id": f"sim-error-{task_id}", "task_id": task_id, "trial": 0,
            "termination_reason": "infrastructure_error", "reward_info": None,
            "policy": None, "messages": []}


def solo(model: str = "gpt-test") -> dict[str, Any]:
    """A telecom-like run of tau2's solo agent: no user at all; the task's ticket says who
    the customer is, and the agent's first call uses the number it gives."""
    run = telecom(model, "llm_agent_solo")
    run["tasks"][0]["ticket"] = "Customer Ben Ortiz, phone number 555-010-7788, has no service."
    run["simulations"][0]["messages"] = [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "s1", "name": "get_customer_by_phone", "requestor": "assistant",
             "arguments": {"phone_number": "555-010-7788"}}]},
        {"role": "tool", "id": "s1", "requestor": "assistant",
         "content": "{\"customer_id\": \"C7788\", \"line\": \"L9\"}"},
        {"role": "assistant", "content": "###STOP###", "tool_calls": None}]
    return run


def write(path: Path, value: Any) -> Path:
    """Write a results value as its file (as tau2 writes them: indented JSON)."""
    path.write_text(json.dumps(value, indent=2))
    return path


def fresh(value: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(value)
