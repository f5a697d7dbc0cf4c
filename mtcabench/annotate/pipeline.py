"""The annotation pipeline: conversations stream in, proposals and candidates stream out.

Conversations are read one by one and only a window of them is open at a time (about twice
the requests in flight), so memory does not grow with the input. For each conversation:
propose requests (one per group of target turns) -> checked Proposal records -> a verify
request for each proposal that passed -> checked Candidate records -> (in ``run``) merged
with the lineage annotator's candidates -> written. A conversation's candidates are written
once all its requests are answered; whatever is not answered (failed, over budget, deferred
to a batch) is left for a rerun, which gets the finished answers from the cache and skips
the records already written, so no request is repeated and no record is duplicated.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from pydantic import ValidationError

from mtcabench.annotate.cache import Answer
from mtcabench.annotate.chat_requests import RequestBuilder, propose_unit_id
from mtcabench.annotate.checks import candidate_from_answer, proposals_from_answer
from mtcabench.annotate.combine import combine_candidates
from mtcabench.annotate.executor import NotAnswered, Outcome, RequestExecutor
from mtcabench.annotate.summary import RunSummary
from mtcabench.errors import InputError
from mtcabench.io import RecordAppender, format_validation_error, read_done_keys
from mtcabench.model import Candidate, Conversation, Proposal

#: The lineage annotator's contract (mtcabench.annotate.lineage.propose_lineage).
LineageFn = Callable[[Iterable[Conversation]], Iterator[Candidate]]


class RecordSink:
    """An appender that skips records an earlier run already wrote, and counts both."""

    def __init__(self, path: str | Path, tally):
        self.path = Path(path)
        self.done = read_done_keys(self.path)
        self.tally = tally
        self._out = RecordAppender(self.path)

    def write(self, record: Proposal | Candidate) -> None:
        self.tally.add(record)
        if record.id in self.done:
            self.tally.already += 1
            return
        self._out.write(record)
        self.done.add(record.id)
        self.tally.written += 1

    def close(self) -> None:
        self._out.close()


@dataclass
class _Job:
    """One open conversation: requests outstanding and candidates gathered so far."""

    conv: Conversation
    waiting: int = 1  # held at 1 while its first requests are being submitted
    incomplete: bool = False
    candidates: list[Candidate] = field(default_factory=list)


class AnnotationPipeline:
    """Runs propose (and verify, and the combination) over a stream of conversations."""

    def __init__(self, *, executor: RequestExecutor, summary: RunSummary,
                 builder: RequestBuilder | None, proposals: RecordSink | None,
                 candidates: RecordSink | None, verify: bool = True,
                 lineage: LineageFn | None = None, main: str = "lineage",
                 on_conversation: Callable[[], None] = lambda: None):
        self.executor = executor
        self.summary = summary
        self.builder = builder
        self.proposals = proposals
        self.candidates = candidates
        self.verify = verify
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
        if self.builder is not None:
            for targets in self.builder.units(conv):
                job.waiting += 1
                self.executor.submit(self.builder.propose(conv, targets),
                                     partial(self._on_proposed, job, targets))
        self._release(job)

    def _unanswered(self, job: _Job, outcome: NotAnswered) -> None:
        job.incomplete = True
        self.summary.not_answered[outcome.why] += 1

    def _on_proposed(self, job: _Job, targets: tuple[int, ...], outcome: Outcome) -> None:
        if isinstance(outcome, NotAnswered):
            self._unanswered(job, outcome)
        else:
            records = proposals_from_answer(
                job.conv, propose_unit_id(job.conv.id, targets), targets, outcome.content,
                outcome.finish_reason, self.builder.annotator("propose"))
            for proposal in records:
                if self.proposals is not None:
                    self.proposals.write(proposal)
                if self.verify and proposal.status == "ok":
                    job.waiting += 1
                    self.executor.submit(self.builder.verify(job.conv, proposal),
                                         partial(self._on_verified, job, proposal))
        self._release(job)

    def _on_verified(self, job: _Job, proposal: Proposal, outcome: Outcome) -> None:
        if isinstance(outcome, NotAnswered):
            self._unanswered(job, outcome)
        else:
            job.candidates.append(self._candidate(job.conv, proposal, outcome))
        self._release(job)

    def _candidate(self, conv: Conversation, proposal: Proposal, answer: Answer) -> Candidate:
        return candidate_from_answer(conv, proposal, answer.content, answer.finish_reason,
                                     self.builder.annotator("verify"))

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
        """Verify the ``ok`` proposals of a proposals file (the ``verify`` command)."""
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
            self.executor.submit(self.builder.verify(conv, proposal),
                                 partial(self._on_verified_alone, conv, proposal))
        self.executor.drain()

    def _on_verified_alone(self, conv: Conversation, proposal: Proposal,
                           outcome: Outcome) -> None:
        if isinstance(outcome, NotAnswered):
            self.summary.not_answered[outcome.why] += 1
        else:
            self._write_candidate(self._candidate(conv, proposal, outcome))
        self.on_conversation()


class ConversationIndex:
    """Random access to a conversations file by id without loading it: byte offsets only."""

    def __init__(self, path: str | Path, cache_size: int = 16):
        self.path = Path(path)
        self._offsets: dict[str, tuple[int, int]] = {}
        self._recent: dict[str, Conversation] = {}
        self._cache_size = cache_size
        if not self.path.is_file():
            raise InputError(f"{self.path}: no such file")
        with self.path.open("rb") as fh:
            offset = 0
            for lineno, raw in enumerate(fh, start=1):
                if raw.strip():
                    try:
                        cid = json.loads(raw).get("id")
                    except (json.JSONDecodeError, AttributeError):
                        raise InputError.at(self.path, "malformed JSON", line=lineno) from None
                    if cid in self._offsets:
                        raise InputError.at(self.path, "duplicate conversation id", line=lineno,
                                            record=str(cid))
                    self._offsets[str(cid)] = (offset, lineno)
                offset += len(raw)

    def __len__(self) -> int:
        return len(self._offsets)

    def __call__(self, conversation_id: str) -> Conversation:
        conv = self._recent.get(conversation_id)
        if conv is not None:
            return conv
        if conversation_id not in self._offsets:
            raise InputError(f"{self.path}: no conversation {conversation_id!r}, which a "
                             "proposal refers to; pass the conversations file they came from")
        offset, lineno = self._offsets[conversation_id]
        with self.path.open("rb") as fh:
            fh.seek(offset)
            raw = fh.readline()
        try:
            conv = Conversation.model_validate_json(raw)
        except ValidationError as exc:
            raise InputError.at(self.path, format_validation_error(exc), line=lineno,
                                record=conversation_id) from None
        if len(self._recent) >= self._cache_size:
            self._recent.pop(next(iter(self._recent)))
        self._recent[conversation_id] = conv
        return conv
