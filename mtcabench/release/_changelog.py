"""The changelog of a release against the previous one in the same output folder.

"Previous" is the highest other version below this one, versions compared naturally (so
``1.10`` comes after ``1.9``, and a leading ``v`` is ignored). The new section lists added
and removed spans and conversations, and for each span kept what changed in its gold
(type, edges, nodes) or in its provenance (automatic -> human); the earlier changelog
follows it, so the file holds the whole history.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from mtcabench.benchmark import CHANGELOG_NAME, MANIFEST_NAME
from mtcabench.model import BenchmarkSpan


def version_key(version: str) -> tuple:
    """Natural sort key of a version string: digit runs compare as numbers."""
    parts = re.findall(r"\d+|[^\d]+", version.lstrip("vV"))
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in parts)


def find_previous(out: Path, version: str) -> Path | None:
    """The release folder in ``out`` with the highest version below ``version``, if any."""
    if not out.is_dir():
        return None
    mine = version_key(version)
    earlier = [
        p for p in out.iterdir()
        if p.is_dir() and not p.name.startswith(".") and p.name != version
        and (p / MANIFEST_NAME).is_file() and version_key(p.name) < mine
    ]
    return max(earlier, key=lambda p: version_key(p.name), default=None)


@dataclass
class Changes:
    """What differs between two releases."""

    added_spans: list[str] = field(default_factory=list)
    removed_spans: list[str] = field(default_factory=list)
    changed_spans: dict[str, list[str]] = field(default_factory=dict)
    provenance_changed: dict[str, str] = field(default_factory=dict)
    added_conversations: list[str] = field(default_factory=list)
    removed_conversations: list[str] = field(default_factory=list)


def _gold_changes(old: BenchmarkSpan, new: BenchmarkSpan) -> list[str]:
    out = []
    if old.dependency_type is not new.dependency_type:
        out.append(f"type {old.dependency_type.value} -> {new.dependency_type.value}")
    old_edges = {(e.child, e.parent, e.kind.value) for e in old.graph.edges}
    new_edges = {(e.child, e.parent, e.kind.value) for e in new.graph.edges}
    if old_edges != new_edges:
        added = ", ".join(f"{c}->{p}" for c, p, _ in sorted(new_edges - old_edges))
        removed = ", ".join(f"{c}->{p}" for c, p, _ in sorted(old_edges - new_edges))
        out.append("edges" + (f" +[{added}]" if added else "") + (f" -[{removed}]" if removed else ""))
    if set(old.graph.nodes) != set(new.graph.nodes):
        out.append(f"nodes {sorted(set(old.graph.nodes))} -> {sorted(set(new.graph.nodes))}")
    if old.span != new.span:
        out.append("span text or offsets")
    return out


def compare(old_spans: list[BenchmarkSpan], new_spans: list[BenchmarkSpan],
            old_conversations: set[str], new_conversations: set[str]) -> Changes:
    old = {s.id: s for s in old_spans}
    new = {s.id: s for s in new_spans}
    ch = Changes(
        added_spans=sorted(new.keys() - old.keys()),
        removed_spans=sorted(old.keys() - new.keys()),
        added_conversations=sorted(new_conversations - old_conversations),
        removed_conversations=sorted(old_conversations - new_conversations),
    )
    for sid in sorted(old.keys() & new.keys()):
        diff = _gold_changes(old[sid], new[sid])
        if diff:
            ch.changed_spans[sid] = diff
        if old[sid].decision_source is not new[sid].decision_source:
            ch.provenance_changed[sid] = (f"{old[sid].decision_source.value} -> "
                                          f"{new[sid].decision_source.value}")
    return ch


def render(version: str, previous: str | None, changes: Changes | None, n_spans: int,
           n_conversations: int, earlier_text: str = "") -> str:
    """The CHANGELOG.md text: this release's section, then the earlier history."""
    lines = ["# Changelog", "", f"## {version}", ""]
    if previous is None or changes is None:
        lines += [f"First release in this folder: {n_spans} spans in {n_conversations} "
                  "conversations.", ""]
    else:
        c = changes
        lines += [
            f"Compared with {previous}: {n_spans} spans in {n_conversations} conversations.",
            "",
            f"- spans added: {len(c.added_spans)}",
            f"- spans removed: {len(c.removed_spans)}",
            f"- spans whose gold changed: {len(c.changed_spans)}",
            f"- spans whose decision source changed: {len(c.provenance_changed)}",
            f"- conversations added: {len(c.added_conversations)}",
            f"- conversations removed: {len(c.removed_conversations)}",
            "",
        ]
        for title, ids in (("Added spans", c.added_spans), ("Removed spans", c.removed_spans),
                           ("Added conversations", c.added_conversations),
                           ("Removed conversations", c.removed_conversations)):
            if ids:
                lines += [f"### {title}", ""] + [f"- `{i}`" for i in ids] + [""]
        if c.changed_spans:
            lines += ["### Changed gold", ""]
            lines += [f"- `{i}`: {'; '.join(d)}" for i, d in c.changed_spans.items()] + [""]
        if c.provenance_changed:
            lines += ["### Changed decision source", ""]
            lines += [f"- `{i}`: {d}" for i, d in c.provenance_changed.items()] + [""]
    text = "\n".join(lines)
    earlier = earlier_text.split("\n", 1)[1].lstrip("\n") if earlier_text.startswith("# Changelog") else earlier_text
    return text + ("\n" + earlier if earlier.strip() else "")


def read_earlier_changelog(previous: Path | None) -> str:
    if previous is None or not (previous / CHANGELOG_NAME).is_file():
        return ""
    return (previous / CHANGELOG_NAME).read_text(encoding="utf-8")
