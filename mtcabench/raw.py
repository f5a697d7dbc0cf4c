"""Raw sources: the manifest of upstream files, and fetching them with verification.

Files come from GitHub (``raw.githubusercontent.com`` at the pinned commit) or from a local
folder (``--from DIR``). Either way a file is accepted only when its git blob id, and its
sha256 where the manifest knows it, match; it is then written atomically into
``raw/data/<name>``. Fetched files are never committed (``raw/data/`` is git-ignored).

A **modified** file (an upstream file that holds a credential) is named with the ids of the
copy we use (``git_blob``, ``sha256``), the upstream file's own blob id
(``upstream_git_blob``), the keys whose values were replaced (``removed``, dotted paths, each
value now the text ``[removed]``) and a ``note``. Our copy is accepted as any file is; the
upstream file (downloaded, or found under ``--from``) is accepted by its upstream blob id and
then has those values replaced before it is checked against our copy's ids and written: the
credential is never written.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Callable, Iterable
from typing import Any

from urllib.parse import quote

import httpx

from mtcabench.errors import InputError, ServiceError, ValidationFailed
from mtcabench.io import JSONError, atomic_write, loads
from mtcabench.resources import manifest_path

#: Base of raw file downloads; overridable for mirrors (and tests) with MTCABENCH_GITHUB_RAW_URL.
GITHUB_RAW = "https://raw.githubusercontent.com"
DEFAULT_MANIFEST = manifest_path()
#: Fetched files go under ./raw/data of the folder the command runs in (in a checkout: the
#: git-ignored raw/data/), never into the installed package.
DEFAULT_DEST = Path("raw") / "data"


@dataclass(frozen=True)
class RawFile:
    """One upstream file of the manifest."""

    name: str
    source: str
    repo: str
    commit: str
    path: str
    git_blob: str
    license: str
    sha256: str | None = None
    size: int | None = None
    #: A modified file (see the module docstring): upstream's blob id, the keys replaced, why.
    upstream_git_blob: str | None = None
    removed: tuple[str, ...] = ()
    note: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "removed", tuple(self.removed))
        if self.removed and not (self.upstream_git_blob and self.sha256):
            raise ValueError(f"{self.name}: a modified file names upstream_git_blob and sha256")

    @property
    def url(self) -> str:
        """The file at the pinned commit; the path percent-encoded (upstream paths hold ``:``,
        as tau2-bench's ``ft:gpt-4.1-...`` results and timestamped simulation files do)."""
        base = os.environ.get("MTCABENCH_GITHUB_RAW_URL", GITHUB_RAW).rstrip("/")
        return f"{base}/{self.repo}/{self.commit}/{quote(self.path, safe='/')}"


def load_manifest(path: str | Path = DEFAULT_MANIFEST) -> list[RawFile]:
    path = Path(path)
    try:
        data = loads(path.read_bytes())
        return [RawFile(**f) for f in data["files"]]
    except FileNotFoundError:
        raise InputError(f"{path}: no such manifest") from None
    except JSONError as exc:
        raise InputError.at(path, f"not a valid raw manifest ({exc.reason})",
                            line=exc.line) from None
    except (KeyError, TypeError) as exc:
        raise InputError(f"{path}: not a valid raw manifest ({exc})") from None


def git_blob_id(data: bytes) -> str:
    """The id git gives a file's content: sha1 of ``blob <size>\\0<content>``."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def verify(entry: RawFile, data: bytes, origin: str) -> None:
    """Refuse content whose git blob id or sha256 differs from the manifest."""
    problems = []
    blob = git_blob_id(data)
    if blob != entry.git_blob:
        problems.append(f"git blob id {blob} != manifest {entry.git_blob}")
    if entry.sha256:
        sha = hashlib.sha256(data).hexdigest()
        if sha != entry.sha256:
            problems.append(f"sha256 {sha} != manifest {entry.sha256}")
    if problems:
        raise ValidationFailed(
            f"{entry.name} from {origin} does not match the manifest; not written "
            "(is it the file at the pinned commit?)",
            problems,
        )


#: What a removed value is replaced with.
REMOVED = "[removed]"


def remove_values(entry: RawFile, data: bytes) -> bytes:
    """Upstream's bytes with the values at ``entry.removed`` replaced by ``"[removed]"``,
    every other byte kept (each value's JSON text after its key, wherever that key holds it)."""
    try:
        value = loads(data)
    except JSONError:
        return data  # not JSON: verify() names the mismatch
    for dotted in entry.removed:
        *parents, key = dotted.split(".")
        node: Any = value
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        secret = node.get(key) if isinstance(node, dict) else None
        if not isinstance(secret, str) or secret == REMOVED:
            continue
        pattern = re.compile(rb'("' + re.escape(key.encode()) + rb'"\s*:\s*)'
                             + re.escape(json.dumps(secret).encode()))
        data = pattern.sub(lambda m: m.group(1) + json.dumps(REMOVED).encode(), data)
    return data


def accepted(entry: RawFile, data: bytes, origin: str) -> bytes:
    """The bytes to write for ``entry`` from ``data`` (a modified file's upstream bytes have
    their removed values replaced first), verified against the manifest (ValidationFailed)."""
    if entry.removed and git_blob_id(data) == entry.upstream_git_blob:
        data = remove_values(entry, data)
    verify(entry, data, origin)
    return data


def _find_local(entry: RawFile, folder: Path) -> Path | None:
    """Look for the file under its manifest name, its upstream path, the base name of either
    (a copy named as the manifest names it, ``airline-gpt-4.1.json``, or as upstream does),
    then for those base names anywhere below; of several, the first whose ids match."""
    bases = list(dict.fromkeys((Path(entry.name).name, Path(entry.path).name)))
    candidates = [folder / entry.name, folder / entry.path, *(folder / b for b in bases)]
    candidates += [m for b in bases for m in sorted(folder.rglob(b))]
    found = list(dict.fromkeys(c for c in candidates if c.is_file()))
    for candidate in found:
        try:
            accepted(entry, candidate.read_bytes(), str(candidate))
            return candidate
        except ValidationFailed:
            continue
    return found[0] if found else None  # verified again by the caller: the mismatch named


def _download(entry: RawFile, timeout: float) -> bytes:
    try:
        with httpx.Client(timeout=timeout, follow_redirects=True) as client:
            resp = client.get(entry.url)
    except httpx.HTTPError as exc:
        raise ServiceError(f"cannot download {entry.url}: {exc}; on a machine without internet "
                           "use --from DIR") from None
    if resp.status_code != 200:
        raise ServiceError(f"cannot download {entry.url}: HTTP {resp.status_code}")
    return resp.content


def fetch(
    entries: Iterable[RawFile],
    *,
    dest: str | Path = DEFAULT_DEST,
    from_dir: str | Path | None = None,
    timeout: float = 120.0,
    on_file: Callable[[RawFile, Path], None] | None = None,
) -> list[Path]:
    """Fetch and verify each entry into ``dest/<name>``; a file already there and valid is kept."""
    dest = Path(dest)
    written: list[Path] = []
    for entry in entries:
        target = dest / entry.name
        if target.is_file():
            try:
                verify(entry, target.read_bytes(), str(target))
                written.append(target)
                if on_file:
                    on_file(entry, target)
                continue
            except ValidationFailed:
                pass  # a stale or damaged copy: fetch it again
        if from_dir is not None:
            folder = Path(from_dir)
            if not folder.is_dir():
                raise InputError(f"{folder}: no such folder")
            local = _find_local(entry, folder)
            if local is None:
                raise InputError(f"{entry.name}: not found in {folder} (looked for {entry.name}, "
                                 f"{entry.path}, {Path(entry.name).name} and "
                                 f"{Path(entry.path).name})")
            data, origin = local.read_bytes(), str(local)
        else:
            data, origin = _download(entry, timeout), entry.url
        data = accepted(entry, data, origin)
        target.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(target, "wb") as fh:
            fh.write(data)
        written.append(target)
        if on_file:
            on_file(entry, target)
    return written


def select(entries: list[RawFile], only: list[str] | None, source: str | None) -> list[RawFile]:
    """Entries filtered by exact name (``--only``) and/or source (``--source``)."""
    out = [e for e in entries if source is None or e.source == source]
    if only:
        names = {e.name for e in out}
        unknown = [n for n in only if n not in names]
        if unknown:
            raise InputError(f"not in the manifest: {', '.join(unknown)} (known: "
                             f"{', '.join(sorted(names))})")
        out = [e for e in out if e.name in only]
    return out
