"""``release build``: reviewed decisions + conversations -> a validated, Hub-ready release folder.

The whole input is read and validated before anything is written; any failure refuses the
release with every failure listed. The folder is then written into a hidden temporary folder
beside its final place and renamed into place only when complete, so a crash, SIGTERM, a full disk or a refusal
never leaves a partial release behind. A build holds a claim on its version
(:func:`mtcabench.files.claim_output`): a second build of the same version at the same time is
refused (exit 8), naming the first.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from mtcabench._version import __version__
from mtcabench.benchmark import (CARD_NAME, CHANGELOG_NAME, SPLITS, ConfigFiles,
                                 ReleaseManifest, SplitFiles, read_manifest, write_checksums,
                                 write_manifest)
from mtcabench.benchmark.tables import (CONVERSATION_FEATURES, conversation_row,
                                        span_features, span_from_row, span_row)
from mtcabench.errors import InputError, ValidationFailed
from mtcabench.graph import Violation
from mtcabench.io import (check_outputs_are_not_inputs, claim_output, seed_problem,
                          stop_signals_unwind)
from mtcabench.model import BenchmarkSpan, Candidate, Conversation, SpanKind
from mtcabench.progress import tracked
from mtcabench.release import _changelog
from mtcabench.release._card import SOURCES, render_card
from mtcabench.release._floors import floor_rows, floors_section, read_score_reports
from mtcabench.release._inputs import read_candidates, read_conversations, read_decisions
from mtcabench.release._parquet import WRITER_SETTINGS, read_rows, write_parquet
from mtcabench.release._select import SELECTION_RULE, Selection, select
from mtcabench.release._splits import (cap_spans, conversation_split, domain_violations,
                                       split_statistics)
from mtcabench.release._stats import recipe, review_statistics, span_statistics
from mtcabench.release._validate import credential_violations, validate_released

_VERSION = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._+-]*[A-Za-z0-9])?$")


@dataclass
class BuiltRelease:
    """A release folder that was written, with what it holds."""

    folder: Path
    manifest: ReleaseManifest
    spans: list[BenchmarkSpan]
    conversations: list[Conversation]


def check_version(version: str) -> None:
    """A version is a folder name and a git tag: letters, digits, '.', '_', '-', '+'."""
    if not _VERSION.match(version) or ".." in version:
        raise InputError(f"version {version!r} cannot name a folder and a tag; use letters, "
                         "digits, '.', '_', '-' (e.g. 1.0.0)")


def _span_order(s: BenchmarkSpan) -> tuple:
    return (s.conversation_id, s.span.turn, s.span.start, s.span.end, s.id)


def build_release(
    version: str,
    reviewed: str | Path,
    conversations: str | Path,
    *,
    out: str | Path = "release",
    candidates: str | Path | None = None,
    force: bool = False,
    scores: Sequence[str | Path] = (),
    split_by_task: bool = False,
    max_spans_per_conversation: int | None = None,
    cap_seed: int = 0,
    context: ContextCount | str | None = None,
) -> BuiltRelease:
    """Validate every accepted span and write ``<out>/<version>/``; refuse on any failure.

    ``reviewed`` holds ReviewDecision records (several per span allowed, see
    :data:`mtcabench.release.SELECTION_RULE`), ``conversations`` the Conversation records,
    ``candidates`` (optional) the Candidate records, read for the recipe only; ``scores``
    (optional) score reports of ``mtcabench score`` on this release, shown in the card's Floors
    section beside the model-free floors. An existing version is refused unless ``force``.
    ``split_by_task``: splits train/dev/test by task and a config per domain (see
    :mod:`mtcabench.release._splits`); without it a release is as 1.x built it, one split
    ``test``. ``max_spans_per_conversation``: release at most that many spans of one
    conversation, drawn by ``cap_seed``. ``context``: counts the spans past a model's context
    per domain for the card (a function of the conversations and spans, as
    :func:`mtcabench.evaluate.default_context_reach` gives), or why they cannot be counted here
    (the card says so); None leaves the count out. Raises ValidationFailed listing every
    failure.
    """
    check_version(version)
    if max_spans_per_conversation is not None and max_spans_per_conversation < 1:
        raise InputError(f"--max-spans-per-conversation {max_spans_per_conversation}: give at "
                         "least 1 (or leave it out for no cap)")
    if (why := seed_problem(cap_seed)) is not None:  # the one check of every seed
        raise InputError(f"--cap-seed: {why}")
    layout = Layout(split_by_task, max_spans_per_conversation, cap_seed)
    out = Path(out)
    target = out / version
    check_outputs_are_not_inputs([reviewed, conversations, candidates, *scores],
                                 folders=[target])
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: is a file, not a folder; choose another --out")
    created_out = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    try:
        # One build of a version at a time (a second is refused, naming the first); SIGTERM
        # and SIGHUP unwind like Ctrl-C, so that the half-built folder is removed.
        with claim_output(target), stop_signals_unwind():
            return _build(version, Path(reviewed), Path(conversations), out, target,
                          candidates, force, scores, layout, context)
    finally:
        if created_out:  # refused (or stopped) before the release was in place
            with contextlib.suppress(OSError):
                out.rmdir()


#: ``count(conversations, spans)``: per domain, the spans past a model's context (the card's
#: section; the evaluator's :func:`mtcabench.evaluate.context_reach` is one).
ContextCount = Callable[[list[Conversation], list[BenchmarkSpan]], dict]


@dataclass(frozen=True)
class Layout:
    """How the release is cut: splits by task, and the cap on spans per conversation."""

    split_by_task: bool = False
    cap: int | None = None
    cap_seed: int = 0


def _build(version: str, reviewed: Path, conversations: Path, out: Path, target: Path,
           candidates: str | Path | None, force: bool, scores: Sequence[str | Path],
           layout: Layout, context: ContextCount | str | None = None) -> BuiltRelease:
    failures: list[Violation] = []
    if target.exists() and not force:
        failures.append(Violation(str(target), "version-exists",
                                  "this version was already built; choose a new version or "
                                  "pass --force to rebuild it"))
    convs, bad = read_conversations(Path(conversations))
    failures += bad
    decisions, bad = read_decisions(Path(reviewed))
    failures += bad
    cands: list[Candidate] | None = None
    if candidates is not None:
        cands, bad = read_candidates(Path(candidates))
        failures += bad
    selection = select(decisions)
    failures += selection.failures
    with tracked(selection.released, "validate graphs", total=len(selection.released)) as it:
        spans, bad = validate_released(it, convs, {c.id: c for c in cands or []})
    failures += bad
    # Only the conversations that are released are published: those are the ones checked,
    # with the spans, every text column of both.
    failures += credential_violations(convs[cid] for cid in sorted({s.conversation_id
                                                                    for s in spans}))
    failures += credential_violations(spans)
    if layout.split_by_task:
        failures += domain_violations((convs[cid] for cid in sorted({s.conversation_id
                                                                     for s in spans})),
                                      sorted({s.source for s in spans}))
    capped = None
    if layout.cap is not None:
        # before the score reports are read: a report scores the released (capped) spans
        spans, capped = cap_spans(spans, layout.cap, layout.cap_seed,
                                  lambda cid: convs[cid].domain)
    evaluated, bad = read_score_reports([Path(p) for p in scores], spans)
    failures += bad
    if not selection.released and not selection.failures:
        failures.append(Violation(str(reviewed), "nothing-accepted",
                                  f"none of {len(selection.outcomes)} reviewed spans is accepted"))
    for source in sorted({s.source for s in spans} - SOURCES.keys()):
        failures.append(Violation(source, "source-licence",
                                  f"source {source!r} has no known licence (known: "
                                  f"{', '.join(sorted(SOURCES))})"))
    if failures:
        raise ValidationFailed(f"release {version} refused: {len(failures)} failure(s); "
                               "nothing was written", [str(v) for v in failures])

    spans.sort(key=_span_order)
    used = sorted({s.conversation_id for s in spans})
    released_convs = [convs[cid] for cid in used]
    tmp = Path(tempfile.mkdtemp(prefix=f".{version}.building-", dir=out))
    try:
        os.chmod(tmp, 0o755)  # mkdtemp makes it private; a release folder is for sharing
        floors = floors_section(spans, floor_rows(spans, convs), evaluated)
        manifest = _write_folder(tmp, out, version, spans, released_convs, selection, cands,
                                 floors, layout, capped, context)
        _move_into_place(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return BuiltRelease(target, manifest, spans, released_convs)


def _write_folder(folder: Path, out: Path, version: str, spans: list[BenchmarkSpan],
                  convs: list[Conversation], selection: Selection,
                  cands: list[Candidate] | None, floors: list[str], layout: Layout,
                  capped: dict | None, context: ContextCount | str | None = None,
                  ) -> ReleaseManifest:
    sources = sorted({c.source for c in convs})
    (folder / "data" / "spans").mkdir(parents=True)
    (folder / "data" / "conversations").mkdir(parents=True)
    span_columns = span_features(spans)
    if layout.split_by_task:
        configs, nbytes = _write_split_tables(folder, sources, spans, convs, span_columns)
    else:
        configs, nbytes = _write_tables(folder, sources, spans, convs, span_columns)
    statistics = span_statistics(spans, convs)
    if layout.split_by_task:
        statistics.update(split_statistics(spans, convs, cands))
    if capped is not None:
        statistics["cap"] = capped
    if isinstance(context, str):
        statistics["context"] = {"computed": False, "why": context}
    elif context is not None:
        statistics["context"] = context(convs, spans)

    previous = _changelog.find_previous(out, version)
    changes = None
    if previous is not None:
        old_spans, old_convs = _read_previous(previous)
        changes = _changelog.compare(old_spans, spans, old_convs, {c.id for c in convs})
    review = review_statistics(selection, spans)
    manifest = ReleaseManifest(
        version=version,
        builder=f"mtcabench {__version__}",
        previous_version=previous.name if previous else None,
        configs=configs,
        statistics=statistics,
        review=review,
        recipe=recipe(spans, cands, review),
        licenses={s: SOURCES[s]["license"] for s in sources},
        selection_rule=SELECTION_RULE,
        parquet_writer=WRITER_SETTINGS,
    )
    write_manifest(folder, manifest)
    features = {"spans": span_columns, "conversations": CONVERSATION_FEATURES}
    (folder / CARD_NAME).write_text(render_card(manifest, features, nbytes, floors),
                                    encoding="utf-8")
    changelog = _changelog.render(version, manifest.previous_version, changes, len(spans),
                                  len(convs), _changelog.read_earlier_changelog(previous))
    (folder / CHANGELOG_NAME).write_text(changelog, encoding="utf-8")
    write_checksums(folder)
    return manifest


def _write_split_tables(folder: Path, sources: list[str], spans: list[BenchmarkSpan],
                        convs: list[Conversation], span_columns,
                        ) -> tuple[list[ConfigFiles], dict[str, int]]:
    """The tables cut by source, domain and split (``data/<table>/<source>/<domain>-<split>``),
    and the configs: ``spans``, ``conversations``, ``all``, per domain and per source, each
    with the splits it holds. ``nbytes`` is keyed by config and by ``config/split``."""
    # (table, source, domain, split, file, rows, bytes) of every file written
    files: list[tuple[str, str, str, str, str, int, int]] = []
    for source in sources:
        (folder / "data" / "spans" / source).mkdir()
        (folder / "data" / "conversations" / source).mkdir()
        for domain in sorted({c.domain for c in convs if c.source == source}):
            for split in SPLITS:
                cs = [c for c in convs if c.source == source and c.domain == domain
                      and conversation_split(c.id) == split]
                if not cs:
                    continue
                ids = {c.id for c in cs}
                ss = [s for s in spans if s.conversation_id in ids]
                span_file = f"data/spans/{source}/{domain}-{split}.parquet"
                conv_file = f"data/conversations/{source}/{domain}-{split}.parquet"
                t = write_parquet(folder / span_file, (span_row(s) for s in ss), span_columns)
                files.append(("spans", source, domain, split, span_file, len(ss), t.nbytes))
                claims = [s for s in ss if s.span_kind is SpanKind.CLAIM]
                if claims:  # the claims config's own files (its spans are in `spans` too)
                    (folder / "data" / "claims" / source).mkdir(parents=True, exist_ok=True)
                    claim_file = f"data/claims/{source}/{domain}-{split}.parquet"
                    t = write_parquet(folder / claim_file, (span_row(s) for s in claims),
                                      span_columns)
                    files.append(("claims", source, domain, split, claim_file, len(claims),
                                  t.nbytes))
                t = write_parquet(folder / conv_file, (conversation_row(c) for c in cs),
                                  CONVERSATION_FEATURES)
                files.append(("conversations", source, domain, split, conv_file, len(cs),
                              t.nbytes))
    configs: list[ConfigFiles] = []
    nbytes: dict[str, int] = {}

    def config(name: str, table: str, keep, source: str | None = None) -> None:
        mine = [f for f in files if f[0] == table and keep(f)]
        splits = [SplitFiles(name=sp, files=[f[4] for f in mine if f[3] == sp],
                             rows=sum(f[5] for f in mine if f[3] == sp))
                  for sp in SPLITS if any(f[3] == sp for f in mine)]
        configs.append(ConfigFiles(name=name, table="spans" if table == "claims" else table,
                                   source=source, files=[f[4] for f in mine],
                                   rows=sum(f[5] for f in mine), splits=splits))
        nbytes[name] = sum(f[6] for f in mine)
        for sp in SPLITS:
            nbytes[f"{name}/{sp}"] = sum(f[6] for f in mine if f[3] == sp)

    config("spans", "spans", lambda f: True)
    config("conversations", "conversations", lambda f: True)
    config("all", "spans", lambda f: True)
    if any(f[0] == "claims" for f in files):
        config("claims", "claims", lambda f: True)
    for domain in sorted({c.domain for c in convs}):
        config(domain, "spans", lambda f, d=domain: f[2] == d)
        config(f"{domain}-conversations", "conversations", lambda f, d=domain: f[2] == d)
    for source in sources:
        config(source, "spans", lambda f, s=source: f[1] == s, source)
        config(f"{source}-conversations", "conversations", lambda f, s=source: f[1] == s,
               source)
    return configs, nbytes


def _write_tables(folder: Path, sources: list[str], spans: list[BenchmarkSpan],
                  convs: list[Conversation], span_columns,
                  ) -> tuple[list[ConfigFiles], dict[str, int]]:
    """The 1.x layout: one file per source and table, one split (``test``)."""
    configs: list[ConfigFiles] = []
    nbytes: dict[str, int] = {}
    per_source: list[tuple[ConfigFiles, ConfigFiles]] = []
    for source in sources:
        span_file = f"data/spans/{source}.parquet"
        conv_file = f"data/conversations/{source}.parquet"
        ss = [s for s in spans if s.source == source]
        cs = [c for c in convs if c.source == source]
        span_table = write_parquet(folder / span_file, (span_row(s) for s in ss), span_columns)
        conv_table = write_parquet(folder / conv_file, (conversation_row(c) for c in cs),
                                   CONVERSATION_FEATURES)
        sc = ConfigFiles(name=source, table="spans", source=source, files=[span_file], rows=len(ss))
        cc = ConfigFiles(name=f"{source}-conversations", table="conversations", source=source,
                         files=[conv_file], rows=len(cs))
        nbytes[sc.name], nbytes[cc.name] = span_table.nbytes, conv_table.nbytes
        per_source.append((sc, cc))
    configs.append(ConfigFiles(name="spans", table="spans", files=[s.files[0] for s, _ in per_source],
                               rows=len(spans)))
    configs.append(ConfigFiles(name="conversations", table="conversations",
                               files=[c.files[0] for _, c in per_source], rows=len(convs)))
    nbytes["spans"] = sum(nbytes[s.name] for s, _ in per_source)
    nbytes["conversations"] = sum(nbytes[c.name] for _, c in per_source)
    claims = [s for s in spans if s.span_kind is SpanKind.CLAIM]
    if claims:  # the claims config's own files (its spans are in `spans` too)
        (folder / "data" / "claims").mkdir()
        claim_files = []
        nbytes["claims"] = 0
        for source in sources:
            mine = [s for s in claims if s.source == source]
            if mine:
                claim_files.append(f"data/claims/{source}.parquet")
                nbytes["claims"] += write_parquet(folder / claim_files[-1],
                                                  (span_row(s) for s in mine),
                                                  span_columns).nbytes
        configs.append(ConfigFiles(name="claims", table="spans", files=claim_files,
                                   rows=len(claims)))
    for sc, cc in per_source:
        configs += [sc, cc]
    return configs, nbytes


def _read_previous(previous: Path) -> tuple[list[BenchmarkSpan], set[str]]:
    """The spans and conversation ids of an earlier release, for the changelog."""
    try:
        manifest = read_manifest(previous)
        spans = [span_from_row(r) for f in manifest.config("spans").files
                 for r in read_rows(previous / f)]
        conv_ids = {i for f in manifest.config("conversations").files
                    for i in pq.read_table(previous / f, columns=["id"]).column("id").to_pylist()}
    except (OSError, KeyError, ValueError) as exc:
        raise InputError(f"{previous}: earlier release unreadable for the changelog ({exc}); "
                         "repair it or move it out of the output folder") from None
    return spans, conv_ids


def _move_into_place(tmp: Path, target: Path) -> None:
    if not target.exists():
        os.rename(tmp, target)
        return
    # --force: swap folders so that the old release stays whole until the new one is in place.
    old = target.parent / f".{target.name}.replaced-{uuid.uuid4().hex[:8]}"
    os.rename(target, old)
    try:
        os.rename(tmp, target)
    except BaseException:
        os.rename(old, target)
        raise
    shutil.rmtree(old, ignore_errors=True)
