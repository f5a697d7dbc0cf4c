"""`mtcabench annotate lineage`: deterministic lineage proposals for copied values."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from mtcabench.lineage import (
    DEFAULT_STOP_LIST,
    RULE_SETS,
    LineageConfig,
    LineageSummary,
    propose_lineage,
)
from mtcabench.io import (
    atomic_write,
    check_outputs_are_not_inputs,
    load_conversations,
    write_records,
)
from mtcabench.progress import err_console, tracked
from mtcabench.terminal import shown

#: The defaults (those of the default rules version), read by the options below.
D = LineageConfig()


def _rules(value: str) -> str:
    if value not in RULE_SETS:
        raise typer.BadParameter(f"{value!r} is not a rules version; use one of "
                                 + ", ".join(RULE_SETS))
    return value


def lineage(
    in_path: Path = typer.Option(..., "--in", "-i", help="Conversations file (JSONL) to read."),
    out: Path = typer.Option(..., "--out", "-o", help="Candidates file (JSONL) to write."),
    rules: str = typer.Option(D.rules, callback=_rules, help=(
        "Rules version: " + ", ".join(RULE_SETS) + " (earlier versions reproduce their "
        "output byte for byte; lineage-v4 runs domain-specific rules only on conversations of "
        "their domain; lineage-v5 also decides refunds and charges the answer states against "
        "the recorded payment; docs/lineage.md states each).")),
    min_length: int = typer.Option(D.min_length, min=1, help="Shortest value traced, in characters."),
    max_length: int = typer.Option(D.max_length, min=1, help="Longest value traced; longer leaves "
                                   "are prose, whose ids, dates and numbers are traced instead."),
    stop_word: list[str] = typer.Option([], "--stop-word", help="A value never traced "
                                        "(repeatable; added to the default stop list)."),
    no_default_stop_list: bool = typer.Option(False, "--no-default-stop-list", help=(
        "Drop the default stop list: " + ", ".join(sorted(DEFAULT_STOP_LIST)) + ".")),
    max_value_turns: int = typer.Option(D.max_value_turns, min=1, help="Skip a value found in more earlier "
                                        "turns than this (too ambiguous to propose)."),
    include_words: bool = typer.Option(D.include_words, help="Also trace lower-case words and prose "
                                       "leaves (categories such as 'economy')."),
    derived_amounts: bool = typer.Option(D.derived_amounts, help="Propose $ amounts equal to the sum or "
                                         "difference of two traced amounts."),
    hallucinations: bool = typer.Option(D.hallucinations, help="Propose exactly decidable "
                                        "contradictions as hallucination candidates."),
    clause_spans: bool = typer.Option(D.clause_spans, help="Propose clauses joining values of "
                                      "independent sources as multi-source spans (v2 rules)."),
    summary_json: Path | None = typer.Option(None, help="Also write the summary as JSON."),
) -> None:
    """Trace values copied across turns: one candidate per span, graph and evidence included."""
    check_outputs_are_not_inputs([in_path], [out, summary_json])
    stop = set(stop_word) | (set() if no_default_stop_list else set(DEFAULT_STOP_LIST))
    if max_length < min_length:
        raise typer.BadParameter(f"--max-length {max_length} is below --min-length {min_length}")
    config = LineageConfig(rules=rules, min_length=min_length, max_length=max_length,
                           stop_list=frozenset(stop), include_words=include_words,
                           max_value_turns=max_value_turns, derived_amounts=derived_amounts,
                           hallucinations=hallucinations, clause_spans=clause_spans)
    conversations = load_conversations(in_path)
    summary = LineageSummary()
    with tracked(conversations.values(), "lineage", total=len(conversations)) as convs:
        n = write_records(out, propose_lineage(convs, config, summary=summary))
    err_console.print(f"wrote {n} lineage candidates to {shown(out)}")
    if summary_json is not None:
        with atomic_write(summary_json) as fh:
            json.dump(summary.as_dict(), fh, indent=1)
    for line in summary.lines():
        typer.echo(line)


def register(group: typer.Typer) -> None:
    group.command("lineage")(lineage)
