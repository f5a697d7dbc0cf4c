"""The main job end to end on the bundled sample, with embedded defaults.

``mtcabench demo`` runs every stage that has landed, in pipeline order, writing each
stage's file under one output folder so that any step can be inspected or rerun by hand.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from rich.console import Console

from mtcabench.ingest import read_taubench, write_conversations
from mtcabench.raw import PROJECT_ROOT
from mtcabench.stats import conversation_stats
from mtcabench.validate import validate_file
from mtcabench.errors import ValidationFailed

SAMPLE = PROJECT_ROOT / "raw" / "sample" / "sample-airline.json"


@dataclass
class DemoRun:
    """Where the demo writes, and what each step produced."""

    out: Path
    sample: Path = SAMPLE
    console: Console = field(default_factory=lambda: Console(stderr=True))
    files: dict[str, Path] = field(default_factory=dict)

    def path(self, name: str) -> Path:
        return self.out / name


def step_ingest(run: DemoRun) -> None:
    path = run.path("conversations.jsonl")
    n = write_conversations(path, read_taubench(run.sample))
    run.files["conversations"] = path
    run.console.print(f"ingest: {n} conversations -> {path}")


def step_validate(run: DemoRun) -> None:
    report = validate_file(run.files["conversations"])
    if not report.ok:
        raise ValidationFailed("sample conversations invalid", [str(v) for v in report.violations])
    run.console.print(f"validate: {report.checked} conversations valid")


def step_stats(run: DemoRun) -> None:
    s = conversation_stats(run.files["conversations"]).as_dict()
    roles = ", ".join(f"{k} {v}" for k, v in sorted(s["turns_by_role"].items()))
    run.console.print(f"stats: {s['conversations']} conversations, {s['tool_calls']} tool calls; "
                      f"turns: {roles}")


#: The steps, in pipeline order. Each takes the run and records its outputs in run.files.
STEPS: list[tuple[str, Callable[[DemoRun], None]]] = [
    ("ingest", step_ingest),
    ("validate", step_validate),
    ("stats", step_stats),
]


def run_demo(out: str | Path, *, sample: Path = SAMPLE) -> DemoRun:
    """Run every step on the sample; returns the run with the paths it wrote."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    run = DemoRun(out=out, sample=sample)
    for name, step in STEPS:
        run.console.rule(f"[bold]{name}")
        step(run)
    return run
