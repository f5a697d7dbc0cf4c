"""The benchmark format: what a benchmark is on disk and on the Hub, and how to read it.

A benchmark (conversations and their gold spans, :class:`Benchmark`) is given as a path or a
Hub id, and :func:`load_benchmark` takes any of the three:

- a folder holding ``conversations.jsonl`` and ``spans.jsonl`` (our record files);
- a release folder built by ``mtcabench release build``: Parquet tables, ``release.json``
  (:class:`ReleaseManifest`), a checksum file;
- a Hub dataset id ``ORG/NAME`` or ``ORG/NAME@VERSION`` (:mod:`mtcabench.benchmark.hub`).

This package sits below the stages: the release stage writes this format, the evaluator and
the scorer read it, and it imports none of them. Importing it is cheap; ``datasets`` and
``huggingface_hub`` are imported only when a release is read, and by
:mod:`mtcabench.benchmark.tables` (the released tables' typed columns and rows).
"""

from mtcabench.benchmark._benchmark import (
    Benchmark,
    load_jsonl_benchmark,
    origin_paths,
    same_origin,
)
from mtcabench.benchmark._check import check_release
from mtcabench.benchmark._checksums import (
    TOOL_ENTRIES,
    ignored_entries,
    read_checksums,
    release_files,
    sha256_file,
    verify_checksums,
    write_checksums,
)
from mtcabench.benchmark._loader import (
    download_release,
    is_release_folder,
    load_benchmark,
    load_release,
    load_release_folder,
)
from mtcabench.benchmark._manifest import (
    CARD_NAME,
    CHANGELOG_NAME,
    CHECKSUMS_NAME,
    MANIFEST_NAME,
    SPLIT,
    ConfigFiles,
    ReleaseManifest,
    SplitFiles,
    read_manifest,
    write_manifest,
)
from mtcabench.benchmark._split import (
    DEV_BUCKETS,
    SPLITS,
    TEST_BUCKETS,
    TRAIN_BUCKETS,
    TRIALS,
    bucket_of,
    split_of,
    task_of,
)
from mtcabench.benchmark.hub import HUB_ID, parse_hub_id

__all__ = [
    "CARD_NAME",
    "CHANGELOG_NAME",
    "CHECKSUMS_NAME",
    "DEV_BUCKETS",
    "HUB_ID",
    "MANIFEST_NAME",
    "SPLIT",
    "SPLITS",
    "TEST_BUCKETS",
    "TOOL_ENTRIES",
    "TRAIN_BUCKETS",
    "TRIALS",
    "Benchmark",
    "ConfigFiles",
    "ReleaseManifest",
    "SplitFiles",
    "bucket_of",
    "check_release",
    "download_release",
    "ignored_entries",
    "is_release_folder",
    "load_benchmark",
    "load_jsonl_benchmark",
    "load_release",
    "load_release_folder",
    "origin_paths",
    "parse_hub_id",
    "read_checksums",
    "read_manifest",
    "same_origin",
    "release_files",
    "sha256_file",
    "split_of",
    "task_of",
    "verify_checksums",
    "write_checksums",
    "write_manifest",
]
