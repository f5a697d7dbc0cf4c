"""The files the package ships and reads at run time, found with :mod:`importlib.resources`.

* ``prompts/``: the versioned annotation prompt templates (``<phase>-v<N>.md``);
* ``annotation_ui/``: the Label Studio labeling configuration and the reviewers' instructions;
* ``raw/manifest.json``: the upstream source files, pinned by commit and checksum;
* ``raw/sample/``: the bundled sample the demo runs on;
* ``release/card.md``: the dataset card's template (filled by ``release build``);
* ``lineage/``: the statement of each lineage rules version (``<version>.md``, printed in the
  dataset card) and the hand-check of its spans on real data (``handcheck-<version>.json``).

They live inside the package so that an installed wheel has them; the checkout's top-level
``prompts/``, ``annotation_ui/``, ``raw/manifest.json`` and ``raw/sample`` are symbolic links
to these folders, so the files are edited in one place and found where the layout says.
"""

from __future__ import annotations

import atexit
import contextlib
from importlib.resources import as_file, files
from pathlib import Path

from mtcabench.io import loads

_extracted = contextlib.ExitStack()
atexit.register(_extracted.close)


def resource_path(*parts: str) -> Path:
    """A real filesystem path to a shipped file or folder.

    An installed wheel or a checkout gives its own path; a zipped installation gets a copy
    extracted once for the life of the process.
    """
    found = files(__name__).joinpath(*parts)
    if isinstance(found, Path):
        return found
    return _extracted.enter_context(as_file(found))


def prompts_dir() -> Path:
    return resource_path("prompts")


def annotation_ui_dir() -> Path:
    return resource_path("annotation_ui")


def manifest_path() -> Path:
    return resource_path("raw", "manifest.json")


def sample_path() -> Path:
    """The bundled sample conversations (TauBench format)."""
    return resource_path("raw", "sample", "sample-airline.json")


def card_template() -> str:
    """The dataset card's template (:class:`string.Template` text; mtcabench.release fills it)."""
    return files(__name__).joinpath("release", "card.md").read_text(encoding="utf-8")


def lineage_rules(version: str) -> str | None:
    """The statement of a lineage rules version (``lineage-v2``), or None if none ships.

    A settings suffix (``lineage-v2+1a2b3c4d``) names the same rules with other settings.
    """
    path = files(__name__).joinpath("lineage", f"{version.split('+')[0]}.md")
    return path.read_text(encoding="utf-8") if path.is_file() else None


def lineage_handcheck(version: str) -> dict | None:
    """The hand-check of a rules version's spans on real data (``handcheck-<version>.json``:
    each checked span with its verdict), or None if none ships."""
    path = files(__name__).joinpath("lineage", f"handcheck-{version.split('+')[0]}.json")
    return loads(path.read_bytes()) if path.is_file() else None
