"""The release stage: validate every reviewed graph, build the Hub-ready folder, publish it.

``build_release`` turns review decisions and conversations into ``release/<version>/``
(Parquet data, dataset card, release.json, checksums, changelog), refusing the whole release
when anything fails validation; ``publish_release`` uploads a folder to the Hub in one commit
and tags it. The stage's modules: ``_select`` (which decisions become gold), ``_validate``,
``_stats``, ``_card``, ``_changelog``, ``_parquet``, ``_build``, ``_publish``.

What a release folder *is* (release.json, the tables' typed columns, the checksum file, Hub
ids) and reading one back belong to the benchmark format, :mod:`mtcabench.benchmark`, below
this stage; ``load_release`` and the other readers are re-exported here, as before.
"""

from mtcabench.benchmark import (
    TOOL_ENTRIES,
    ReleaseManifest,
    check_release,
    ignored_entries,
    download_release,
    is_release_folder,
    load_release,
    load_release_folder,
    parse_hub_id,
    read_manifest,
    verify_checksums,
)
from mtcabench.benchmark.tables import CONVERSATION_FEATURES, SPAN_FEATURES
from mtcabench.release._build import BuiltRelease, build_release, check_version
from mtcabench.release._card import wilson
from mtcabench.release._inputs import read_conversations as read_release_conversations
from mtcabench.release._inputs import read_decisions
from mtcabench.release._publish import PublishPlan, PublishResult, plan_publish, publish_release
from mtcabench.release._select import SELECTION_RULE, decide, select
from mtcabench.release._validate import validate_released

__all__ = [
    "CONVERSATION_FEATURES",
    "SELECTION_RULE",
    "SPAN_FEATURES",
    "TOOL_ENTRIES",
    "BuiltRelease",
    "PublishPlan",
    "PublishResult",
    "ReleaseManifest",
    "build_release",
    "check_release",
    "check_version",
    "decide",
    "download_release",
    "ignored_entries",
    "is_release_folder",
    "load_release",
    "load_release_folder",
    "parse_hub_id",
    "plan_publish",
    "publish_release",
    "read_decisions",
    "read_manifest",
    "read_release_conversations",
    "select",
    "validate_released",
    "verify_checksums",
    "wilson",
]
