"""The one check of a release folder: ``release verify``, ``release publish`` and the loader
(``trace``, ``score``, ``show``) all run :func:`check_release`, so that a folder one of them
accepts is the folder the others accept.

What is trusted is release.json and the checksum file, in that order of looking: the folder
is looked at first (no link out of it, no hidden or special file; release.json and the
checksum file are not even read when they are a link out or a FIFO), then every file is
checked against the checksum file, then every data file release.json names is checked
against what release.json says of it: a path inside the folder, listed in the checksum file,
a Parquet file (a zero-byte or cut file is named here, not deep in ``datasets``), holding
the number of rows release.json gives its config; and the card's (README.md) ``configs``
name the same configs with the same files as release.json, since ``datasets.load_dataset``
and the Hub read the card's. The loader itself does not read the card's configs: it reads the
files release.json names.
"""

from __future__ import annotations

from pathlib import Path

from mtcabench.benchmark._checksums import (
    path_problem,
    read_checksums,
    unsafe_to_read,
    verify_checksums,
)
from mtcabench.benchmark._manifest import (
    CARD_NAME,
    CHECKSUMS_NAME,
    MANIFEST_NAME,
    SPLIT,
    ConfigFiles,
    ReleaseManifest,
    read_manifest,
)

#: The configs every release has: the loader reads these two.
REQUIRED_CONFIGS = ("spans", "conversations")


def check_release(folder: str | Path, *, extra_files: bool = False,
                  ) -> tuple[ReleaseManifest | None, list[str]]:
    """The manifest of ``folder`` and every problem that makes it not the release its
    release.json and checksum file describe ([] when intact). The manifest is None when
    release.json was not read (a link out of the folder, a FIFO: see the problems). A missing
    or invalid release.json is an :class:`~mtcabench.errors.InputError`, as from
    :func:`~mtcabench.benchmark.read_manifest`.

    ``extra_files``: files the checksum file does not list are no problem. The loader asks
    for this: it reads only the files release.json names (each of which must be listed), so
    a page written beside the data (``mtcabench view --out RELEASE/view``) changes nothing it
    reads; ``verify`` and ``publish``, which speak for the whole folder, name such files."""
    folder = Path(folder)
    problems = verify_checksums(folder, unlisted=not extra_files)
    if unsafe_to_read(problems):
        return None, problems
    manifest = read_manifest(folder)
    problems += data_problems(folder, manifest, problems)
    return manifest, problems + card_problems(folder, manifest, problems)


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
        problems += _split_problems(config, rows)
    return problems


def _split_problems(config: ConfigFiles, rows: dict[str, int | None]) -> list[str]:
    """Where a config's splits are not its files cut in parts: every file in exactly one
    split, each split's rows those of its files (the loader reads the config's files, a
    ``datasets`` user its splits: both must read the same rows)."""
    if config.splits is None:
        return []
    problems = []
    named = [f for s in config.splits for f in s.files]
    if sorted(named) != sorted(config.files):
        problems.append(f"{MANIFEST_NAME}: config {config.name!r}: its splits name "
                        f"{', '.join(sorted(named)) or 'no file'}, not its files "
                        f"{', '.join(sorted(config.files))} once each: rebuild the release")
    for split in config.splits:
        held = [rows.get(f) for f in split.files]
        if None not in held and sum(held) != split.rows:  # type: ignore[arg-type]
            problems.append(f"{MANIFEST_NAME}: config {config.name!r} split {split.name!r} has "
                            f"{split.rows} rows, but its files hold {sum(held)}: rebuild "
                            "the release")  # type: ignore[arg-type]
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
        problems.append(f"{rel}: not a readable Parquet file ({size} bytes; "
                        f"{_first_line(exc)}); the "
                        "checksum file lists it as it is, so it was changed with its checksum: "
                        "download or rebuild the release")
        return None


def card_problems(folder: Path, manifest: ReleaseManifest, found: list[str]) -> list[str]:
    """Where the card's ``configs`` (its YAML header) contradict release.json's: a config one
    has and the other not, or another list of files. ``found``: a card named there already
    (missing, changed, a link out) is not read."""
    path = folder / CARD_NAME
    if any(p.startswith(f"{CARD_NAME}:") for p in found) or not path.is_file():
        return []
    text = path.read_text(encoding="utf-8", errors="replace")
    if not text.startswith("---"):
        return [f"{CARD_NAME}: no YAML header, so no configs; `datasets` and the Hub read a "
                "release's configs from it: rebuild the release"]
    from huggingface_hub import DatasetCard

    try:
        configs = DatasetCard(text).data.to_dict().get("configs") or []
    except Exception as exc:
        # The card's YAML is parsed by PyYAML inside huggingface_hub: its errors are not
        # ValueErrors, and PyYAML is not ours to import. Anything else is a bug, re-raised.
        if not isinstance(exc, ValueError) and not type(exc).__module__.startswith("yaml"):
            raise
        return [f"{CARD_NAME}: its YAML header does not parse ({_first_line(exc)}); rebuild "
                "the release"]
    card: dict[str, list[str] | None] = {}
    for config in configs if isinstance(configs, list) else []:
        if isinstance(config, dict) and isinstance(config.get("config_name"), str):
            card[config["config_name"]] = _card_files(config.get("data_files"))
    wanted = {c.name: {k: sorted(v) for k, v in c.split_files().items()}
              for c in manifest.configs}
    problems = []
    for name in sorted(wanted.keys() | card.keys()):
        if name not in card:
            problems.append(f"{CARD_NAME}: no config {name!r}, which {MANIFEST_NAME} has")
        elif name not in wanted:
            problems.append(f"{CARD_NAME}: config {name!r}, which {MANIFEST_NAME} does not "
                            "have")
        elif card[name] != wanted[name]:
            problems.append(f"{CARD_NAME}: config {name!r} names {_shown(card[name])}; "
                            f"{MANIFEST_NAME} names {_shown(wanted[name])}")
    if problems:
        problems[-1] += ("; the card is not the one built with this release (`datasets` "
                         "would read other files): rebuild the release")
    return problems


def _card_files(data_files: object) -> dict[str, list[str]] | None:
    """Split -> the files of a card config's split, sorted; None for any other shape."""
    if not isinstance(data_files, list) or not data_files:
        return None
    out: dict[str, list[str]] = {}
    for entry in data_files:
        if not isinstance(entry, dict) or not isinstance(entry.get("split"), str) or \
                entry["split"] in out:
            return None
        paths = entry.get("path")
        paths = [paths] if isinstance(paths, str) else paths
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            return None
        out[entry["split"]] = sorted(paths)
    return out


def _shown(split_files: dict[str, list[str]] | None) -> str:
    """A config's files as a message names them: the split's only when there is one (test)."""
    if not split_files:
        return "no file"
    if list(split_files) == [SPLIT]:
        return ", ".join(split_files[SPLIT]) or "no file"
    return "; ".join(f"{k}: {', '.join(v)}" for k, v in split_files.items())


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
