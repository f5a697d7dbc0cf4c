"""The release's checksum file (``sha256sum`` format) and its verification."""

from __future__ import annotations

import hashlib
from pathlib import Path

from mtcabench.benchmark._manifest import CHECKSUMS_NAME


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def release_files(folder: Path) -> list[str]:
    """Every file of a release folder (relative POSIX paths, sorted), checksum file excluded.

    Hidden files and folders (a download tool's ``.cache/``, ``.gitattributes``) are not
    part of the release.
    """
    out = []
    for p in folder.rglob("*"):
        rel = p.relative_to(folder)
        if p.is_file() and p.name != CHECKSUMS_NAME and not any(
            part.startswith(".") for part in rel.parts
        ):
            out.append(rel.as_posix())
    return sorted(out)


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
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            digest, _, rel = line.partition("  ")
            out[rel.strip()] = digest.strip()
    return out


def verify_checksums(folder: Path, only: list[str] | None = None) -> list[str]:
    """Problems found (missing, changed or unlisted files); [] when the folder is intact.

    ``only`` restricts the check to those files (the loader checks the data files only).
    """
    folder = Path(folder)
    listed = read_checksums(folder)
    if not listed:
        return [f"{folder / CHECKSUMS_NAME}: missing or empty"]
    problems = []
    for rel in only if only is not None else sorted(listed):
        path = folder / rel
        if rel not in listed:
            problems.append(f"{rel}: not listed in {CHECKSUMS_NAME}")
        elif not path.is_file():
            problems.append(f"{rel}: listed in {CHECKSUMS_NAME} but missing")
        elif sha256_file(path) != listed[rel]:
            problems.append(f"{rel}: sha256 differs from {CHECKSUMS_NAME} (file changed)")
    if only is None:
        for rel in release_files(folder):
            if rel not in listed:
                problems.append(f"{rel}: not listed in {CHECKSUMS_NAME}")
    return problems
