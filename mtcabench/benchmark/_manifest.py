"""``release.json``: the machine-readable description of a release folder.

It holds what the card shows in prose (counts, statistics, recipe, provenance) plus what
tools need (configs and their files, the selection rule, the Parquet writer settings), as a
versioned record so that a later mtcabench can read or refuse an older layout.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mtcabench.errors import InputError
from mtcabench.io import format_validation_error, not_utf8, parse_json
from mtcabench.model import Record

MANIFEST_NAME = "release.json"
CARD_NAME = "README.md"
CHECKSUMS_NAME = "CHECKSUMS.sha256"
CHANGELOG_NAME = "CHANGELOG.md"
#: The one split of every config of a release built without ``--split-by-task``.
SPLIT = "test"


class SplitFiles(BaseModel):
    """One split of a config (``train``, ``dev``, ``test``): its data files and rows."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Split name, as passed to load_dataset(split=...).")
    files: list[str] = Field(description="Its data files, relative to the release folder.")
    rows: int = Field(description="Number of rows.")


class ConfigFiles(BaseModel):
    """One ``datasets`` configuration: its name, table kind and data files."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Config name, as passed to load_dataset.")
    table: str = Field(description="spans or conversations.")
    source: str | None = Field(default=None, description="Only this source's rows, if set.")
    files: list[str] = Field(description="Data files, relative to the release folder.")
    rows: int = Field(description="Number of rows.")
    splits: list[SplitFiles] | None = Field(
        default=None, description="The splits by task (--split-by-task); None: one split, test, "
        "of all the files.")

    def split_files(self) -> dict[str, list[str]]:
        """Split name -> its files, as the card's ``data_files`` name them."""
        if self.splits is None:
            return {SPLIT: list(self.files)}
        return {s.name: list(s.files) for s in self.splits}


class ReleaseManifest(Record):
    """Everything about one release, written as release.json beside the data."""

    KIND: ClassVar[str] = "release"

    name: str = Field(default="MTCABench", description="Benchmark name.")
    version: str = Field(description="Release version; also the folder name and the Hub tag.")
    builder: str = Field(description="Tool and version that built it.")
    previous_version: str | None = Field(default=None, description="Release compared against.")
    configs: list[ConfigFiles] = Field(description="The datasets configurations.")
    statistics: dict[str, Any] = Field(description="Spans by type, source, depth; conversations.")
    review: dict[str, Any] = Field(description="Decisions, acceptance and edit rates.")
    recipe: dict[str, Any] = Field(description="Annotators, prompts and review counts.")
    licenses: dict[str, str] = Field(description="Licence of each source present.")
    selection_rule: str = Field(description="How decisions became gold spans.")
    parquet_writer: dict[str, Any] = Field(description="Pinned Parquet writer settings.")

    def config(self, name: str) -> ConfigFiles:
        for c in self.configs:
            if c.name == name:
                return c
        raise KeyError(name)


def write_manifest(folder: Path, manifest: ReleaseManifest) -> None:
    data = manifest.model_dump(mode="json")
    for config in data["configs"]:
        # A release of one split writes no `splits`, so that its release.json is byte for byte
        # what it was before splits existed (scripts/release_fingerprint.py).
        if config["splits"] is None:
            del config["splits"]
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    (folder / MANIFEST_NAME).write_text(text, encoding="utf-8")


def read_manifest(folder: Path) -> ReleaseManifest:
    """The manifest of a release folder; a clear error when it is missing or unreadable."""
    path = Path(folder) / MANIFEST_NAME
    if not path.is_file():
        raise InputError(f"{folder}: not a release folder (no {MANIFEST_NAME}); build one with "
                         "`mtcabench release build`")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError.at(path, not_utf8(raw, exc)) from None
    try:
        return ReleaseManifest.model_validate(parse_json(text, path))
    except ValidationError as exc:
        raise InputError.at(path, format_validation_error(exc)) from None
