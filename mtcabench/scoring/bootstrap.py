"""Bootstrap confidence intervals of the averages, vectorised with numpy.

A resample draws a group's spans with replacement. Every average is a function of column
sums of the per-span matrix (:func:`mtcabench.results.metrics.span_matrix`), so a block of
resamples is one matrix of draw counts times that matrix: 1,000 resamples of 3,845 spans
take one ``(1000, 3845) @ (3845, 16)`` product, not a Python loop.

Each report row draws from its own generator, seeded by the fixed seed and the row's span
ids, so a row's interval depends on nothing but its spans (two rows holding the same spans
agree); a comparison applies the same draws to both submissions (a paired bootstrap).

With ``clusters`` (an id per span, such as its conversation) whole clusters are drawn and a
span counts as often as its cluster was drawn: spans of one conversation share its prompt, its
tool results and its model pass, so they are not independent, and the studies' intervals
(mtcabench.studies) resample conversations. The same matrix product serves both.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

import numpy as np

from mtcabench.results.metrics import aggregate

DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 0
CONFIDENCE = 0.95

#: Draw counts held at once (cells of a block): about 8 MB per array, so memory stays flat.
_BLOCK_CELLS = 1_000_000


def row_rng(seed: int, key: str) -> np.random.Generator:
    """The generator of one report row: fixed seed plus a stable hash of the row's spans."""
    return np.random.default_rng([seed, zlib.crc32(key.encode("utf-8"))])


def resample_counts(n: int, resamples: int, rng: np.random.Generator,
                    clusters: np.ndarray | None = None) -> Iterator[np.ndarray]:
    """Blocks of ``(b, n)`` draw counts: how often each of n spans was drawn per resample.

    With ``clusters`` (n ids), the clusters are drawn with replacement and each span counts as
    often as its cluster was drawn.
    """
    if clusters is not None:
        clusters = np.asarray(clusters)
        if len(clusters) != n:
            raise ValueError(f"{len(clusters)} cluster ids for {n} spans")
        _, member = np.unique(clusters, return_inverse=True)
        for counts in resample_counts(int(member.max()) + 1 if n else 0, resamples, rng):
            yield counts[:, member]
        return
    block = max(1, _BLOCK_CELLS // max(n, 1))
    for start in range(0, resamples, block):
        b = min(block, resamples - start)
        idx = rng.integers(0, n, size=(b, n))
        # Offset each resample's draws into its own slot so one bincount counts them all.
        idx += np.arange(b, dtype=idx.dtype)[:, None] * n
        yield np.bincount(idx.ravel(), minlength=b * n).reshape(b, n).astype(np.float64)


def resampled_averages(
    matrices: list[np.ndarray], resamples: int, rng: np.random.Generator,
    clusters: np.ndarray | None = None,
) -> list[dict[str, dict[str, np.ndarray]]]:
    """Averages of every metric over ``resamples`` resamples, for each matrix.

    All matrices hold the same spans in the same order and get the same draws (paired);
    ``clusters``: draw whole clusters (see :func:`resample_counts`).
    Returns, per matrix, ``{metric: {"macro": (resamples,), "micro": (resamples,)}}``.
    """
    n = matrices[0].shape[0]
    sums: list[list[np.ndarray]] = [[] for _ in matrices]
    sizes: list[np.ndarray] = []
    for counts in resample_counts(n, resamples, rng, clusters):
        sizes.append(counts.sum(axis=1))
        for out, m in zip(sums, matrices):
            out.append(counts @ m)
    size = np.concatenate(sizes) if sizes else np.zeros(0)
    return [aggregate(np.concatenate(s, axis=0), size) for s in sums]


def resampled_means(
    vectors: list[np.ndarray], resamples: int, rng: np.random.Generator,
    clusters: np.ndarray | None = None,
) -> list[np.ndarray]:
    """The mean of each per-span vector over ``resamples`` resamples, the same draws for all
    (paired); NaN marks a span where the value is undefined, left out of that mean."""
    n = len(vectors[0])
    defined = [~np.isnan(v) for v in vectors]
    values = [np.where(d, v, 0.0) for v, d in zip(vectors, defined)]
    out: list[list[np.ndarray]] = [[] for _ in vectors]
    for counts in resample_counts(n, resamples, rng, clusters):
        for o, v, d in zip(out, values, defined):
            with np.errstate(invalid="ignore", divide="ignore"):
                o.append((counts @ v) / (counts @ d))
    return [np.concatenate(o) if o else np.zeros(0) for o in out]


def interval(samples: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """Percentile interval of resampled values, ignoring undefined (NaN) resamples."""
    finite = samples[~np.isnan(samples)]
    if finite.size == 0:
        return None
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    return float(low), float(high)


def paired_p_value(differences: np.ndarray) -> float | None:
    """Two-sided bootstrap p-value that the difference is 0: twice the smaller tail share."""
    finite = differences[~np.isnan(differences)]
    if finite.size == 0:
        return None
    tail = min(np.mean(finite <= 0), np.mean(finite >= 0))
    return float(min(1.0, 2 * tail))
