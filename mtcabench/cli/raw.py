"""`mtcabench raw`: list and fetch the upstream source files named in raw/manifest.json."""

from __future__ import annotations

from pathlib import Path

import typer

from mtcabench import raw as raw_sources
from mtcabench.cli import options
from mtcabench.progress import err_console
from mtcabench.terminal import plain, shown

group = typer.Typer(help="Upstream source files: list the manifest, fetch and verify files.",
                    no_args_is_help=True)


@group.command("list")
def list_files(
    manifest: Path = options.manifest(raw_sources.DEFAULT_MANIFEST),
) -> None:
    """List the manifest's files with repository, commit, blob id and licence."""
    for e in raw_sources.load_manifest(manifest):
        modified = f"\tmodified: {', '.join(e.removed)} removed" if e.removed else ""
        typer.echo(plain(f"{e.name}\t{e.repo}@{e.commit[:12]}:{e.path}\tblob {e.git_blob}\t"
                         f"{e.license}{modified}"))


@group.command("fetch")
def fetch(
    from_dir: Path | None = typer.Option(
        None, "--from", help="Take files from this local folder instead of GitHub."),
    only: list[str] | None = typer.Option(
        None, "--only", help="Fetch only this manifest name (repeatable)."),
    source: str | None = typer.Option(None, help="Fetch only this source (taubench, tau2, confetti)."),
    dest: Path = typer.Option(raw_sources.DEFAULT_DEST, help="Where fetched files go."),
    manifest: Path = options.manifest(raw_sources.DEFAULT_MANIFEST),
) -> None:
    """Download (or copy with --from) the upstream files; refuse any whose ids differ."""
    entries = raw_sources.select(raw_sources.load_manifest(manifest), only, source)

    def done(entry, path) -> None:
        err_console.print(f"ok  {shown(entry.name)} -> {shown(path)} (blob {entry.git_blob[:12]} verified)")

    raw_sources.fetch(entries, dest=dest, from_dir=from_dir, on_file=done)


def register(app: typer.Typer) -> None:
    app.add_typer(group, name="raw")
