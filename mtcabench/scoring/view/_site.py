"""Writing the run's page: a static folder (no server) that a browser opens from disk.

The folder holds four files: ``index.html``, ``view.css`` and ``view.js`` (the page, copied
from this package) and ``data.js``, the run's document (:func:`~._data.view_data`) as one
script, since a page opened from ``file://`` may load scripts but not fetch JSON. Span pages
are drawn by the script when a row is opened, so no file is named after a span id and the
folder's size does not grow with pages.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from mtcabench.benchmark import Benchmark
from mtcabench.errors import InputError
from mtcabench.io import atomic_write, check_outputs_are_not_inputs
from mtcabench.scoring.scorer import as_benchmark
from mtcabench.scoring.view._data import view_data

#: The page's files, copied as they are.
ASSETS = ("index.html", "view.css", "view.js")
#: The run's document.
DATA_NAME = "data.js"


def data_script(data: dict) -> str:
    """The document as a script: ``window.MTCA_VIEW = JSON.parse('...')``.

    Parsing a JSON string is faster in browsers than evaluating the same object literal; the
    JSON is ASCII (no line separator can end the string) with backslashes and quotes escaped.
    """
    text = json.dumps(data, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    quoted = text.replace("\\", "\\\\").replace("'", "\\'")
    return f"window.MTCA_VIEW = JSON.parse('{quoted}');\n"


def site_paths(out: str | Path) -> list[Path]:
    """The files :func:`write_site` writes into ``out``."""
    return [Path(out) / name for name in (*ASSETS, DATA_NAME)]


def write_site(
    benchmark: Benchmark | str | Path,
    submissions: Sequence[str | Path],
    out: str | Path,
) -> list[Path]:
    """What ``mtcabench view`` does: read, check and score every submission against the
    benchmark, and write the page into folder ``out``; returns the paths written.

    A path to write that is one of the inputs is refused before anything is read.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: exists and is not a folder; choose another --out")
    inputs: list[Path] = [Path(p) for p in submissions]
    if not isinstance(benchmark, Benchmark) and Path(benchmark).is_dir():
        inputs += [p for p in Path(benchmark).iterdir() if p.is_file()]
    paths = site_paths(out)
    check_outputs_are_not_inputs(inputs, paths)
    data = view_data(as_benchmark(benchmark), submissions)
    out.mkdir(parents=True, exist_ok=True)
    package = resources.files("mtcabench.scoring.view")
    for name, path in zip(ASSETS, paths):
        with atomic_write(path) as fh:
            fh.write(package.joinpath(name).read_text(encoding="utf-8"))
    with atomic_write(paths[-1]) as fh:
        fh.write(data_script(data))
    return paths
