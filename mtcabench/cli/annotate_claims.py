"""`mtcabench annotate claims`: claim targets (the proposer) and the annotated set's pass 1."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import typer

from mtcabench.annotate.claims import propose_claims, read_annotations
from mtcabench.io import check_outputs_are_not_inputs, load_conversations, write_records
from mtcabench.model import Annotator, Proposal, span_id
from mtcabench.progress import err_console, tracked
from mtcabench.terminal import shown

group = typer.Typer(help="Claims: propose claim targets; read hand-annotated claim graphs.",
                    no_args_is_help=True)

#: Who proposed a claim target (the proposer writes no graph).
PROPOSER = Annotator(name="claims-proposer", rules_version="claims-proposer-1")


@group.command("propose")
def propose(
    in_path: Path = typer.Option(..., "--in", "-i", help="Conversations file (JSONL) to read."),
    out: Path = typer.Option(..., "--out", "-o", help="Claim targets (proposals without a "
                             "graph, JSONL) to write."),
) -> None:
    """Propose claim targets in the agent's answers, typed by their wording (model-free).

    One proposal per clause that asserts something (questions, offers, greetings and fixed
    boilerplate left out), with its claim kind and no graph: the targets an annotator (a
    person, or `annotate run`) writes graphs for. docs/claims.md states the rules.
    """
    check_outputs_are_not_inputs([in_path], [out])
    conversations = load_conversations(in_path)
    kinds: Counter[str] = Counter()

    def proposals(convs):
        for conv in convs:
            for p in propose_claims(conv):
                kinds[p.claim_kind.value] += 1
                yield Proposal(id=span_id(conv.id, p.span), conversation_id=conv.id,
                               span=p.span, annotator=PROPOSER, span_kind="claim",
                               claim_kind=p.claim_kind)

    with tracked(conversations.values(), "claims", total=len(conversations)) as convs:
        n = write_records(out, proposals(convs))
    err_console.print(f"wrote {n} claim targets to {shown(out)}")
    typer.echo("by kind: " + ", ".join(f"{k} {v}" for k, v in kinds.most_common()))


@group.command("import")
def import_(
    conversations: Path = typer.Option(..., "--conversations", "-c", help="Conversations "
                                       "file (JSONL) holding every annotated conversation."),
    annotations: list[Path] = typer.Option(..., "--annotations", "-a", help="Pass-1 files "
                                           "(claim-annotation lines; repeatable)."),
    out: Path = typer.Option(..., "--out", "-o", help="Candidates file (JSONL) to write."),
) -> None:
    """Read hand-written claim graphs (pass 1 of the annotated set) as candidates.

    Every line is checked as every stage checks graphs (the text in the turn, edges
    backwards, a tool result's structural edge, every node reachable): a slip is one line
    naming the file, the line and the rule, and nothing is written.
    """
    check_outputs_are_not_inputs([conversations, *annotations], [out])
    convs = load_conversations(conversations)
    candidates = {}
    for path in annotations:
        for cand in read_annotations(path, convs):
            if cand.id in candidates:
                raise typer.BadParameter(f"{path}: claim {cand.id} is annotated in another "
                                         "file too", param_hint="--annotations")
            candidates[cand.id] = cand
    n = write_records(out, candidates.values())
    err_console.print(f"wrote {n} claim candidates to {shown(out)} "
                      f"({len({c.conversation_id for c in candidates.values()})} conversations)")


def register(parent: typer.Typer) -> None:
    parent.add_typer(group, name="claims")
