"""The stage's entry points: ``annotate_propose``, ``annotate_verify`` and ``annotate_run``.

Each streams its input, writes its records as they are ready (resumable: a rerun skips what
is written and answers finished requests from the cache), prints a summary, writes it as
JSON beside the outputs, and returns it. All three take an :class:`AnnotateOptions` (or its
fields as keywords) and describe their job to the one runner (:mod:`.runner`). A budget stop
raises :class:`~mtcabench.errors.Stopped` after everything finished has been written.
"""

from __future__ import annotations

from pathlib import Path

from mtcabench.annotate.options import AnnotateOptions
from mtcabench.annotate.pipeline import LineageFn
from mtcabench.annotate.records import ConversationIndex
from mtcabench.annotate.runner import Job, conversations_of, count_lines, run_job
from mtcabench.annotate.summary import RunSummary
from mtcabench.errors import InputError
from mtcabench.io import NAME_MAX, fit_name, read_records
from mtcabench.model import Proposal


def load_lineage() -> LineageFn:
    """The lineage annotator (mtcabench.lineage.propose_lineage)."""
    try:
        from mtcabench.lineage import propose_lineage
    except ImportError as exc:
        raise InputError(f"the lineage annotator is not available ({exc}); run with "
                         "--annotators llm") from None
    return propose_lineage


def _beside(out: Path, suffix: str) -> Path:
    # A name derived from the user's: shortened by the one name policy so that it (and the
    # batch files named after it, "-r1-0.jsonl") fits the file system whatever ``out`` is.
    return out.with_name(fit_name(out.stem, NAME_MAX - len(suffix) - 24) + suffix)


def annotate_propose(conversations: str | Path, out: str | Path,
                     options: AnnotateOptions | None = None, **fields) -> RunSummary:
    """Phase 1: propose spans and graphs for every conversation into ``out`` (JSONL)."""
    opts = AnnotateOptions.of(options, **fields)
    conversations, out = Path(conversations), Path(out)
    return run_job(Job(
        command="propose", label="propose", inputs=(conversations,), folder=out.parent,
        primary=out, proposals=out, summary=_beside(out, "-summary.json"),
        batch_state=_beside(out, "-batches.json"), steps="first",
        total=lambda: count_lines(conversations, opts.limit),
        open_input=lambda: lambda p: p.run(conversations_of(conversations, opts.limit)),
    ), opts)


def annotate_verify(conversations: str | Path, proposals: str | Path, out: str | Path,
                    options: AnnotateOptions | None = None, **fields) -> RunSummary:
    """Phase 2: verify the ``ok`` proposals of ``proposals`` into candidates ``out`` (JSONL)."""
    opts = AnnotateOptions.of(options, **fields)
    conversations, proposals, out = Path(conversations), Path(proposals), Path(out)

    def open_input():
        index = ConversationIndex(conversations)  # checks the whole file before any request
        return lambda p: p.verify_proposals(read_records(proposals, Proposal), index)

    return run_job(Job(
        command="verify", label="verify", inputs=(conversations, proposals), folder=out.parent,
        primary=out, candidates=out, summary=_beside(out, "-summary.json"),
        batch_state=_beside(out, "-batches.json"), steps="last", open_input=open_input,
    ), opts)


def annotate_run(conversations: str | Path, out_dir: str | Path,
                 options: AnnotateOptions | None = None, **fields) -> RunSummary:
    """Both phases and the lineage annotator, combined: ``out_dir/candidates.jsonl``.

    Writes ``proposals.jsonl`` (LLM phase 1), ``candidates.jsonl`` (one per span; where both
    annotators gave a graph, ``main`` decides which is the main one and the other is kept in
    ``alternatives``), ``annotate-cache.sqlite`` and ``summary.json``. With no ``base_url``
    and no ``OPENAI_API_KEY`` the embedded llama.cpp server is started for the run.
    """
    opts = AnnotateOptions.of(options, **fields)
    chosen = opts.chosen_annotators()
    conversations, out_dir = Path(conversations), Path(out_dir)
    lineage = load_lineage() if "lineage" in chosen else None
    return run_job(Job(
        command="run", label="annotate", inputs=(conversations,), folder=out_dir,
        makes_folder=True, proposals=out_dir / "proposals.jsonl",
        candidates=out_dir / "candidates.jsonl", summary=out_dir / "summary.json",
        batch_state=out_dir / "batches.json", annotators=chosen, lineage=lineage,
        main=opts.main, total=lambda: count_lines(conversations, opts.limit),
        open_input=lambda: lambda p: p.run(conversations_of(conversations, opts.limit)),
    ), opts)


__all__ = ["AnnotateOptions", "annotate_propose", "annotate_run", "annotate_verify",
           "load_lineage"]
