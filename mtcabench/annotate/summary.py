"""The end-of-run summary: what was proposed, kept and rejected (by reason), and what it cost."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from mtcabench.annotate.llm.accounting import Accounting
from mtcabench.io import atomic_write
from mtcabench.model import Candidate, Proposal
from mtcabench.terminal import shown


@dataclass
class RecordTally:
    """Counts of one record file's records over the whole job (this run's and earlier ones)."""

    ok: int = 0
    rejected: Counter = field(default_factory=Counter)  # first reason -> count
    rejected_records: int = 0
    written: int = 0  # new records written by this run
    already: int = 0  # records a previous run had written (skipped, not duplicated)

    def add(self, record: Proposal | Candidate) -> None:
        if record.status == "ok":
            self.ok += 1
        else:
            self.rejected_records += 1
            for reason in sorted({r.reason for r in record.rejections}):
                self.rejected[reason] += 1

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "rejected": self.rejected_records,
                "rejected_by_reason": dict(self.rejected.most_common()),
                "written": self.written, "already_written": self.already}


@dataclass
class RunSummary:
    """Everything a run reports at the end (also written as ``summary.json``)."""

    command: str
    endpoint: str | None = None
    model: str | None = None
    annotators: tuple[str, ...] = ()
    conversations: int = 0
    conversations_complete: int = 0
    proposals: RecordTally = field(default_factory=RecordTally)
    candidates: RecordTally = field(default_factory=RecordTally)
    candidates_by_annotator: Counter = field(default_factory=Counter)
    both_annotators: int = 0
    not_answered: Counter = field(default_factory=Counter)  # failed / budget / deferred
    accounting: Accounting | None = None
    #: Rows of the response cache that were not an answer: missed, sent again, replaced.
    cache_damaged: int = 0
    outputs: dict[str, str] = field(default_factory=dict)
    batches: list[dict[str, Any]] = field(default_factory=list)
    stopped: str | None = None

    @property
    def complete(self) -> bool:
        return not self.not_answered and self.stopped is None

    def as_dict(self) -> dict[str, Any]:
        a = self.accounting
        out: dict[str, Any] = {
            "command": self.command, "endpoint": self.endpoint, "model": self.model,
            "annotators": list(self.annotators),
            "conversations": self.conversations,
            "conversations_complete": self.conversations_complete,
            "proposals": self.proposals.as_dict(),
            "candidates": {**self.candidates.as_dict(),
                           "by_main_annotator": dict(self.candidates_by_annotator),
                           "with_both_annotators": self.both_annotators},
            "not_answered": dict(self.not_answered),
            "outputs": self.outputs, "batches": self.batches, "stopped": self.stopped,
        }
        if a is not None:
            out.update({
                "requests_sent": a.requests, "cache_hits": a.cache_hits,
                "cache_rows_damaged": self.cache_damaged,
                "failures": a.failures, "failures_by_reason": dict(a.failure_reasons),
                "retries_by_reason": dict(a.retries),
                "prompt_tokens": a.prompt_tokens, "completion_tokens": a.completion_tokens,
                "cost_usd": round(a.cost, 6), "seconds": round(a.elapsed, 2),
            })
        return out

    def write(self, path: str | Path) -> None:
        with atomic_write(path) as fh:
            json.dump(self.as_dict(), fh, indent=2)
            fh.write("\n")

    def render(self, console: Console) -> None:
        d = self.as_dict()
        table = Table(title=f"mtcabench annotate {shown(self.command)}", show_header=False,
                      title_justify="left")
        table.add_column(style="bold")
        table.add_column()

        def tally(name: str, t: dict[str, Any]) -> None:
            reasons = ", ".join(f"{k} {v}" for k, v in t["rejected_by_reason"].items())
            table.add_row(name, f"{t['ok'] + t['rejected']} ({t['ok']} kept, "
                                f"{t['rejected']} rejected); {t['written']} written now, "
                                f"{t['already_written']} already there")
            if reasons:
                table.add_row("  rejected by reason", reasons)

        llm = self.endpoint is not None
        if llm:
            table.add_row("endpoint", f"{shown(self.endpoint)} ({shown(self.model)})")
        complete = ("" if self.command == "verify"
                    else f" ({self.conversations_complete} complete)")
        table.add_row("conversations", f"{self.conversations}{complete}")
        if self.proposals.ok or self.proposals.rejected_records:
            tally("spans proposed (llm)", d["proposals"])
        if "verify" in self.command or self.command == "run":
            tally("candidates", d["candidates"])
            if self.candidates_by_annotator:
                by = ", ".join(f"{k} {v}" for k, v in self.candidates_by_annotator.items())
                table.add_row("  main graph from", f"{by}; {self.both_annotators} with both")
        if self.accounting is not None and llm:
            table.add_row("requests", f"{d['requests_sent']} sent, {d['cache_hits']} from cache, "
                                      f"{d['failures']} failed")
            if d["cache_rows_damaged"]:
                table.add_row("  damaged cache rows", f"{d['cache_rows_damaged']} (not answers: "
                                                      "sent again, replaced)")
            if d["retries_by_reason"]:
                table.add_row("  retries", ", ".join(f"{k} {v}"
                                                     for k, v in d["retries_by_reason"].items()))
            cost = f", ${d['cost_usd']:.4f}" if d["cost_usd"] else ""
            table.add_row("tokens", f"{d['prompt_tokens']} prompt + {d['completion_tokens']} "
                                    f"completion{cost}")
        if self.accounting is not None:
            table.add_row("time", f"{d['seconds']:.1f} s")
        if self.not_answered:
            table.add_row("not answered", ", ".join(f"{k} {v}"
                                                    for k, v in self.not_answered.items())
                          + " (rerun to finish)")
        if self.stopped:
            table.add_row("stopped", shown(self.stopped))
        for name, path in self.outputs.items():
            table.add_row(shown(name), shown(path))
        console.print(table)
