"""The annotation sheet: one conversation as a person reads it to write claims' graphs.

Every turn under a header with its index and role; an assistant turn's text exactly as the
spans' offsets index it (:attr:`~mtcabench.model.Turn.text`: its content, then one line per
tool call), so that a claim copied from the sheet is a substring of the turn; a tool turn names
the call it answers and the turn that issued it (the structural edge the guide asks for). The
system turn (the domain's policy) is long and the same over a domain's runs: the sheet can
point to a file holding it instead (``policy_note``).
"""

from __future__ import annotations

from mtcabench.model import Conversation, Role


def annotation_sheet(conversation: Conversation, policy_note: str | None = None) -> str:
    """The sheet of one conversation (Markdown-like plain text)."""
    c = conversation
    meta = c.metadata or {}
    head = [f"# conversation {c.id}",
            f"domain {c.domain} · agent {c.agent_model or 'unknown'} · task {c.task_id} · "
            f"reward {meta.get('reward', 'unknown')} · {len(c.turns)} turns", ""]
    out = head
    for turn in c.turns:
        label = f"## turn {turn.index} · {turn.role.value}"
        if turn.role is Role.TOOL:
            call = c.call_turn(turn.index)
            name = f" ({turn.name})" if turn.name else ""
            label += f" · answers call {turn.tool_call_id}{name} of turn {call}"
        elif turn.tool_calls:
            label += " · calls " + ", ".join(f"{t.id} {t.name}" for t in turn.tool_calls)
        out.append(label)
        if turn.role is Role.SYSTEM and policy_note is not None:
            out.append(policy_note)
        else:
            out.append(turn.text)
        out.append("")
    return "\n".join(out)
