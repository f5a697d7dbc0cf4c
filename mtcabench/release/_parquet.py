"""Writing and reading the release's Parquet files with pinned, reproducible settings.

Every writer setting that shapes the bytes is fixed here, so that building twice from the
same inputs (with the same pyarrow) gives byte-identical files: Parquet itself stores no
timestamp, and rows come in an order the caller fixes. Content-defined chunking keeps page
boundaries stable between releases that differ a little, so the Hub's storage can share the
unchanged parts.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from datasets import Features

#: The pinned writer settings (recorded in the release manifest).
WRITER_SETTINGS: dict[str, Any] = {
    "compression": "zstd",
    "compression_level": 3,
    "use_dictionary": True,
    "write_statistics": True,
    "version": "2.6",
    "data_page_version": "1.0",
    "row_group_size": 1000,
    "write_page_index": False,
    "store_schema": True,
    "use_content_defined_chunking": True,
}


def write_parquet(path: Path, rows: Iterable[dict[str, Any]], features: Features) -> pa.Table:
    """Write ``rows`` (already in their final order) to ``path``; returns the table written.

    The schema carries the ``datasets`` features in its ``huggingface`` metadata, as
    ``datasets`` itself writes it, so readers get the typed columns without the card.
    """
    table = pa.Table.from_pylist(list(rows), schema=features.arrow_schema)
    pq.write_table(table, path, **WRITER_SETTINGS)
    return table


def read_rows(path: Path) -> list[dict[str, Any]]:
    """All rows of a release Parquet file as dicts (used to compare with an earlier release)."""
    return pq.read_table(path).to_pylist()
