"""The main job end to end on the bundled sample, with embedded defaults.

``mtcabench demo`` runs every stage in pipeline order and writes each stage's files under
one output folder, so that any step can be inspected or rerun by hand:

1. ingest the sample (TauBench format) and validate it;
2. annotate it with the lineage annotator and the LLM (two phases), on the embedded
   llama.cpp server with SmolLM2 unless ``OPENAI_API_KEY``/``--base-url`` name another
   (``annotators="lineage"`` leaves the LLM out: no server is started);
3. push the candidates to Label Studio (an embedded local server unless
   ``LABEL_STUDIO_URL``/``LABEL_STUDIO_API_KEY`` are set) and print the reviewer's address;
4. accept the candidates automatically (no reviewer is waited for; every decision is
   marked ``auto`` and the release card says so span by span);
5. build the release folder and validate every graph;
6. trace the release with Tokengeist and the flat baseline on SmolLM2 in transformers;
7. score both and print Tokengeist against flat.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable

from rich.console import Console

from mtcabench.errors import ValidationFailed
from mtcabench.evaluate import DEFAULT_SCORER, TraceSettings
from mtcabench.ingest import read_taubench, write_conversations
from mtcabench.resources import sample_path
from mtcabench.stats import conversation_stats
from mtcabench.validate import validate_file
from mtcabench.terminal import shown

SAMPLE = sample_path()
RELEASE_VERSION = "0.0.0-sample"


@dataclass
class DemoRun:
    """Where the demo writes, its settings, and what each step produced."""

    out: Path
    sample: Path = SAMPLE
    base_url: str | None = None  # LLM endpoint; None: OPENAI_API_KEY's OpenAI or embedded
    model: str | None = None
    annotators: str = "lineage,llm"
    scorer: str = DEFAULT_SCORER
    #: The base scorers' own settings by scorer (``TraceSettings.scorers``).
    scorer_settings: dict = field(default_factory=dict)
    serve: bool = False  # keep the review server open at the end
    console: Console = field(default_factory=lambda: Console(stderr=True))
    files: dict[str, Path] = field(default_factory=dict)
    review: object | None = None  # the open review session (embedded server), if any

    def path(self, name: str) -> Path:
        return self.out / name


def step_ingest(run: DemoRun) -> None:
    path = run.path("conversations.jsonl")
    n = write_conversations(path, read_taubench(run.sample))
    run.files["conversations"] = path
    run.console.print(f"ingest: {n} conversations -> {shown(path)}")
    report = validate_file(path)
    if not report.ok:
        raise ValidationFailed("sample conversations invalid", [str(v) for v in report.violations])
    s = conversation_stats(path).as_dict()
    roles = ", ".join(f"{k} {v}" for k, v in sorted(s["turns_by_role"].items()))
    run.console.print(f"validate: {report.checked} conversations valid; {s['tool_calls']} tool "
                      f"calls; turns: {roles}")


def step_annotate(run: DemoRun) -> None:
    from mtcabench.annotate import annotate_run

    out_dir = run.path("annotate")
    summary = annotate_run(run.files["conversations"], out_dir, annotators=run.annotators,
                           base_url=run.base_url, model=run.model, console=run.console)
    run.files["candidates"] = out_dir / "candidates.jsonl"
    if "llm" in run.annotators:
        run.console.print(llm_line(summary))


#: What the embedded model is for, said where its numbers are printed (not only in a log).
EMBEDDED_NOTE = (
    "SmolLM2-135M is embedded so that the demo needs no key and no network: it answers in "
    "the schema, but at 135M parameters it rarely finds where a value came from, so expect few "
    "or no LLM candidates; the lineage rules make the rest. For LLM annotation worth "
    "reviewing, point the demo at a capable model: mtcabench demo --base-url URL --model NAME "
    "(any OpenAI-compatible endpoint), or set OPENAI_API_KEY.")


def llm_line(summary) -> str:
    """One plain line: what the LLM proposed and what was kept, and (for the embedded model)
    what it can and cannot do."""
    p = summary.proposals
    by = summary.candidates_by_annotator
    model = summary.model or "the LLM"
    line = (f"annotate: {shown(model)} proposed {p.ok + p.rejected_records} spans, "
            f"{p.ok} passed the checks; {by.get('llm', 0)} candidates have the LLM's graph, "
            f"{by.get('lineage', 0)} the lineage rules'.")
    if (summary.endpoint or "").startswith("embedded-"):
        line += " " + EMBEDDED_NOTE
    return line


def step_review(run: DemoRun) -> None:
    from mtcabench.review import auto_accept_file, open_review

    session = open_review(run.files["candidates"], run.files["conversations"])
    run.review = session
    run.console.print(f"review: {session.push.imported} tasks pushed ({session.push.already_present} already there); a reviewer opens them at "
                      f"[bold]{shown(session.review_url)}[/bold]")
    if session.login:
        run.console.print(f"review: local reviewer login {session.login[0]} / {session.login[1]} "
                          "(this embedded server lives as long as the demo; see --serve)")
    reviewed = run.path("reviewed.jsonl")
    report = auto_accept_file(run.files["candidates"], run.files["conversations"], reviewed)
    run.files["reviewed"] = reviewed
    run.console.print(f"review: no reviewer in the demo, so {len(report.decisions)} candidates were "
                      f"accepted automatically (marked decision_source=auto) -> {shown(reviewed)}")


def step_release(run: DemoRun) -> None:
    from mtcabench.release import build_release

    built = build_release(RELEASE_VERSION, run.files["reviewed"], run.files["conversations"],
                          out=run.path("release"), force=True)
    run.files["release"] = built.folder
    run.console.print(f"release: {len(built.spans)} spans in {len(built.conversations)} "
                      f"conversations, every graph valid -> {shown(built.folder)}")


def step_trace(run: DemoRun) -> None:
    from mtcabench.evaluate import trace_benchmark

    outs = {m: run.path(f"submission.{m}.jsonl") for m in ("tokengeist", "flat")}
    # One call: both methods share each conversation's forward pass.
    trace_benchmark(run.files["release"], outs, scorer=run.scorer,
                    settings=TraceSettings(scorers=run.scorer_settings))
    for method, out in outs.items():
        run.files[f"submission.{method}"] = out
        run.console.print(f"trace: {shown(method)} with {shown(run.scorer)} -> {shown(out)}")


def step_score(run: DemoRun) -> None:
    from mtcabench.scoring import compare_and_print

    compare_and_print(run.files["submission.tokengeist"], run.files["submission.flat"],
                      run.files["release"], run.path("score"), console=Console())
    run.files["score"] = run.path("score")


#: The steps, in pipeline order. Each takes the run and records its outputs in run.files.
STEPS: list[tuple[str, Callable[[DemoRun], None]]] = [
    ("ingest", step_ingest),
    ("annotate", step_annotate),
    ("review", step_review),
    ("release", step_release),
    ("trace", step_trace),
    ("score", step_score),
]


def run_demo(out: str | Path, *, sample: Path = SAMPLE, base_url: str | None = None,
             model: str | None = None, annotators: str = "lineage,llm",
             scorer: str = DEFAULT_SCORER, scorer_settings: dict | None = None,
             serve: bool = False, steps: list[str] | None = None) -> DemoRun:
    """Run every step (or the named ones) on the sample; returns the run with its paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    run = DemoRun(out=out, sample=sample, base_url=base_url, model=model,
                  annotators=annotators, scorer=scorer, scorer_settings=scorer_settings or {},
                  serve=serve)
    try:
        for name, step in STEPS:
            if steps and name not in steps and name != "ingest":
                continue
            run.console.rule(f"[bold]{name}")
            step(run)
        _finish(run)
    finally:
        if run.review is not None:
            run.review.close()
    return run


def _finish(run: DemoRun) -> None:
    run.console.rule("[bold]done")
    for name, path in run.files.items():
        run.console.print(f"  {name:<22} {shown(path)}")
    if run.review is None:
        return
    if run.serve and getattr(run.review, "server", None) is not None:
        run.console.print(f"Label Studio stays open at {shown(run.review.review_url)}; Ctrl-C to stop.")
        _wait_for_interrupt()
    else:
        cmd = (f"mtcabench review serve --candidates {run.files['candidates']} --conversations "
               f"{run.files['conversations']} --out {run.path('reviewed.human.jsonl')}")
        run.console.print(f"To review the candidates in the browser later: {shown(cmd)}")


def _wait_for_interrupt() -> None:
    import contextlib
    import threading

    with contextlib.suppress(KeyboardInterrupt):
        threading.Event().wait()
