"""Versioned prompt templates (``prompts/<phase>-v<N>.md``): loading, hashing, rendering.

A template file holds a small front matter (``phase``, ``version``) and two sections,
``## system`` and ``## user``, with ``$name`` placeholders (:class:`string.Template`, so the
JSON braces a prompt may contain need no escaping). Every record an LLM annotator writes
carries the template's version and the sha256 of its file, so that a change to a prompt is
visible in the data and invalidates the response cache.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from string import Template

from mtcabench.annotate.phases.registry import phase_names
from mtcabench.errors import InputError
from mtcabench.resources import prompts_dir as shipped_prompts_dir

#: Where the shipped templates live.
PROMPTS_DIR = shipped_prompts_dir()

_SECTION = re.compile(r"^## (system|user)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class PromptTemplate:
    """One phase's template: its version, hash and the two message templates."""

    phase: str
    version: str
    sha256: str
    system: str
    user: str
    path: Path

    def render(self, **values: object) -> list[dict[str, str]]:
        """The chat messages with ``values`` filled in; a missing value is a bug (KeyError)."""
        strs = {k: str(v) for k, v in values.items()}
        return [
            {"role": "system", "content": Template(self.system).substitute(strs)},
            {"role": "user", "content": Template(self.user).substitute(strs)},
        ]


def parse_template(path: Path) -> PromptTemplate:
    """Read and check one template file."""
    raw = path.read_bytes()
    text = raw.decode("utf-8")
    if not text.startswith("---\n"):
        raise InputError.at(path, "a prompt template starts with a '---' front matter block")
    try:
        head, body = text[4:].split("\n---\n", 1)
    except ValueError:
        raise InputError.at(path, "front matter is not closed by a '---' line") from None
    meta = {}
    for lineno, line in enumerate(head.splitlines(), start=2):
        if line.strip():
            key, sep, value = line.partition(":")
            if not sep:
                raise InputError.at(path, f"front matter line is not 'key: value': {line!r}",
                                    line=lineno)
            meta[key.strip()] = value.strip()
    for key in ("phase", "version"):
        if not meta.get(key):
            raise InputError.at(path, f"front matter lacks {key!r}")
    if meta["phase"] not in phase_names():
        raise InputError.at(path, f"phase {meta['phase']!r} is not one of "
                                  f"{', '.join(phase_names())}")
    parts = _SECTION.split(body)
    # parts: [preamble, name, text, name, text]
    sections = {parts[i]: parts[i + 1].strip("\n") for i in range(1, len(parts) - 1, 2)}
    for key in ("system", "user"):
        if key not in sections:
            raise InputError.at(path, f"template lacks a '## {key}' section")
    return PromptTemplate(
        phase=meta["phase"],
        version=meta["version"],
        sha256=hashlib.sha256(raw).hexdigest(),
        system=sections["system"],
        user=sections["user"],
        path=path,
    )


def _version_number(path: Path) -> int:
    m = re.search(r"-v(\d+)\.md$", path.name)
    return int(m.group(1)) if m else -1


def load_template(phase: str, version: str | None = None,
                  prompts_dir: str | Path | None = None) -> PromptTemplate:
    """The template of ``phase``: the given ``version`` (e.g. ``propose-v1``) or the newest."""
    folder = Path(prompts_dir) if prompts_dir else PROMPTS_DIR
    if phase not in phase_names():
        raise InputError(f"unknown annotation phase {phase!r}; expected one of "
                         f"{', '.join(phase_names())}")
    if version:
        path = folder / f"{version}.md"
        if not path.is_file():
            known = sorted(p.stem for p in folder.glob(f"{phase}-v*.md"))
            raise InputError(f"{path}: no such prompt template (known: {', '.join(known) or 'none'})")
    else:
        found = sorted(folder.glob(f"{phase}-v*.md"), key=_version_number)
        if not found:
            raise InputError(f"{folder}: no {phase}-v<N>.md prompt template")
        path = found[-1]
    template = parse_template(path)
    if template.phase != phase:
        raise InputError.at(path, f"is a {template.phase!r} template, expected {phase!r}")
    return template
