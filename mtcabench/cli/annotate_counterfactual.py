"""`mtcabench annotate counterfactual`: hallucinations made by replacing a value of an answer."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import typer

from mtcabench.lineage import (
    COUNTERFACTUAL_VERSION,
    check_real_conversations,
    propose_counterfactuals,
)
from mtcabench.graph import depth
from mtcabench.io import (
    all_or_nothing,
    check_output_path,
    check_outputs_are_not_inputs,
    load_conversations,
    write_records,
)
from mtcabench.progress import err_console, tracked
from mtcabench.terminal import shown


def counterfactual(
    in_path: Path = typer.Option(..., "--in", "-i", help="Conversations file (JSONL) to read."),
    out: Path = typer.Option(..., "--out", "-o", help="Candidates file (JSONL) to write: one "
                             "counterfactual hallucination per edit."),
    conversations_out: Path = typer.Option(..., "--conversations-out", help="Conversations "
                                           "file (JSONL) to write: one edited conversation "
                                           "per candidate."),
    per_conversation: int = typer.Option(3, min=1, help="Most edits drawn per conversation."),
    seed: int = typer.Option(0, help="Seed of the draw (per conversation, by its id)."),
) -> None:
    """Replace a value of real answers with another entity's value of the same field.

    Each edit is a conversation (the real one up to the edited answer) and a candidate with
    origin "counterfactual", the edit, and the gold graph of the turn that primed the
    replacement. Append both files to the real ones before review and release.
    """
    check_outputs_are_not_inputs([in_path], [out, conversations_out])
    if out.resolve() == conversations_out.resolve():
        raise typer.BadParameter("--out and --conversations-out name the same file")
    for path in (out, conversations_out):  # both, before the first is replaced
        check_output_path(path)
    conversations = load_conversations(in_path)
    check_real_conversations(conversations.values(), in_path)
    with tracked(conversations.values(), "counterfactual", total=len(conversations)) as convs:
        pairs = list(propose_counterfactuals(convs, per_conversation=per_conversation,
                                             seed=seed))
    with all_or_nothing():  # candidates without their conversations are of no use
        write_records(conversations_out, (conv for conv, _ in pairs))
        n = write_records(out, (cand for _, cand in pairs))
    err_console.print(f"wrote {n} counterfactual candidates to {shown(out)} and their "
                      f"conversations to {shown(conversations_out)}")
    fields = Counter(c.counterfactual.field for _, c in pairs if c.counterfactual)
    depths = Counter(depth(c.graph) for _, c in pairs if c.graph)
    edited = len({c.counterfactual.conversation_id for _, c in pairs if c.counterfactual})
    typer.echo(f"{COUNTERFACTUAL_VERSION}: {n} spans from {edited} of {len(conversations)} "
               "conversations")
    typer.echo("spans by field: " + (", ".join(f"{k} {v}" for k, v in fields.most_common())
                                     or "none"))
    typer.echo("spans by depth: " + (", ".join(f"{k}: {v}" for k, v in sorted(depths.items()))
                                     or "none"))


def register(group: typer.Typer) -> None:
    group.command("counterfactual")(counterfactual)
