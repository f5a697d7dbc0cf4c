"""Release: validate every reviewed graph, build the Hub-ready dataset folder, load, publish.

``build_release`` turns review decisions and conversations into ``release/<version>/``
(Parquet data, dataset card, release.json, checksums, changelog), refusing the whole release
when anything fails validation; ``load_release`` reads a release folder or Hub id back into
our records; ``publish_release`` uploads a folder to the Hub in one commit and tags it.
"""

from mtcabench.release._build import BuiltRelease, build_release, check_version
from mtcabench.release._checksums import TOOL_ENTRIES, ignored_entries, verify_checksums
from mtcabench.release._loader import (
    download_release,
    is_release_folder,
    load_release,
    load_release_folder,
    parse_hub_id,
)
from mtcabench.release._manifest import ReleaseManifest, read_manifest
from mtcabench.release._publish import PublishPlan, PublishResult, plan_publish, publish_release
from mtcabench.release._schema import CONVERSATION_FEATURES, SPAN_FEATURES
from mtcabench.release._select import SELECTION_RULE, decide, select

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
    "read_manifest",
    "select",
    "verify_checksums",
]
