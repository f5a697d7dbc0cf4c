"""The one runner behind the three entry points: check, open, drive the passes, finish.

An entry point describes its job (:class:`Job`: its inputs, its output files, the part of the
phase chain it runs and how its input feeds the pipeline); :func:`run_job` does the rest the
same way for all three. It refuses bad paths (an output that is one of the inputs among
them) before anything is opened for writing, loads the prompt templates (a bad one fails
before a server starts), opens the endpoint, the cache and the client, drives one online
pass or the Batch API's passes, writes and prints the summary, and raises
:class:`~mtcabench.errors.Stopped` on a budget stop. It holds its record files for the whole
run (:func:`~mtcabench.files.claim_output`: a concurrent run on them is refused, exit 8), and
refuses an output whose records another model or prompt made before any request
(:func:`~mtcabench.annotate.records.check_signature`). Outputs are created with their first
record, so a run refused before any answer (a bad key, an unreachable endpoint) leaves no
file behind, and a folder it created is removed again.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from mtcabench.annotate.combine import DEFAULT_MAIN
from mtcabench.annotate.display import RunProgress
from mtcabench.annotate.llm.accounting import Accounting
from mtcabench.annotate.llm.batch import BatchCollector, BatchRunner, BatchState
from mtcabench.annotate.llm.cache import ResponseCache
from mtcabench.annotate.llm.executor import RequestExecutor
from mtcabench.annotate.llm.providers import Endpoint, open_endpoint
from mtcabench.annotate.options import CACHE_NAME, AnnotateOptions
from mtcabench.annotate.phases import Phase, PromptTemplate, check_chain
from mtcabench.annotate.pipeline import AnnotationPipeline, LineageFn
from mtcabench.annotate.records import RecordSink
from mtcabench.annotate.summary import RunSummary
from mtcabench.errors import InputError, Stopped
from mtcabench.io import check_outputs_are_not_inputs, claim_output, input_file, read_records
from mtcabench.model import Conversation
from mtcabench.progress import err_console

#: How a job's input reaches the pipeline (``pipeline.run(...)`` or ``verify_proposals``).
Feed = Callable[[AnnotationPipeline], None]


@dataclass
class Job:
    """What one entry point runs."""

    command: str  # propose | verify | run: the summary's name
    label: str  # the progress bar's
    inputs: tuple[Path, ...]
    #: Where the outputs go (the cache and batch files too, by default).
    folder: Path
    summary: Path
    batch_state: Path
    #: Called once the paths are checked: reads what must be read up front, gives the feed.
    open_input: Callable[[], Feed]
    proposals: Path | None = None
    candidates: Path | None = None
    annotators: tuple[str, ...] = ("llm",)
    #: The part of the phase chain the job runs: "first", "last" or "all".
    steps: str = "all"
    #: The progress bar's total (None: unknown).
    total: Callable[[], int | None] = lambda: None
    lineage: LineageFn | None = None
    main: str = DEFAULT_MAIN
    #: Whether the job makes its folder (``run``) rather than writing into an existing one.
    makes_folder: bool = False
    #: Which output a missing folder is reported for.
    primary: Path | None = None


@dataclass
class _Session:
    endpoint: Endpoint | None
    phases: tuple[Phase, ...]
    cache: ResponseCache | None
    client: object | None  # the ApiClient (imported with the SDK only when requests go out)
    accounting: Accounting
    concurrency: int = 1


def conversations_of(path: Path, limit: int | None) -> Iterator[Conversation]:
    records = read_records(path, Conversation)
    return itertools.islice(records, limit) if limit is not None else records


def count_lines(path: Path, limit: int | None) -> int:
    with path.open("rb") as fh:
        n = sum(1 for line in fh if line.strip())
    return min(n, limit) if limit is not None else n


def _cache_path(job: Job, opts: AnnotateOptions) -> Path:
    return Path(opts.cache) if opts.cache else job.folder / CACHE_NAME


def _check_paths(job: Job, opts: AnnotateOptions) -> None:
    inputs = (*job.inputs, *([Path(opts.targets)] if opts.targets else []))
    for path in inputs:
        input_file(path, "a JSON Lines file")
    outputs = [job.proposals, job.candidates, job.summary, job.batch_state,
               _cache_path(job, opts)]
    check_outputs_are_not_inputs(inputs, outputs)
    if job.makes_folder:
        if job.folder.exists() and not job.folder.is_dir():
            raise InputError(f"{job.folder}: is a file, not a folder; choose another --out-dir")
    elif not job.folder.is_dir():
        raise InputError(f"{job.primary or job.folder}: folder {job.folder} does not exist; "
                         "create it or choose another path")
    for out in outputs:
        if out is not None and out.is_dir():
            raise InputError(f"{out}: is a folder; choose a file path for this output")


def _chain(job: Job, opts: AnnotateOptions) -> tuple[type[Phase], ...]:
    if "llm" not in job.annotators:
        return ()
    classes = check_chain(opts.phase_names())
    return {"first": classes[:1], "last": classes[-1:], "all": classes}[job.steps]


def run_job(job: Job, opts: AnnotateOptions) -> RunSummary:
    """Run ``job`` with ``opts``: see the module docstring."""
    _check_paths(job, opts)
    chain = _chain(job, opts)
    # Templates first: a bad one should fail before a server starts.
    templates = {cls.name: cls.find_template(opts.prompt_version(cls.name), opts.prompts_dir)
                 for cls in chain}
    # And the claim targets: a bad line is one message before anything starts.
    targets = opts.claim_targets([cls.name for cls in chain]) if chain else None
    feed = job.open_input()
    made = job.makes_folder and not job.folder.exists()
    if job.makes_folder:
        job.folder.mkdir(parents=True, exist_ok=True)
    try:
        with _claims(job), _session(opts, chain, templates, _cache_path(job, opts),
                                    targets) as session, \
                RunProgress(job.label, job.total(), session.accounting, opts.progress) as progress:
            summary = _drive(job, opts, session, progress, feed)
            return _finish(summary, session, job.summary, opts)
    except BaseException:
        if made and not any(job.folder.iterdir()):
            job.folder.rmdir()  # refused before anything was written: leave nothing behind
        raise


@contextlib.contextmanager
def _claims(job: Job) -> Iterator[None]:
    """Hold the job's record files for the whole run: a second run writing one of them at the
    same time would send (and pay for) every request again and write every id twice; it is
    refused (exit 8) before anything is sent, naming this one's pid."""
    with contextlib.ExitStack() as stack:
        for path in (job.proposals, job.candidates):
            if path is not None:
                stack.enter_context(claim_output(path))
        yield


@contextlib.contextmanager
def _session(opts: AnnotateOptions, chain: tuple[type[Phase], ...],
             templates: dict[str, PromptTemplate], cache_path: Path,
             targets: dict | None = None) -> Iterator[_Session]:
    accounting = Accounting(opts.run_budget())
    if not chain:
        yield _Session(None, (), None, None, accounting)
        return
    with open_endpoint(opts.endpoint_request(), opts.provider) as endpoint:
        settings = opts.request_settings(endpoint, targets)
        phases = tuple(cls(endpoint, templates[cls.name], settings) for cls in chain)
        concurrency = opts.concurrency or endpoint.concurrency
        # The SDK takes a second to import: only runs that may send requests pay it.
        from mtcabench.annotate.llm.client import ApiClient

        with ResponseCache(cache_path) as cache, ApiClient(
                endpoint, accounting, opts.retry_policy(), max_connections=concurrency) as client:
            yield _Session(endpoint, phases, cache, client, accounting, concurrency)


def _one_pass(job: Job, session: _Session, progress: RunProgress, feed: Feed,
              ex: RequestExecutor | None) -> RunSummary:
    """Feed the whole input through the pipeline once; the summary of that pass."""
    summary = RunSummary(command=job.command, annotators=job.annotators,
                         accounting=session.accounting)
    if session.endpoint is not None:
        summary.endpoint = session.endpoint.identity
        summary.model = session.endpoint.model
    # The annotator each file's LLM records come from: the first phase's for proposals, the
    # last's for candidates (verify's, or propose's when it runs alone).
    expect = {"proposals": session.phases[0].annotator if session.phases else None,
              "candidates": session.phases[-1].annotator if session.phases else None}
    sinks = {name: RecordSink(path, getattr(summary, name), expect[name])
             for name, path in (("proposals", job.proposals if session.phases else None),
                                ("candidates", job.candidates)) if path is not None}
    owned = ex is None
    if owned:  # lineage only: an executor with nothing to send, for the same windowed loop
        ex = RequestExecutor(_NoCache(), session.accounting, None, concurrency=1)
    try:
        feed(AnnotationPipeline(executor=ex, summary=summary, phases=session.phases,
                                proposals=sinks.get("proposals"),
                                candidates=sinks.get("candidates"), lineage=job.lineage,
                                main=job.main, on_conversation=progress.advance))
    finally:
        if owned:
            ex.shutdown()
        for sink in sinks.values():
            sink.close()
    for name, sink in sinks.items():
        summary.outputs[name] = str(sink.path)
    if session.cache is not None:
        summary.cache_damaged = session.cache.damaged
    return summary


def _drive(job: Job, opts: AnnotateOptions, session: _Session, progress: RunProgress,
           feed: Feed) -> RunSummary:
    """One pass online; with the Batch API, passes that collect, submit and collect again."""
    def executor(collector=None) -> RequestExecutor:
        return RequestExecutor(session.cache, session.accounting, session.client,
                               concurrency=session.concurrency, collector=collector,
                               on_progress=progress.refresh)

    if session.cache is None:  # no LLM: nothing to send
        return _one_pass(job, session, progress, feed, None)
    if not opts.batch:
        with executor() as ex:
            return _one_pass(job, session, progress, feed, ex)
    runner = BatchRunner(session.client, session.cache, session.accounting,
                         BatchState(job.batch_state), poll_s=opts.batch_poll_s, log=progress.log)
    batches = []
    for entry in runner.state.pending():  # a batch a killed run was waiting for
        batches.append(runner.wait_and_collect(entry["batch_id"]).as_dict())
    # A run needs at most three passes: propose misses, then verify misses, then none.
    written = {"proposals": 0, "candidates": 0}
    for round_no in range(1, 5):
        collector = BatchCollector(job.folder, prefix=f"{job.batch_state.stem}-r{round_no}",
                                   url=session.endpoint.batch_url)
        progress.reset()
        with executor(collector) as ex:
            summary = _one_pass(job, session, progress, feed, ex)
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
        for i, path in enumerate(collector.files):
            n = sum(1 for _ in path.open("rb"))
            try:
                batch_id = runner.submit(path, n)
            except BaseException:
                if not i:  # refused before anything was paid for: leave no file behind
                    collector.discard()
                raise
            result = runner.wait_and_collect(batch_id)
            batches.append(result.as_dict())
            answered += result.answered
        if not answered:  # every line failed: passing again would loop; report instead
            break
    summary.batches = batches
    return summary


def _finish(summary: RunSummary, session: _Session, path: Path, opts: AnnotateOptions
            ) -> RunSummary:
    for output in summary.outputs.values():  # a finished run's outputs exist, even empty ones
        Path(output).touch()
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


class _NoCache:
    """Stands in for the cache when only lineage runs (no request is ever made)."""

    def get(self, key: str) -> None:
        return None
