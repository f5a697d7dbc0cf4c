"""The annotation pipeline: conversations stream in, proposals and candidates stream out.

Conversations are read one by one and only a window of them is open at a time (about twice
the requests in flight), so memory does not grow with the input. The pipeline runs a chain
of phases (:mod:`mtcabench.annotate.phases`; by default propose, then verify): each unit of
the first phase is a request, and every ``ok`` record a phase makes from its answer becomes
units of the next phase. Proposals are written as they come; a conversation's candidates
(merged, in ``run``, with the lineage annotator's) are written once all its requests are
answered. Whatever is not answered (failed, over budget, deferred to a batch) is left for a
rerun, which gets the finished answers from the cache and skips the records already
written, so no request is repeated and no record is duplicated.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from mtcabench.annotate.combine import DEFAULT_MAIN, combine_candidates
from mtcabench.annotate.llm.executor import NotAnswered, Outcome, RequestExecutor
from mtcabench.annotate.phases import Phase
from mtcabench.annotate.records import RecordSink
from mtcabench.annotate.summary import RunSummary
from mtcabench.model import Candidate, Conversation, Proposal

#: The lineage annotator's contract (mtcabench.lineage.propose_lineage).
LineageFn = Callable[[Iterable[Conversation]], Iterator[Candidate]]


@dataclass
class _Job:
    """One open conversation: requests outstanding and candidates gathered so far."""

    conv: Conversation
    waiting: int = 1  # held at 1 while its first requests are being submitted
    incomplete: bool = False
    candidates: list[Candidate] = field(default_factory=list)


class AnnotationPipeline:
    """Runs a chain of phases (and the combination) over a stream of conversations."""

    def __init__(self, *, executor: RequestExecutor, summary: RunSummary,
                 phases: Sequence[Phase], proposals: RecordSink | None,
                 candidates: RecordSink | None, lineage: LineageFn | None = None,
                 main: str = DEFAULT_MAIN, on_conversation: Callable[[], None] = lambda: None):
        self.executor = executor
        self.summary = summary
        self.phases = tuple(phases)
        self.proposals = proposals
        self.candidates = candidates
        self.lineage = lineage
        self.main = main
        self.on_conversation = on_conversation

    # ------------------------------------------------------------------ conversations
    def run(self, conversations: Iterable[Conversation]) -> None:
        """Annotate every conversation (until the budget stops the run)."""
        it = iter(conversations)
        window = 2 * self.executor.concurrency
        exhausted = False
        while True:
            while not exhausted and not self.executor.stopping and (
                    self.executor.in_flight < window):
                conv = next(it, None)
                if conv is None:
                    exhausted = True
                    break
                self._open(conv)
            if not self.executor.in_flight:
                if exhausted or self.executor.stopping:
                    return
                continue
            self.executor.wait()

    def _open(self, conv: Conversation) -> None:
        self.summary.conversations += 1
        job = _Job(conv)
        if self.phases:
            self._submit(job, 0, None)
        self._release(job)

    def _submit(self, job: _Job, step: int, upstream: Proposal | Candidate | None) -> None:
        phase = self.phases[step]
        for unit in phase.units(job.conv, upstream):
            job.waiting += 1
            self.executor.submit(phase.request(job.conv, unit),
                                 partial(self._answered, job, step, unit))

    def _answered(self, job: _Job, step: int, unit: Any, outcome: Outcome) -> None:
        if isinstance(outcome, NotAnswered):
            job.incomplete = True
            self.summary.not_answered[outcome.why] += 1
        else:
            for record in self.phases[step].parse(job.conv, unit, outcome):
                if isinstance(record, Candidate):
                    job.candidates.append(record)
                elif self.proposals is not None:
                    self.proposals.write(record)
                if step + 1 < len(self.phases) and record.status == "ok":
                    self._submit(job, step + 1, record)
        self._release(job)

    def _release(self, job: _Job) -> None:
        job.waiting -= 1
        if job.waiting:
            return
        if self.candidates is not None and not job.incomplete:
            # Written only when every answer is in: the combination needs all of them.
            lineage = list(self.lineage([job.conv])) if self.lineage else []
            for cand in combine_candidates(job.candidates, lineage, self.main):
                self._write_candidate(cand)
        if not job.incomplete:
            self.summary.conversations_complete += 1
        self.on_conversation()

    def _write_candidate(self, cand: Candidate) -> None:
        self.candidates.write(cand)
        if cand.status == "ok":
            self.summary.candidates_by_annotator[cand.annotator.name] += 1
            if cand.alternatives:
                self.summary.both_annotators += 1

    # ------------------------------------------------------------------ proposals file
    def verify_proposals(self, proposals: Iterable[Proposal],
                         conversation: Callable[[str], Conversation]) -> None:
        """Run the last phase on the ``ok`` proposals of a proposals file (``verify``)."""
        phase = self.phases[-1]
        window = 2 * self.executor.concurrency
        seen: set[str] = set()
        for proposal in proposals:
            if proposal.status != "ok":
                continue
            conv = conversation(proposal.conversation_id)
            while self.executor.in_flight >= window:
                self.executor.wait()
            if self.executor.stopping:
                break
            if proposal.conversation_id not in seen:
                seen.add(proposal.conversation_id)
                self.summary.conversations += 1
            for unit in phase.units(conv, proposal):
                self.executor.submit(phase.request(conv, unit),
                                     partial(self._verified_alone, conv, unit))
        self.executor.drain()

    def _verified_alone(self, conv: Conversation, unit: Any, outcome: Outcome) -> None:
        if isinstance(outcome, NotAnswered):
            self.summary.not_answered[outcome.why] += 1
        else:
            for cand in self.phases[-1].parse(conv, unit, outcome):
                self._write_candidate(cand)
        self.on_conversation()
