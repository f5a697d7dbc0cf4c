"""Loading a benchmark: from a JSON Lines folder, a release folder or a Hub dataset id.

A release folder and a Hub id end in the same place: a Hub id is first downloaded with
``huggingface_hub`` (``snapshot_download``, so the Hub's cache and ``HF_HUB_OFFLINE`` apply),
then the folder is checked as ``release verify`` checks it
(:func:`~mtcabench.benchmark.check_release`: links, checksums, what release.json says of each
data file), so that a damaged download or an edited file is refused in one line rather than
scored or left to a traceback of ``datasets``. Only then are the Parquet files release.json
names read with ``datasets.load_dataset`` (their typed features are in their own schema), and
every row is rebuilt into a :class:`~mtcabench.model.BenchmarkSpan` or
:class:`~mtcabench.model.Conversation`. The card's configs are not read: a card naming other
files than release.json would have the loader read what no checksum covers.

``datasets`` and ``huggingface_hub`` are imported only when a release is read, so that the
scorer and the evaluator, which load JSON Lines folders too, do not pay for them.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from mtcabench.benchmark._benchmark import Benchmark, load_jsonl_benchmark, span_disagrees
from mtcabench.benchmark._check import check_release
from mtcabench.benchmark._manifest import MANIFEST_NAME, SPLIT
from mtcabench.benchmark.hub import first_line, parse_hub_id, transport_errors
from mtcabench.errors import InputError, ServiceError
from mtcabench.io import format_validation_error


def is_release_folder(path: str | Path) -> bool:
    return Path(path).is_dir() and (Path(path) / MANIFEST_NAME).is_file()


def download_release(repo_id: str, *, revision: str | None = None, endpoint: str | None = None,
                     token: str | None = None, cache_dir: str | Path | None = None) -> Path:
    """Download a release from the Hub (or reuse the cached copy); returns its local folder.

    The token, when needed (a private repository), comes from ``token`` or ``HF_TOKEN``.
    """
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    try:
        return Path(snapshot_download(repo_id=repo_id, repo_type="dataset", revision=revision,
                                      endpoint=endpoint, token=token, cache_dir=cache_dir))
    except (HfHubHTTPError, LocalEntryNotFoundError, *transport_errors()) as exc:
        where = f"{repo_id}@{revision}" if revision else repo_id
        reason = first_line(exc)
        raise ServiceError(f"Hub dataset id {where}: download failed ({reason}); check the id, "
                           "the network, and HF_TOKEN for a private repository") from None


def load_release_folder(folder: str | Path, *, origin: str | None = None,
                        cache_dir: str | Path | None = None) -> Benchmark:
    """Read a release folder with ``datasets`` and rebuild our records."""
    import datasets

    # The typed columns need `datasets` too.
    from mtcabench.benchmark.tables import conversation_from_row, span_from_row

    folder = Path(folder)
    manifest, problems = check_release(folder, extra_files=True)  # never reads them
    if problems or manifest is None:
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise InputError(f"{folder}: release files do not match their checksums and "
                         f"{MANIFEST_NAME}: " + "; ".join(problems[:5]) + more
                         + "; `mtcabench release verify` lists them: download or rebuild "
                         "the release")

    def rows(config: str):
        files = [str(folder / f) for f in manifest.config(config).files]
        return datasets.load_dataset("parquet", data_files={SPLIT: files}, split=SPLIT,
                                     cache_dir=str(cache_dir) if cache_dir else None)

    span_rows = rows("spans")
    conv_rows = rows("conversations")
    conversations = {}
    for row in conv_rows:
        try:
            conv = conversation_from_row(row)
        except (ValidationError, ValueError) as exc:
            msg = format_validation_error(exc) if isinstance(exc, ValidationError) else str(exc)
            raise InputError(f"{folder}: conversation {row.get('id')}: {msg}") from None
        conversations[conv.id] = conv
    spans = []
    for row in span_rows:
        try:
            span = span_from_row(row)
        except ValidationError as exc:
            raise InputError(f"{folder}: span {row.get('id')}: "
                             f"{format_validation_error(exc)}") from None
        if span.conversation_id not in conversations:
            raise InputError(f"{folder}: span {span.id} refers to conversation "
                             f"{span.conversation_id}, which the release does not hold")
        if (why := span_disagrees(span, conversations[span.conversation_id])) is not None:
            raise InputError(f"{folder}: {why}")
        spans.append(span)
    return Benchmark(conversations, spans, origin or str(folder))


def load_release(path_or_id: str | Path, *, revision: str | None = None,
                 endpoint: str | None = None, token: str | None = None,
                 cache_dir: str | Path | None = None) -> Benchmark:
    """The benchmark of a release folder or a Hub id (``ORG/NAME``, ``ORG/NAME@VERSION``).

    A local folder wins over a Hub id of the same spelling. ``endpoint`` overrides the Hub
    address (otherwise ``HF_ENDPOINT``); ``cache_dir`` is where downloads and ``datasets``'
    prepared tables go (their defaults otherwise).
    """
    path = Path(path_or_id)
    if path.is_dir():
        return load_release_folder(path, cache_dir=cache_dir)
    hub = parse_hub_id(str(path_or_id))
    if hub is None:
        raise InputError(f"{path_or_id}: neither a release folder nor a Hub dataset id "
                         "(ORG/NAME or ORG/NAME@VERSION)")
    repo_id, rev = hub
    rev = rev or revision
    try:
        folder = download_release(repo_id, revision=rev, endpoint=endpoint, token=token,
                                  cache_dir=Path(cache_dir) / "hub" if cache_dir else None)
    except ServiceError as exc:
        raise ServiceError(f"{path_or_id}: no such local folder, and as a {exc.message}") from None
    origin = f"hf://datasets/{repo_id}" + (f"@{rev}" if rev else "")
    return load_release_folder(folder, origin=origin,
                               cache_dir=Path(cache_dir) / "datasets" if cache_dir else None)


def load_benchmark(path_or_id: str | Path) -> Benchmark:
    """Load a benchmark from a JSONL folder, a release folder or a Hub id."""
    path = Path(path_or_id)
    if path.is_dir() and (path / "spans.jsonl").is_file():
        return load_jsonl_benchmark(path)
    if is_release_folder(path):
        return load_release(path)
    if not path.exists() and parse_hub_id(str(path_or_id)) is not None:
        return load_release(str(path_or_id))
    raise InputError(f"{path_or_id}: not a benchmark folder (expected conversations.jsonl and "
                     "spans.jsonl, or a release folder) or a Hub dataset id")
