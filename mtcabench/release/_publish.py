"""``release publish``: upload a release folder to a Hub dataset repository and tag it.

One commit carries the whole folder (``create_commit`` with one operation per file, plus a
delete for every file of the previous release that this one no longer has, so that ``main``
is exactly this release); the tag (the version) then points at that commit. The folder is
checked against its checksum file first, and a version that is already tagged on the Hub is
refused. The token comes from ``HF_TOKEN`` and is never printed or stored: every error
message is redacted (:mod:`mtcabench.redact`), whatever the Hub echoes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtcabench._version import __version__
from mtcabench.benchmark import (
    CHECKSUMS_NAME,
    ReleaseManifest,
    check_release,
    ignored_entries,
    read_checksums,
    release_files,
)
from mtcabench.benchmark.hub import first_line, parse_hub_id, transport_errors
from mtcabench.errors import InputError, ServiceError
from mtcabench.io import JSONError, loads
from mtcabench.redact import register_secret
from mtcabench.release._validate import credential_problem

#: Files of the Hub repository that are not part of a release and must not be deleted.
_KEEP_REMOTE = {".gitattributes"}


@dataclass
class UploadFile:
    path_in_repo: str
    size: int
    sha256: str


@dataclass
class PublishPlan:
    """What a publish sends: files, commit message and tag."""

    folder: Path
    repo_id: str
    version: str
    files: list[UploadFile]
    commit_message: str
    commit_description: str
    tag: str
    deletions: list[str] = field(default_factory=list)  # known only once the Hub is asked
    ignored: list[str] = field(default_factory=list)  # tool entries (TOOL_ENTRIES), not sent

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)


@dataclass
class PublishResult:
    plan: PublishPlan
    commit_url: str
    commit_oid: str


def plan_publish(folder: str | Path, repo_id: str) -> PublishPlan:
    """Check the folder (manifest, checksums, repo id) and list what would be uploaded."""
    folder = Path(folder)
    if parse_hub_id(repo_id) is None or "@" in repo_id:
        raise InputError(f"--repo-id {repo_id!r}: expected ORG/NAME (e.g. my-org/mtcabench)")
    manifest, problems = check_release(folder)
    if problems or manifest is None:
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise InputError(f"{folder}: the release is not as built ({CHECKSUMS_NAME}, "
                         "release.json): " + "; ".join(problems[:5]) + more + "; rebuild it "
                         "with `mtcabench release build --force` rather than editing files")
    _refuse_credentials(folder, manifest)
    sums = read_checksums(folder)
    # Every file is uploaded: verify refused hidden files and links out of the folder, and
    # what a Hub download adds (TOOL_ENTRIES) is listed as not uploaded.
    names = release_files(folder) + [CHECKSUMS_NAME]
    files = [UploadFile(n, (folder / n).stat().st_size,
                        sums.get(n) or "(checksum file)") for n in names]
    rv = manifest.review
    description = (f"{manifest.statistics['spans']} spans in "
                   f"{manifest.statistics['conversations']} conversations; "
                   f"{rv['human_spans']} decided by a person, {rv['auto_spans']} accepted "
                   f"automatically. Built by {manifest.builder}; uploaded by mtcabench "
                   f"{__version__}.")
    return PublishPlan(folder=folder, repo_id=repo_id, version=manifest.version, files=files,
                       commit_message=f"Release MTCABench {manifest.version}",
                       commit_description=description, tag=manifest.version,
                       ignored=ignored_entries(folder))


def _refuse_credentials(folder: Path, manifest: ReleaseManifest) -> None:
    """Refuse a release whose tables hold a credential in any text column (an id, the agent
    model, a turn, a tool call's arguments, metadata, an annotator; keys as well as values: a
    folder built by an older version, or from a file that kept a run's settings), naming the
    file and the record: the check ``release build`` runs, on what would be uploaded."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = {f: c.table for c in manifest.configs for f in c.files}
    for rel in sorted(tables):
        try:
            table = pq.read_table(folder / rel)
            if tables[rel] == "conversations" and not {"id", "metadata"} <= set(table.column_names):
                raise KeyError("no id and metadata columns")
            rows = table.to_pylist()
        except (OSError, KeyError, pa.ArrowException) as exc:
            raise InputError(f"{folder / rel}: not a {tables[rel]} table this mtcabench reads "
                             f"({first_line(exc)}); rebuild the release with "
                             "`mtcabench release build --force`") from None
        for row in rows:
            if (why := credential_problem(_json_texts(row))) is not None:
                what = "conversation" if tables[rel] == "conversations" else "span"
                raise InputError.at(folder / rel, f"{what} {why}", record=str(row.get("id")))


def _json_texts(value: Any) -> Any:
    """``value`` with each text that is a JSON object or list (the metadata and arguments
    columns) read as that value, so that its keys are checked too."""
    if isinstance(value, dict):
        return {k: _json_texts(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_texts(v) for v in value]
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return _json_texts(loads(value))
        except JSONError:
            return value  # not JSON: its text is checked as it is
    return value


def hf_token() -> str:
    """The Hub token from ``HF_TOKEN``; a clear error naming the variable when it is unset."""
    token = os.environ.get("HF_TOKEN", "").strip()
    if not token:
        raise InputError("HF_TOKEN is not set: create a write token at "
                         "https://huggingface.co/settings/tokens and export HF_TOKEN=...")
    register_secret(token)  # a Hub echoing it (X-Error-Message, a body) is redacted
    return token


def publish_release(folder: str | Path, repo_id: str, *, dry_run: bool = False,
                    endpoint: str | None = None, private: bool = False) -> PublishPlan | PublishResult:
    """Upload ``folder`` to the dataset repository ``repo_id`` in one commit and tag it.

    With ``dry_run`` nothing is sent and the plan is returned. ``endpoint`` overrides the
    Hub address (otherwise ``HF_ENDPOINT``, else huggingface.co).
    """
    plan = plan_publish(folder, repo_id)
    if dry_run:
        return plan
    token = hf_token()
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi
    from huggingface_hub.errors import HfHubHTTPError

    api = HfApi(endpoint=endpoint, token=token, library_name="mtcabench",
                library_version=__version__)
    try:
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        refs = api.list_repo_refs(repo_id, repo_type="dataset")
        if any(t.name == plan.tag for t in refs.tags):
            raise ServiceError(f"{repo_id}: version {plan.tag} is already published (tag "
                               "exists); build and publish a new version instead")
        remote = set(api.list_repo_files(repo_id, repo_type="dataset"))
        local = {f.path_in_repo for f in plan.files}
        plan.deletions = sorted(remote - local - _KEEP_REMOTE)
        operations = [CommitOperationAdd(path_in_repo=f.path_in_repo,
                                         path_or_fileobj=str(plan.folder / f.path_in_repo))
                      for f in plan.files]
        operations += [CommitOperationDelete(path_in_repo=p) for p in plan.deletions]
        info = api.create_commit(repo_id, operations=operations, repo_type="dataset",
                                 commit_message=plan.commit_message,
                                 commit_description=plan.commit_description)
        api.create_tag(repo_id, tag=plan.tag, revision=info.oid, repo_type="dataset",
                       tag_message=plan.commit_message)
    except HfHubHTTPError as exc:
        raise ServiceError(f"Hub {repo_id}: {first_line(exc)}") from None
    except transport_errors() as exc:  # connection refused, DNS, TLS
        raise ServiceError(f"Hub {repo_id}: cannot reach the Hub ({first_line(exc)}); check "
                           "the network or HF_ENDPOINT") from None
    return PublishResult(plan=plan, commit_url=str(info.commit_url), commit_oid=info.oid)

