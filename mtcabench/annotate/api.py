"""The stage's entry points: ``annotate_propose``, ``annotate_verify`` and ``annotate_run``.

Each streams its input, writes its records as they are ready (resumable: a rerun skips what
is written and answers finished requests from the cache), prints a summary, writes it as
``summary.json`` beside the outputs, and returns it. A budget stop raises
:class:`~mtcabench.errors.Stopped` after everything finished has been written.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from mtcabench.annotate.accounting import Accounting, Budget
from mtcabench.annotate.batch import BatchCollector, BatchRunner, BatchState
from mtcabench.annotate.cache import ResponseCache
from mtcabench.annotate.chat_requests import RequestBuilder, RequestSettings, Sampling
from mtcabench.annotate.client import ApiClient, Endpoint
from mtcabench.annotate.combine import MAIN_CHOICES
from mtcabench.annotate.display import RunProgress
from mtcabench.annotate.endpoints import open_endpoint
from mtcabench.annotate.executor import RequestExecutor
from mtcabench.annotate.pipeline import AnnotationPipeline, ConversationIndex, LineageFn, RecordSink
from mtcabench.annotate.summary import RunSummary
from mtcabench.annotate.templates import load_template
from mtcabench.annotate.transcript import TranscriptLimits
from mtcabench.errors import InputError, Stopped
from mtcabench.io import read_records
from mtcabench.model import Conversation, Proposal
from mtcabench.progress import err_console

ANNOTATORS = ("lineage", "llm")
DEFAULT_CONCURRENCY = 4
CACHE_NAME = "annotate-cache.sqlite"

#: Request settings for the embedded SmolLM2 server: 2 slow cores and an 8k context, so
#: shorter transcripts, fewer targets per request and shorter answers.
EMBEDDED_SETTINGS = RequestSettings(
    sampling=Sampling(max_tokens_propose=512, max_tokens_verify=320),
    limits=TranscriptLimits(max_turn_chars=700, max_chars=5000),
    targets_per_request=2,
    spans_per_request=3,
)


@dataclass
class AnnotateOptions:
    """Settings shared by the three entry points (the CLI flags of the same names)."""

    base_url: str | None = None
    model: str | None = None
    response_format: str | None = None  # json_schema | json_object (default by endpoint)
    concurrency: int | None = None  # default: 4; 1 on the embedded server (it serialises)
    cache: str | Path | None = None  # default: annotate-cache.sqlite beside the outputs
    budget: Budget = field(default_factory=Budget)
    batch: bool = False
    batch_poll_s: float = 30.0
    settings: RequestSettings | None = None  # default: by endpoint (compact when embedded)
    # Overrides of single settings (None: the endpoint's default settings' value).
    targets_per_request: int | None = None
    max_turn_chars: int | None = None
    max_prompt_chars: int | None = None
    propose_max_tokens: int | None = None
    verify_max_tokens: int | None = None
    temperature: float | None = None
    seed: int | None = None
    prompts_dir: str | Path | None = None
    propose_prompt: str | None = None  # a version such as propose-v1; default: newest
    verify_prompt: str | None = None
    timeout_s: float = 300.0
    max_attempts: int = 6
    backoff_s: float = 1.0  # base of the exponential backoff between retries
    limit: int | None = None  # only the first N conversations
    progress: bool = True
    console: Console | None = None
    server_log: str | None = None  # where the embedded server logs (default: a temp file)


@dataclass
class _Session:
    endpoint: Endpoint | None
    builder: RequestBuilder | None
    cache: ResponseCache | None
    client: ApiClient | None
    accounting: Accounting
    concurrency: int = 1


def _check_annotators(annotators: Sequence[str] | str) -> tuple[str, ...]:
    if isinstance(annotators, str):
        annotators = [a.strip() for a in annotators.split(",") if a.strip()]
    unknown = [a for a in annotators if a not in ANNOTATORS]
    if unknown or not annotators:
        raise InputError(f"--annotators takes a comma-separated list of {', '.join(ANNOTATORS)}; "
                         f"got {','.join(annotators) or 'nothing'}")
    return tuple(a for a in ANNOTATORS if a in annotators)


def load_lineage() -> LineageFn:
    """The lineage annotator (mtcabench.annotate.lineage.propose_lineage)."""
    try:
        from mtcabench.annotate.lineage import propose_lineage
    except ImportError as exc:
        raise InputError(f"the lineage annotator is not available ({exc}); run with "
                         "--annotators llm") from None
    return propose_lineage


@contextlib.contextmanager
def _session(opts: AnnotateOptions, needs_llm: bool, out_folder: Path) -> Iterator[_Session]:
    accounting = Accounting(opts.budget)
    if not needs_llm:
        yield _Session(None, None, None, None, accounting)
        return
    templates = {  # load first: a bad template should fail before a server starts
        "propose_template": load_template("propose", opts.propose_prompt, opts.prompts_dir),
        "verify_template": load_template("verify", opts.verify_prompt, opts.prompts_dir),
    }
    with open_endpoint(opts.base_url, opts.model, opts.response_format,
                       timeout_s=opts.timeout_s, max_attempts=opts.max_attempts,
                       backoff_s=opts.backoff_s, server_log=opts.server_log) as endpoint:
        settings = _settings(opts, endpoint)
        builder = RequestBuilder(endpoint, settings, **templates)
        # llama-cpp-python's server answers one request at a time: more in flight would
        # only queue there, and a queued request can time out while it waits.
        concurrency = opts.concurrency or (1 if endpoint.identity.startswith("embedded")
                                           else DEFAULT_CONCURRENCY)
        cache_path = Path(opts.cache) if opts.cache else out_folder / CACHE_NAME
        with ResponseCache(cache_path) as cache, ApiClient(
                endpoint, accounting, max_connections=concurrency) as client:
            yield _Session(endpoint, builder, cache, client, accounting, concurrency)


def _settings(opts: AnnotateOptions, endpoint: Endpoint) -> RequestSettings:
    base = opts.settings or (EMBEDDED_SETTINGS if endpoint.identity.startswith("embedded")
                             else RequestSettings())

    def pick(value, default):
        return default if value is None else value

    s, lim = base.sampling, base.limits
    try:
        return RequestSettings(
            sampling=Sampling(temperature=pick(opts.temperature, s.temperature),
                              seed=pick(opts.seed, s.seed),
                              max_tokens_propose=pick(opts.propose_max_tokens,
                                                      s.max_tokens_propose),
                              max_tokens_verify=pick(opts.verify_max_tokens, s.max_tokens_verify)),
            limits=TranscriptLimits(max_turn_chars=pick(opts.max_turn_chars, lim.max_turn_chars),
                                    max_chars=pick(opts.max_prompt_chars, lim.max_chars)),
            targets_per_request=pick(opts.targets_per_request, base.targets_per_request),
            spans_per_request=base.spans_per_request,
        )
    except ValueError as exc:
        raise InputError(f"request settings: {exc}") from None


def _check_paths(inputs: Sequence[Path], out: Path | None = None) -> None:
    for path in inputs:
        if not path.is_file():
            raise InputError(f"{path}: no such file")
    if out is not None and not out.parent.is_dir():
        raise InputError(f"{out}: folder {out.parent} does not exist; create it or choose "
                         "another path")


def _count_lines(path: Path, limit: int | None) -> int:
    with path.open("rb") as fh:
        n = sum(1 for line in fh if line.strip())
    return min(n, limit) if limit is not None else n


def _conversations(path: Path, limit: int | None) -> Iterator[Conversation]:
    records = read_records(path, Conversation)
    return itertools.islice(records, limit) if limit is not None else records


def _drive(opts: AnnotateOptions, session: _Session, state_path: Path, batch_dir: Path,
           progress: RunProgress, one_pass: Callable[[RequestExecutor], RunSummary]
           ) -> RunSummary:
    """One pass online; with the Batch API, passes that collect, submit and collect again."""
    def executor(collector=None) -> RequestExecutor:
        return RequestExecutor(session.cache, session.accounting, session.client,
                               concurrency=session.concurrency, collector=collector,
                               on_progress=progress.refresh)

    if session.cache is None:  # no LLM: nothing to send
        return one_pass(None)
    if not opts.batch:
        with executor() as ex:
            return one_pass(ex)
    runner = BatchRunner(session.client, session.cache, session.accounting, BatchState(state_path),
                         poll_s=opts.batch_poll_s, log=progress.log)
    batches = []
    for entry in runner.state.pending():  # a batch a killed run was waiting for
        batches.append(runner.wait_and_collect(entry["batch_id"]).as_dict())
    # A run needs at most three passes: propose misses, then verify misses, then none.
    written = {"proposals": 0, "candidates": 0}
    for round_no in range(1, 5):
        collector = BatchCollector(batch_dir, prefix=f"{state_path.stem}-r{round_no}")
        progress.reset()
        with executor(collector) as ex:
            summary = one_pass(ex)
        collector.close()
        # Each pass re-reads what earlier passes wrote: count those as written by this run.
        for name, done in written.items():
            tally = getattr(summary, name)
            tally.already -= done
            tally.written += done
            written[name] = tally.written
        if not len(collector):
            break
        answered = 0
        for path in collector.files:
            n = sum(1 for _ in path.open("rb"))
            result = runner.wait_and_collect(runner.submit(path, n))
            batches.append(result.as_dict())
            answered += result.answered
        if not answered:  # every line failed: passing again would loop; report instead
            break
    summary.batches = batches
    return summary


def _finish(summary: RunSummary, session: _Session, path: Path, opts: AnnotateOptions
            ) -> RunSummary:
    if session.accounting.stopped_by_budget:
        b = session.accounting.budget
        limit = " and ".join(x for x in (
            f"{b.max_tokens} tokens" if b.max_tokens is not None else "",
            f"${b.max_cost}" if b.max_cost is not None else "") if x)
        summary.stopped = (f"budget of {limit} reached ({session.accounting.spent_tokens} "
                           "tokens spent); rerun (with a higher limit) to resume")
    summary.write(path)
    summary.outputs["summary"] = str(path)
    summary.render(opts.console or err_console)
    if summary.stopped:
        err = Stopped(summary.stopped)
        err.summary = summary
        raise err
    return summary


def _llm_labels(summary: RunSummary, session: _Session) -> None:
    if session.endpoint is not None:
        summary.endpoint = session.endpoint.identity
        summary.model = session.endpoint.model


def annotate_propose(conversations: str | Path, out: str | Path, **options) -> RunSummary:
    """Phase 1: propose spans and graphs for every conversation into ``out`` (JSONL)."""
    opts = AnnotateOptions(**options)
    conversations, out = Path(conversations), Path(out)
    _check_paths([conversations], out)
    with _session(opts, True, out.parent) as session, RunProgress(
            "propose", _count_lines(conversations, opts.limit), session.accounting,
            opts.progress) as progress:
        def one_pass(ex: RequestExecutor) -> RunSummary:
            summary = RunSummary(command="propose", annotators=("llm",),
                                 accounting=session.accounting)
            _llm_labels(summary, session)
            sink = RecordSink(out, summary.proposals)
            try:
                AnnotationPipeline(executor=ex, summary=summary, builder=session.builder,
                                   proposals=sink, candidates=None, verify=False,
                                   on_conversation=progress.advance
                                   ).run(_conversations(conversations, opts.limit))
            finally:
                sink.close()
            summary.outputs["proposals"] = str(out)
            return summary

        summary = _drive(opts, session, out.with_name(out.stem + "-batches.json"), out.parent,
                         progress, one_pass)
        return _finish(summary, session, out.with_name(out.stem + "-summary.json"), opts)


def annotate_verify(conversations: str | Path, proposals: str | Path, out: str | Path,
                    **options) -> RunSummary:
    """Phase 2: verify the ``ok`` proposals of ``proposals`` into candidates ``out`` (JSONL)."""
    opts = AnnotateOptions(**options)
    conversations, proposals, out = Path(conversations), Path(proposals), Path(out)
    _check_paths([conversations, proposals], out)
    index = ConversationIndex(conversations)
    with _session(opts, True, out.parent) as session, RunProgress(
            "verify", None, session.accounting, opts.progress) as progress:
        def one_pass(ex: RequestExecutor) -> RunSummary:
            summary = RunSummary(command="verify", annotators=("llm",),
                                 accounting=session.accounting)
            _llm_labels(summary, session)
            sink = RecordSink(out, summary.candidates)
            try:
                AnnotationPipeline(executor=ex, summary=summary, builder=session.builder,
                                   proposals=None, candidates=sink,
                                   on_conversation=progress.advance
                                   ).verify_proposals(read_records(proposals, Proposal), index)
            finally:
                sink.close()
            summary.outputs["candidates"] = str(out)
            return summary

        summary = _drive(opts, session, out.with_name(out.stem + "-batches.json"), out.parent,
                         progress, one_pass)
        return _finish(summary, session, out.with_name(out.stem + "-summary.json"), opts)


def annotate_run(conversations: str | Path, out_dir: str | Path, *,
                 annotators: Sequence[str] | str = ANNOTATORS, main: str = "lineage",
                 **options) -> RunSummary:
    """Both phases and the lineage annotator, combined: ``out_dir/candidates.jsonl``.

    Writes ``proposals.jsonl`` (LLM phase 1), ``candidates.jsonl`` (one per span; where both
    annotators gave a graph, ``main`` decides which is the main one and the other is kept in
    ``alternatives``), ``annotate-cache.sqlite`` and ``summary.json``. With no ``base_url``
    and no ``OPENAI_API_KEY`` the embedded llama.cpp server is started for the run.
    """
    opts = AnnotateOptions(**options)
    chosen = _check_annotators(annotators)
    if main not in MAIN_CHOICES:
        raise InputError(f"--main must be one of {', '.join(MAIN_CHOICES)}, not {main!r}")
    conversations, out_dir = Path(conversations), Path(out_dir)
    _check_paths([conversations])
    out_dir.mkdir(parents=True, exist_ok=True)
    lineage = load_lineage() if "lineage" in chosen else None
    with _session(opts, "llm" in chosen, out_dir) as session, RunProgress(
            "annotate", _count_lines(conversations, opts.limit), session.accounting,
            opts.progress) as progress:
        def one_pass(ex: RequestExecutor | None) -> RunSummary:
            summary = RunSummary(command="run", annotators=chosen, accounting=session.accounting)
            _llm_labels(summary, session)
            proposals = (RecordSink(out_dir / "proposals.jsonl", summary.proposals)
                         if session.builder else None)
            candidates = RecordSink(out_dir / "candidates.jsonl", summary.candidates)
            # Lineage only: an executor with nothing to send, for the same windowed loop.
            owned = ex is None
            if owned:
                ex = RequestExecutor(_NoCache(), session.accounting, None, concurrency=1)
            try:
                AnnotationPipeline(executor=ex, summary=summary, builder=session.builder,
                                   proposals=proposals, candidates=candidates,
                                   lineage=lineage, main=main,
                                   on_conversation=progress.advance
                                   ).run(_conversations(conversations, opts.limit))
            finally:
                if owned:
                    ex.shutdown()
                candidates.close()
                if proposals is not None:
                    proposals.close()
            if proposals is not None:
                summary.outputs["proposals"] = str(proposals.path)
            summary.outputs["candidates"] = str(candidates.path)
            return summary

        summary = _drive(opts, session, out_dir / "batches.json", out_dir, progress, one_pass)
        return _finish(summary, session, out_dir / "summary.json", opts)


class _NoCache:
    """Stands in for the cache when only lineage runs (no request is ever made)."""

    def get(self, key: str) -> None:
        return None


__all__ = [
    "EMBEDDED_SETTINGS",
    "AnnotateOptions",
    "annotate_propose",
    "annotate_run",
    "annotate_verify",
    "load_lineage",
]
