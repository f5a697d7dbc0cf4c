"""The release's checksum file (``sha256sum`` format) and its verification."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from mtcabench.benchmark._manifest import CHECKSUMS_NAME, MANIFEST_NAME
from mtcabench.io import node_kind, split_lines


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


#: Hidden entries that tools add to a release folder and that are not part of the release:
#: the ``.gitattributes`` every Hub repository has, and huggingface_hub's download metadata.
#: They are neither checked nor uploaded, and verify and publish name them. Any other hidden
#: file or folder is refused: a release holds only what ``release build`` wrote.
TOOL_ENTRIES = (".gitattributes", ".cache/huggingface")


def _is_tool_entry(rel: str) -> bool:
    return any(rel == t or rel.startswith(t + "/") for t in TOOL_ENTRIES)


def _hidden(rel: str) -> bool:
    return any(part.startswith(".") for part in rel.split("/"))


def _walk(folder: Path):
    """(relative path, path) of every file and symbolic link under ``folder``, links to
    folders included, without following links."""
    for dirpath, dirnames, filenames in os.walk(folder):
        here = Path(dirpath)
        for name in sorted(dirnames):
            if (here / name).is_symlink():
                yield (here / name).relative_to(folder).as_posix(), here / name
        for name in sorted(filenames):
            yield (here / name).relative_to(folder).as_posix(), here / name


def release_files(folder: Path) -> list[str]:
    """Every file of a release folder (relative POSIX paths, sorted), checksum file excluded.

    Hidden files and folders are not listed: :func:`folder_problems` refuses them, except
    the :data:`TOOL_ENTRIES`, which are ignored.
    """
    out = []
    for rel, p in _walk(folder):
        if p.is_file() and rel != CHECKSUMS_NAME and not _hidden(rel):
            out.append(rel)
    return sorted(out)


def ignored_entries(folder: Path) -> list[str]:
    """The :data:`TOOL_ENTRIES` present in ``folder`` (reported as ignored)."""
    return [t for t in sorted(TOOL_ENTRIES) if os.path.lexists(folder / t)]


def _outside(folder: Path, path: Path) -> str | None:
    """Where ``path`` really is, when that is outside the release folder; else None.

    A Hub download (huggingface_hub's cache) is a folder of links into the repository's
    ``blobs`` folder beside ``snapshots/``: those links are the download, not a way out.
    """
    real = Path(os.path.realpath(path))
    top = Path(os.path.realpath(folder))
    if real == top or top in real.parents:
        return None
    if top.parent.name == "snapshots":
        blobs = top.parent.parent / "blobs"
        if blobs in real.parents:
            return None
    return str(real)


def path_problem(rel: str) -> str | None:
    """Why ``rel`` (a path release.json or the checksum file names) is no path inside the
    release folder, else None: absolute, or with a ``..``, ``.`` or empty part. Such a path is
    refused for what it is, before it is looked up (it may lead anywhere, no link needed)."""
    parts = rel.split("/")
    if rel.startswith("/") or any(part in ("", ".", "..") for part in parts):
        return (f"{rel}: not a path inside the release folder (absolute, or with '..', '.' or "
                "an empty part); a release names its files relative to its folder: rebuild it")
    return None


def folder_problems(folder: Path) -> list[str]:
    """What makes a folder not a plain release: hidden entries (other than the tool entries),
    symbolic links that lead out of it, and what is no file (a FIFO, a device, a socket)."""
    folder = Path(folder)
    problems = []
    for rel, p in _walk(folder):
        if _is_tool_entry(rel):
            continue
        if _hidden(rel):
            problems.append(f"{rel}: a hidden file, not part of a release (neither checked nor "
                            "published); remove it or rebuild the release")
            continue
        kind = node_kind(os.lstat(p).st_mode)
        if kind is not None and not stat.S_ISLNK(os.lstat(p).st_mode):
            # Never opened: reading a FIFO waits for a writer that may never come.
            problems.append(f"{rel}: {kind}, not a file; a release holds regular files only "
                            "(it is not read): remove it or rebuild the release")
            continue
        if p.is_symlink():
            where = _outside(folder, p)
            if where is not None:
                problems.append(f"{rel}: a symbolic link to {where}, outside the release folder; "
                                "a release holds its own files: copy it in or rebuild")
    return problems


def write_checksums(folder: Path) -> dict[str, str]:
    """Write CHECKSUMS.sha256 for every other file; returns path -> sha256.

    Same format as ``sha256sum``, so ``sha256sum -c CHECKSUMS.sha256`` checks it too.
    """
    sums = {rel: sha256_file(folder / rel) for rel in release_files(folder)}
    lines = "".join(f"{digest}  {rel}\n" for rel, digest in sums.items())
    (folder / CHECKSUMS_NAME).write_text(lines, encoding="utf-8")
    return sums


def read_checksums(folder: Path) -> dict[str, str]:
    path = folder / CHECKSUMS_NAME
    if not path.is_file():
        return {}
    out = {}
    for line in split_lines(path.read_text(encoding="utf-8")):
        if line.strip():
            digest, _, rel = line.partition("  ")
            out[rel.strip()] = digest.strip()
    return out


def unsafe_to_read(problems: list[str]) -> bool:
    """Whether :func:`folder_problems` found release.json or the checksum file to be a link out
    of the folder, a FIFO or hidden: then neither is read (their content is not the release's,
    and a FIFO would hang the read)."""
    return any(p.startswith((f"{MANIFEST_NAME}:", f"{CHECKSUMS_NAME}:")) for p in problems)


def verify_checksums(folder: Path, *, unlisted: bool = True) -> list[str]:
    """Problems found (links out of the folder, hidden and special files, then missing,
    changed or unlisted files); [] when the folder is intact. ``unlisted=False`` leaves out
    the files the checksum file does not list (the loader, which never reads them).

    The folder is looked at before any file in it is read: when the checksum file or
    release.json is a link out of the folder (or a FIFO), the problems found so far are all
    that is returned. What release.json says about the data files is checked on top of this
    by :func:`mtcabench.benchmark.check_release`, the check verify, publish and the loader run.
    """
    folder = Path(folder)
    problems = folder_problems(folder)
    if unsafe_to_read(problems):
        return problems
    listed = read_checksums(folder)
    if not listed:
        return problems + [f"{folder / CHECKSUMS_NAME}: missing or empty"]
    for rel in sorted(listed):
        path = folder / rel
        if (shape := path_problem(rel)) is not None:
            problems.append(f"{CHECKSUMS_NAME} lists {shape}")
            continue
        where = _outside(folder, path) if os.path.lexists(path) else None
        if any(p.startswith(f"{rel}:") for p in problems):
            continue  # already named (a link out, a FIFO): not read
        if not path.is_file():
            problems.append(f"{rel}: listed in {CHECKSUMS_NAME} but missing")
        elif where is not None:
            # Never read through a link out of the folder: its content is not the release's.
            problems.append(f"{rel}: read through a symbolic link to {where}, outside the "
                            "release folder; a release holds its own files")
        elif sha256_file(path) != listed[rel]:
            problems.append(f"{rel}: sha256 differs from {CHECKSUMS_NAME} (file changed)")
    for rel in release_files(folder) if unlisted else []:
        if rel not in listed:
            problems.append(f"{rel}: not listed in {CHECKSUMS_NAME}")
    return problems
