"""`mtcabench review`: push candidates to Label Studio, pull decisions, auto-accept, serve;
read a second person's checks of claims (`checks`) or post them to Label Studio (`post-checks`)."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import typer

from mtcabench.cli import options
from mtcabench.errors import ValidationFailed
from mtcabench.progress import err_console
from mtcabench.terminal import plain

group = typer.Typer(
    help="Human review in Label Studio: push candidates, review in the browser, pull decisions.",
    no_args_is_help=True,
)

def _print_push(report) -> None:
    for line in report.lines():
        err_console.print(plain(line), highlight=False, markup=False)


def _print_pull(report, out: Path | None) -> None:
    assert report.summary is not None
    err_console.print(report.summary.table())
    if report.accept_marked_edited:
        err_console.print(f"note: {report.accept_marked_edited} decision(s) marked 'accept' had a "
                          "changed graph or type; recorded as accept_with_edits", markup=False)
    if report.skipped:
        err_console.print(f"skipped by reviewers: {report.skipped}", markup=False)
    if report.invalid:
        err_console.print(f"left out: {len(report.invalid)} invalid annotation(s), not repaired; "
                          "fix them in Label Studio and pull again:", markup=False)
        for inv in report.invalid:
            err_console.print(f"  {plain(inv, newlines=False)}", markup=False, highlight=False)
    where = f" -> {plain(report.written)}" if report.written else " (nothing written)"
    err_console.print(f"{len(report.decisions)} decision(s){where} "
                      f"({report.requests} request(s), {report.seconds:.1f} s)", markup=False)


@group.command("push")
def push(
    candidates: Path = options.candidates(),
    conversations: Path = options.conversations(),
    project: str = options.project(),
    url: str | None = options.label_studio_url(),
    api_key: str | None = options.label_studio_api_key(),
    batch_size: int = typer.Option(500, "--batch-size", help="Tasks per import request."),
    overlap: int = typer.Option(1, "--overlap",
                                help="Reviewers per span (Label Studio's maximum annotations)."),
) -> None:
    """Import candidates as tasks (the proposal as a prediction); a rerun adds only new spans."""
    from mtcabench.review import Connection, ReviewClient, push_files

    connection = Connection.require(url, api_key)
    with ReviewClient(connection) as client:
        report = push_files(client, candidates, conversations, project=project,
                            batch_size=batch_size, overlap=overlap)
    _print_push(report)
    typer.echo(plain(report.project_url, newlines=False))


@group.command("pull")
def pull(
    conversations: Path = options.conversations(),
    out: Path = options.out("Reviewed decisions (JSONL), rewritten."),
    project: str = options.project(),
    url: str | None = options.label_studio_url(),
    api_key: str | None = options.label_studio_api_key(),
    strict: bool = typer.Option(False, "--strict",
                                help="Exit with code 5 when an annotation was left out."),
) -> None:
    """Export annotations, rebuild and validate graphs, write decisions, print the figures."""
    from mtcabench.io import check_outputs_are_not_inputs
    from mtcabench.review import Connection, ReviewClient, pull_to_file

    check_outputs_are_not_inputs([conversations], [out])
    connection = Connection.require(url, api_key)
    with ReviewClient(connection) as client:
        report = pull_to_file(client, conversations, out, project=project, strict=strict)
    _print_pull(report, out)
    if strict and report.invalid:
        raise ValidationFailed(f"{len(report.invalid)} annotation(s) left out (see above); "
                               f"--strict: {out} not written")


@group.command("auto-accept")
def auto_accept_cmd(
    candidates: Path = options.candidates(),
    conversations: Path = options.conversations(),
    out: Path = options.out("Decisions (JSONL), rewritten."),
) -> None:
    """Accept every valid candidate WITHOUT human review (decision_source "auto", no reviewer)."""
    from mtcabench.review import auto_accept_file, summarize

    report = auto_accept_file(candidates, conversations, out)
    err_console.print(summarize(report.decisions).table("automatic decisions (not human)"))
    err_console.print(f"{len(report.decisions)} decision(s) -> {plain(out)}: accepted automatically, "
                      "decision_source=auto, no reviewer", markup=False)
    for sid, why in report.left_out:
        err_console.print(f"  left out {plain(sid, newlines=False)}: {plain(why, newlines=False)}",
                          markup=False, highlight=False)


@group.command("checks")
def checks_cmd(
    candidates: Path = options.candidates(),
    conversations: Path = options.conversations(),
    checks: list[Path] = typer.Option(..., "--checks", help="Pass-2 files of the annotated "
                                      "claims set (claim-check lines; repeatable)."),
    out: Path = options.out("Decisions (JSONL), rewritten."),
) -> None:
    """Read a second person's checks of hand-written claim graphs as review decisions.

    Each check (accept, accept with edits, reject; the graph after the check, notes edge by
    edge) becomes a human decision on its pass-1 candidate, the checker as reviewer; a check
    by the claim's own annotator is refused. Prints the two passes' agreement.
    """
    from mtcabench.io import check_outputs_are_not_inputs, load_conversations, write_records
    from mtcabench.review import agreement, read_candidates, read_checks

    check_outputs_are_not_inputs([candidates, conversations, *checks], [out])
    convs = load_conversations(conversations)
    cands = {c.id: c for c in read_candidates(candidates)}
    decisions = {}
    for path in checks:
        for d in read_checks(path, convs, cands):
            if d.id in decisions:
                raise typer.BadParameter(f"{path}: claim {d.id} is checked in another file too",
                                         param_hint="--checks")
            decisions[d.id] = d
    write_records(out, decisions.values())
    a = agreement([cands[i] for i in decisions], decisions.values())
    err_console.print(f"{a.claims} decision(s) -> {plain(out)} of {len(cands)} candidates; "
                      f"agreement of the two passes: edge F1 {a.edge_f1:.3f}, graphs changed "
                      f"{a.graphs_changed} of {a.claims}, rejected {a.rejected}, types changed "
                      f"{a.types_changed}, kinds changed {a.kinds_changed}", markup=False)


@group.command("post-checks")
def post_checks_cmd(
    candidates: Path = options.candidates(),
    conversations: Path = options.conversations(),
    checks: list[Path] = typer.Option(..., "--checks", help="Pass-2 files of the annotated "
                                      "claims set (claim-check lines; repeatable)."),
    project: str = options.project(),
    url: str | None = options.label_studio_url(),
    api_key: str | None = options.label_studio_api_key(),
) -> None:
    """Post a second person's checks of claims to Label Studio, as their annotations.

    Each check becomes the annotation its checker would submit in the browser on the task
    of its claim (pushed with `review push`): the graph after the check, type, kind,
    verdict, notes as comment, by the checker's user (created if missing). `review pull`
    then gives the decisions `review checks` reads from the files. A rerun writes nothing
    already there.
    """
    from mtcabench.review import Connection, ReviewClient, post_check_files

    connection = Connection.require(url, api_key)
    with ReviewClient(connection) as client:
        report = post_check_files(client, candidates, conversations, checks, project=project)
    for line in report.lines():
        err_console.print(plain(line), highlight=False, markup=False)
    typer.echo(plain(report.project_url, newlines=False))


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


@group.command("serve")
def serve(
    candidates: Path = options.candidates(),
    conversations: Path = options.conversations(),
    out: Path | None = options.out("Pull the decisions to this file on Ctrl-C.", None),
    data_dir: Path | None = typer.Option(
        None, "--data-dir", help="Label Studio data folder (new or empty; default: temporary)."),
    project: str = options.project(),
) -> None:
    """Start a local Label Studio, push the candidates, wait for reviewers until Ctrl-C."""
    from mtcabench.io import check_output_path, check_outputs_are_not_inputs
    from mtcabench.review import open_review, pull_to_file

    if out is not None:
        # Refused now, not after a review session: the output must be writable and no input.
        check_outputs_are_not_inputs([candidates, conversations], [out])
        check_output_path(out)
    with open_review(candidates, conversations, project=project, data_dir=data_dir,
                     embedded=True) as session:
        _print_push(session.push)
        user, password = session.login or ("", "")
        err_console.print(plain(f"review at {session.review_url}\nlog in as {user} "
                                f"with password {password}\nCtrl-C to stop"
                                + (f" and pull the decisions to {out}" if out else "")),
                          markup=False)
        typer.echo(plain(session.review_url, newlines=False))
        # A service manager stops with SIGTERM: treat it like Ctrl-C, so the decisions are
        # pulled and the server stopped rather than left running.
        signal.signal(signal.SIGTERM, _interrupt)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
        if out is not None:
            with session.client() as client:
                report = pull_to_file(client, conversations, out,
                                      project=session.push.project_id)
            _print_pull(report, out)


def register(app: typer.Typer) -> None:
    app.add_typer(group, name="review")

