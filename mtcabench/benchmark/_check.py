"""The one check of a release folder: ``release verify``, ``release publish`` and the loader
(``trace``, ``score``, ``show``) all run :func:`check_release`, so that a folder one of them
accepts is the folder the others accept.

What is trusted is release.json and the checksum file, in that order of looking: the folder
is looked at first (no link out of it, no hidden or special file; release.json and the
checksum file are not even read when they are a link out or a FIFO), then every file is
checked against the checksum file, then every data file release.json names is checked
against what release.json says of it: a path inside the folder, listed in the checksum file,
a Parquet file (a zero-byte or cut file is named here, not deep in ``datasets``), holding
the number of rows release.json gives its config. The card (README.md) is covered by its
checksum, and the loader does not read its configs: it reads the files release.json names.
"""

from __future__ import annotations

from pathlib import Path

from mtcabench.benchmark._checksums import (
    path_problem,
    read_checksums,
    unsafe_to_read,
    verify_checksums,
)
from mtcabench.benchmark._manifest import CHECKSUMS_NAME, MANIFEST_NAME, ReleaseManifest, read_manifest

#: The configs every release has: the loader reads these two.
REQUIRED_CONFIGS = ("spans", "conversations")


def check_release(folder: str | Path) -> tuple[ReleaseManifest | None, list[str]]:
    """The manifest of ``folder`` and every problem that makes it not the release its
    release.json and checksum file describe ([] when intact). The manifest is None when
    release.json was not read (a link out of the folder, a FIFO: see the problems). A missing
    or invalid release.json is an :class:`~mtcabench.errors.InputError`, as from
    :func:`~mtcabench.benchmark.read_manifest`."""
    folder = Path(folder)
    problems = verify_checksums(folder)
    if unsafe_to_read(problems):
        return None, problems
    manifest = read_manifest(folder)
    return manifest, problems + data_problems(folder, manifest, problems)


def data_problems(folder: Path, manifest: ReleaseManifest, found: list[str]) -> list[str]:
    """What release.json says of its data files that the folder contradicts. ``found``: the
    problems already named (a file named there is not read again)."""
    listed = read_checksums(folder)
    problems: list[str] = []
    names = {c.name for c in manifest.configs}
    for name in REQUIRED_CONFIGS:
        if name not in names:
            problems.append(f"{MANIFEST_NAME}: no config {name!r}; every release has the "
                            f"configs {' and '.join(REQUIRED_CONFIGS)}: rebuild it")
    rows: dict[str, int | None] = {}
    for config in manifest.configs:
        total: int | None = 0
        for rel in config.files:
            if rel not in rows:
                rows[rel] = _rows(folder, rel, listed, found, problems)
            n = rows[rel]
            total = None if n is None or total is None else total + n
        if total is not None and total != config.rows:
            problems.append(f"{MANIFEST_NAME}: config {config.name!r} has {config.rows} rows, "
                            f"but its files hold {total}; the data files are not the ones it "
                            "was built with: download or rebuild the release")
    return problems


def _rows(folder: Path, rel: str, listed: dict[str, str], found: list[str],
          problems: list[str]) -> int | None:
    """The row count of one data file, or None with its problem added."""
    if (shape := path_problem(rel)) is not None:
        problems.append(f"{MANIFEST_NAME} names {shape}")
        return None
    if rel not in listed:
        problems.append(f"{rel}: named in {MANIFEST_NAME} but not listed in {CHECKSUMS_NAME}; "
                        "no checksum covers it: download or rebuild the release")
        return None
    if any(p.startswith(f"{rel}:") for p in found):
        return None  # missing, changed or a link out: named already, not read
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = folder / rel
    try:
        return pq.read_metadata(path).num_rows
    except (OSError, pa.ArrowException) as exc:
        size = path.stat().st_size
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        problems.append(f"{rel}: not a readable Parquet file ({size} bytes; {reason}); the "
                        "checksum file lists it as it is, so it was changed with its checksum: "
                        "download or rebuild the release")
        return None
