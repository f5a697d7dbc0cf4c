"""`mtcabench release`: build a validated release folder, verify it, publish it to the Hub."""

from __future__ import annotations

from pathlib import Path

import typer

from mtcabench.cli import options
from mtcabench.errors import InputError
from mtcabench.progress import err_console
from mtcabench.terminal import plain, shown

group = typer.Typer(help="Validate reviewed graphs, build the Hub dataset folder, publish it.",
                    no_args_is_help=True)


@group.command("build")
def build(
    version: str = typer.Option(..., "--version", "-v", help="Release version, e.g. 1.0.0 "
                                "(folder name and Hub tag)."),
    reviewed: Path = typer.Option(..., "--reviewed", "-r", help="Review decisions (JSONL)."),
    conversations: Path = options.conversations(short=True),
    candidates: Path | None = options.candidates(
        "Candidates (JSONL), read for the recipe (annotators, prompts).", None, short=False),
    out: Path = options.out("Folder holding releases.", Path("release")),
    force: bool = typer.Option(False, "--force", help="Rebuild a version that exists."),
    scores: list[Path] = typer.Option([], "--scores", help="A score report of `mtcabench "
                                      "score` on this release (its .score.json), shown in the "
                                      "card beside the model-free floors (repeatable)."),
    split_by_task: bool = typer.Option(
        False, "--split-by-task", help="Splits train/dev/test by task (the studies' rule: no "
        "task on two sides; every trial kept, in its task's split) and a config per domain "
        "and `all`; without it, one split `test` as in 1.x."),
    max_spans: int | None = typer.Option(
        None, "--max-spans-per-conversation", min=1, help="Release at most this many spans of "
        "one conversation, drawn by --cap-seed; the card says how many were removed per "
        "domain."),
    cap_seed: int = typer.Option(0, "--cap-seed", help="Seed of the draw of "
                                 "--max-spans-per-conversation."),
    count_context: bool = typer.Option(
        False, "--count-context", help="Count on the card, per domain, the spans past the "
        "default model's context (trace attributes them in a context window). Needs the "
        "evaluator's extra and the model's files (`mtcabench trace` converts them once)."),
) -> None:
    """Validate every accepted span and write OUT/VERSION; refuse the whole release on any failure."""
    from mtcabench.release import build_release

    built = build_release(version, reviewed, conversations, out=out, candidates=candidates,
                          force=force, scores=scores, split_by_task=split_by_task,
                          max_spans_per_conversation=max_spans, cap_seed=cap_seed,
                          context=_context_count() if count_context else None)
    st, rv = built.manifest.statistics, built.manifest.review
    err_console.print(
        f"release {shown(version)}: {st['spans']} spans in {st['conversations']} conversations -> "
        f"{shown(built.folder)} ({rv['human_spans']} decided by a person, {rv['auto_spans']} "
        "accepted automatically)", soft_wrap=True)
    if "splits" in st:
        for domain, by in st["splits"].items():
            err_console.print(f"  {shown(domain)}: " + ", ".join(
                f"{k} {v['tasks']} tasks, {v['conversations']} conversations, {v['spans']} "
                "spans" for k, v in by.items()), soft_wrap=True)
    ctx = st.get("context", {})
    if ctx.get("computed"):
        past = sum(r["past"] for r in ctx["by_domain"].values())
        err_console.print(f"  {past} spans past the {ctx['limit']}-token context of "
                          f"{ctx['model']} (attributed in a context window by trace)",
                          soft_wrap=True)
    if "cap" in st:
        err_console.print(f"  cap {st['cap']['max_spans_per_conversation']} spans per "
                          f"conversation removed {st['cap']['removed']} spans", soft_wrap=True)


@group.command("verify")
def verify(folder: Path = typer.Argument(..., help="A release folder.")) -> None:
    """Check a release folder against its checksum file and its release.json (data files,
    row counts, the card's configs): the check `trace` and `score` run before reading one."""
    from mtcabench.errors import ValidationFailed
    from mtcabench.release import check_release, ignored_entries

    if not folder.is_dir():
        raise InputError(f"{folder}: no such release folder")
    manifest, problems = check_release(folder)
    if problems or manifest is None:
        raise ValidationFailed(f"{folder}: {len(problems)} file problem(s)", problems)
    ignored = ignored_entries(folder)
    note = f" (ignored, not part of a release: {', '.join(ignored)})" if ignored else ""
    err_console.print(f"{shown(folder)}: release {shown(manifest.version)} intact{shown(note)}",
                      soft_wrap=True)


@group.command("publish")
def publish(
    folder: Path = typer.Argument(..., help="The release folder, e.g. release/1.0.0."),
    repo_id: str = typer.Option(..., "--repo-id", help="Hub dataset repository ORG/NAME."),
    dry_run: bool = typer.Option(False, "--dry-run", help="List what would be uploaded; send "
                                 "nothing."),
    private: bool = typer.Option(False, "--private", help="Create the repository as private."),
    endpoint: str | None = typer.Option(None, "--endpoint", envvar="HF_ENDPOINT",
                                           help="Hub address (default huggingface.co)."),
) -> None:
    """Upload FOLDER to a Hub dataset repository in one commit and tag the version (token from HF_TOKEN)."""
    from mtcabench.release import PublishPlan, publish_release

    if not folder.is_dir():
        raise InputError(f"{folder}: no such release folder")
    result = publish_release(folder, repo_id, dry_run=dry_run, endpoint=endpoint,
                             private=private)
    plan = result if isinstance(result, PublishPlan) else result.plan
    for f in plan.files:
        typer.echo(f"{f.size:>12}  {plain(f.path_in_repo, newlines=False)}")
    for p in plan.deletions:
        typer.echo(f"{'delete':>12}  {plain(p, newlines=False)}")
    for p in plan.ignored:
        err_console.print(f"not uploaded: {shown(p)} (added by a download tool, not part of a "
                          "release)", soft_wrap=True)
    summary = (f"{len(plan.files)} files, {plan.total_bytes} bytes -> datasets/{plan.repo_id}, "
               f"commit {plan.commit_message!r}, tag {plan.tag}")
    if dry_run:
        err_console.print(f"dry run, nothing sent: would upload {shown(summary)}", soft_wrap=True)
    else:
        err_console.print(f"uploaded {shown(summary)}: {shown(result.commit_url)}", soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.add_typer(group, name="release")


def _context_count():
    """The card's count of spans past the default model's context (``--count-context``): the
    evaluator's counter. Asked for, not guessed: a release's files are the same on every
    machine that builds it from the same inputs, whatever is installed there, and a count that
    cannot be made here is an error naming why, before anything is written."""
    try:
        from mtcabench.evaluate import default_context_reach
    except ImportError as exc:
        raise InputError(f"--count-context needs the evaluator ({exc}): pip install "
                         "'mtcabench[eval]'") from None
    count = default_context_reach()
    if isinstance(count, str):
        raise InputError(f"--count-context: {count}")
    return count
