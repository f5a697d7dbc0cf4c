"""Joining the submissions of ``--shard K/N`` runs into one.

Every shard must come from the same run settings (method, scorer, model, parameters,
benchmark), shards 1..N must each appear exactly once, and no span may appear twice; the
merged header keeps the settings, sums the costs and drops the shard mark. The output may not
be one of the shards.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from mtcabench.errors import InputError
from mtcabench.io import check_outputs_are_not_inputs
from mtcabench.model import SubmissionEntry, SubmissionHeader
from mtcabench.results import RUN_KEY, read_submission, run_key, shard_of, write_submission

_SUMMED = ("spans", "skipped", "windowed", "conversations", "forward_passes", "wall_s")


def _read(path: Path) -> tuple[SubmissionHeader | None, list[SubmissionEntry]]:
    """A shard as the submission module reads it (strictly, a span once per file)."""
    sub = read_submission(path)
    return sub.header, list(sub.entries.values())


def merge_shards(shards: Iterable[str | Path], out: str | Path) -> int:
    """Merge shard submissions into ``out`` (written atomically); returns the number of spans."""
    paths = [Path(p) for p in shards]
    if not paths:
        raise InputError("trace-merge needs the shard files to merge")
    check_outputs_are_not_inputs(paths, [out])
    read = [(p, *_read(p)) for p in paths]
    first_path, first, _ = read[0]
    seen_shards: dict[int, Path] = {}
    count = None
    spans: dict[str, Path] = {}
    merged: list[SubmissionEntry] = []
    notes_sum = {k: 0 for k in _SUMMED}
    by_domain: dict[str, list[int]] = {}  # windowed_by_domain, summed like the counts
    for path, header, entries in read:
        if header is None:
            raise InputError(f"{path}: not a shard (it has no submission header)")
        ours, theirs = run_key(header), run_key(first)
        for key in RUN_KEY:
            if ours[key] != theirs[key]:
                raise InputError(f"{path}: {key} differs from {first_path} "
                                 f"({ours[key]!r} vs {theirs[key]!r}); "
                                 "only shards of one run can be merged")
        shard = shard_of(header)
        if not shard:
            raise InputError(f"{path}: not a shard (its header has no shard mark)")
        k, n = int(shard["index"]), int(shard["count"])
        if count is None:
            count = n
        if n != count:
            raise InputError(f"{path}: shard {k}/{n}, but {first_path} is one of {count}")
        if k in seen_shards:
            raise InputError(f"{path}: shard {k}/{n} given twice (also {seen_shards[k]})")
        seen_shards[k] = path
        for e in entries:
            if e.span_id in spans:
                raise InputError(f"{path}: span {e.span_id} also in {spans[e.span_id]}")
            spans[e.span_id] = path
            merged.append(e)
        for key in _SUMMED:
            notes_sum[key] += header.notes.get(key, 0) or 0
        for domain, (w, n) in (header.notes.get("windowed_by_domain") or {}).items():
            row = by_domain.setdefault(domain, [0, 0])
            row[0], row[1] = row[0] + w, row[1] + n
    missing = sorted(set(range(1, (count or 0) + 1)) - set(seen_shards))
    if missing:
        raise InputError(f"shards {missing} of {count} are missing; merge needs all of them")
    notes = {k: v for k, v in first.notes.items()
             if k not in ("shard", "windowed_by_domain", *_SUMMED)}
    notes.update(notes_sum)
    if by_domain:
        notes["windowed_by_domain"] = dict(sorted(by_domain.items()))
    notes["merged_shards"] = count
    header = first.model_copy(update={"notes": notes})
    merged.sort(key=lambda e: e.span_id)
    return write_submission(Path(out), header, merged)
