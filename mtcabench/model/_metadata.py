"""Conversation metadata: what a reader may copy from a source into ``Conversation.metadata``,
by name (an allow-list, the same for every reader).

A run's settings are not data: upstream files carry provider arguments, API keys and
endpoints in them (one tau2-bench results file holds a provider key in
``info.agent_info.llm_args``), so no reader copies a settings object, or any field it does
not name here. Each reader builds its metadata with :func:`conversation_metadata`, which
refuses a key that is not listed: a new key is added here, with what it holds, on purpose.
What is a field of the record itself (source, domain, agent model, agent implementation,
task id, trial) is not repeated in the metadata.
"""

from __future__ import annotations

from typing import Any

#: Every key a reader may write into ``Conversation.metadata``, with what it holds.
METADATA_KEYS: dict[str, str] = {
    "origin": "where the conversation was read: the file's name, the format and the log's "
              "own ids (a run's position, a trace id, a sample id and epoch, a simulation id); "
              "for tau2-bench's later layouts, the layout (wrapper, list)",
    "reward": "the run's reward as its benchmark scored it (TauBench, tau2-bench)",
    "termination_reason": "why the run ended (tau2-bench: user_stop, max_steps, "
                          "too_many_errors, ...)",
    "expected_actions": "the task's ground truth: the tool calls it expects, each "
                        "{name, arguments, requestor} (requestor: assistant or user)",
    "expected_outputs": "what the task expects the agent to tell the user (TauBench's "
                        "task outputs, tau2-bench's communicate_info)",
    "system_turn": "how turn 0 was made where the log does not hold the system prompt "
                   "(tau2-bench): {rebuilt, template, instruction}, and policy_from where a "
                   "run without a policy of its own was given its file's",
    "unscored": "tau2-bench: true where the run has no reward_info (an error run its "
                "benchmark did not score; termination_reason says why)",
    "dialog_id": "ConFETTI: the dialog id of the longest prefix the dialog was rebuilt from",
    "record_ids": "ConFETTI: the ids of every prefix record of the dialog",
    "function": "ConFETTI: the tool schemas the dialog offers the model",
    "otel_spans": "OpenTelemetry GenAI: per turn, the span it was read from, {trace_id, "
                  "span_id} in hex (a tool result's execute_tool span where one is logged, "
                  "else the chat span that first sent or returned the message); what "
                  "`explain --otlp-*` links and `explain --phoenix` annotates",
}


def conversation_metadata(**values: Any) -> dict[str, Any]:
    """The metadata of a conversation from named values (None values left out); a key not
    in :data:`METADATA_KEYS` is a reader's bug, refused."""
    unknown = sorted(set(values) - METADATA_KEYS.keys())
    if unknown:
        raise ValueError(f"metadata keys not on the allow-list (mtcabench.model."
                         f"METADATA_KEYS): {', '.join(unknown)}")
    return {k: v for k, v in values.items() if v is not None}
