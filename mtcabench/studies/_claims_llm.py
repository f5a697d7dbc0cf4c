"""The LLM pipeline on claims, scored against the annotated set (issue 44: "score what it
proposes against the annotated set, per claim kind, with intervals").

**Sample** (:func:`llm_sample`): the claims of a split of a release built by
``scripts/build_benchmark.sh``, whole conversations, shortest first, up to a number of claims
(a run on a slow machine covers the most conversations). **Run**: ``annotate run --phases
claim-propose,claim-verify --annotators llm --targets`` on exactly these claims
(:func:`targets_lines` writes the targets), through any OpenAI-compatible endpoint.
**Table** (:func:`llm_table`): the verified graphs scored as a submission
(:func:`llm_submission`: a claim whose graph was rejected at a check is an empty prediction,
as a reviewer would have to write it; beside it, the graphs as answered, checked or not), edge F1 and source recall per claim kind with 95%
conversation-clustered bootstrap intervals, beside the string-match floor on the same claims,
the share of claims the checks let through, and the kind the model gave against the
annotators'.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np

from mtcabench.benchmark import Benchmark, split_of
from mtcabench.model import (
    Candidate,
    Proposal,
    ClaimKind,
    PredictedEdge,
    SubmissionEntry,
    SubmissionHeader,
)
from mtcabench.release import wilson
from mtcabench.results import Submission
from mtcabench.scoring import score_floor, score_spans
from mtcabench.studies._plan import length
from mtcabench.studies._split import by_conversation
from mtcabench.studies._tables import Spans, compare, md, with_ci

#: The method name of the pipeline's submissions.
METHOD = "llm-claims"


def llm_sample(bench: Benchmark, split: str, max_claims: int | None = None) -> Benchmark:
    """The claims of ``split``, whole conversations shortest first, until ``max_claims``."""
    work = by_conversation(s for s in bench.spans if s.claim_kind is not None
                           and split_of(s.conversation_id) == split)
    order = sorted(work, key=lambda c: (length(bench.conversations[c], work[c]), c))
    spans, convs = [], {}
    for cid in order:
        if max_claims is not None and spans and len(spans) + len(work[cid]) > max_claims:
            break
        spans += work[cid]
        convs[cid] = bench.conversations[cid]
    return Benchmark(convs, spans, bench.origin)


def targets_lines(bench: Benchmark) -> list[dict]:
    """The ``--targets`` lines of the sample's claims (turn, text and which occurrence)."""
    out = []
    for s in bench.spans:
        content = bench.conversations[s.conversation_id].turns[s.span.turn].content
        occurrence = content.count(s.span.text, 0, s.span.start + len(s.span.text) - 1)
        out.append({"conversation_id": s.conversation_id, "turn": s.span.turn,
                    "text": s.span.text, "occurrence": max(occurrence, 1)})
    return out


def _base_id(record_id: str) -> str:
    return record_id.split("/rejected")[0]


def llm_submission(records: Iterable[Proposal | Candidate], bench: Benchmark, model: str,
                   *, as_answered: bool = False
                   ) -> tuple[SubmissionHeader, list[SubmissionEntry]]:
    """A submission of the pipeline's graphs for the sample's claims (``records``: its
    proposals and candidates). Strict (the default): a claim's verified graph when it passed
    every check, else an empty prediction marked skipped with the stage that rejected it.
    ``as_answered``: the latest graph the model gave for it, checked or not (a graph whose
    evidence quote was not exact still says which turns the model chose)."""
    best: dict[str, tuple[int, Proposal | Candidate]] = {}
    for r in records:
        # verified and ok > verified > proposed and ok > proposed
        rank = 2 * isinstance(r, Candidate) + (r.status == "ok")
        sid = _base_id(r.id)
        if sid not in best or rank > best[sid][0]:
            best[sid] = (rank, r)
    entries = []
    for s in bench.spans:
        rank, record = best.get(s.id, (-1, None))
        usable = record is not None and record.graph is not None and (
            as_answered or rank == 3)
        if not usable:
            why = ("not answered" if record is None else "rejected at claim-verify"
                   if isinstance(record, Candidate) else "rejected at claim-propose")
            entries.append(SubmissionEntry(span_id=s.id, skipped=why))
            continue
        # An unchecked graph may point forwards: such edges say nothing a submission can.
        entries.append(SubmissionEntry(span_id=s.id, edges=[
            PredictedEdge(child=e.child, parent=e.parent, score=1.0)
            for e in record.graph.edges if e.parent < e.child <= s.span.turn]))
    header = SubmissionHeader(method=METHOD, model=model, benchmark=bench.origin,
                              parameters={"phases": ["claim-propose", "claim-verify"],
                                          "graphs": "as answered" if as_answered else
                                          "checked"})
    return header, entries


def _spans(bench: Benchmark, matrix: np.ndarray) -> Spans:
    return Spans([s.id for s in bench.spans],
                 np.array([s.conversation_id for s in bench.spans]), matrix)


def llm_table(submissions: tuple[Submission | str, Submission | str], bench: Benchmark,
              model: str, candidates: Sequence[Candidate]) -> str:
    """The table of the module docstring: ``submissions`` strict and as answered."""
    llm = _spans(bench, score_spans(submissions[0], bench).matrix)
    loose = _spans(bench, score_spans(submissions[1], bench).matrix)
    floor = _spans(bench, score_floor("string-match", bench).matrix)
    ok = {c.id: c for c in candidates if c.status == "ok"}
    kinds = [k.value for k in ClaimKind]
    groups: dict[str, list[str]] = {"all": [s.id for s in bench.spans]}
    by_kind: dict[str, list[str]] = {}
    for s in bench.spans:
        by_kind.setdefault(s.claim_kind.value, []).append(s.id)
    groups.update((f"kind: {k}", by_kind[k]) for k in sorted(by_kind, key=kinds.index))
    index = bench.span_index()
    rows = []
    for title, ids in groups.items():
        f, _, n_conv = compare(llm.take(ids), floor.take(ids))
        a, _, _ = compare(loose.take(ids), None)
        g, _, _ = compare(floor.take(ids), None)
        if n_conv < 2:
            for fig in (*f.values(), *a.values(), *g.values()):
                fig.low = fig.high = fig.diff_low = fig.diff_high = fig.p = None
        through = sum(i in ok for i in ids)
        same_kind = sum(i in ok and ok[i].claim_kind is index[i].claim_kind for i in ids)
        lo, hi = wilson(through, len(ids))
        rows.append([title, f"{n_conv} / {len(ids)}", with_ci(f["edge_f1"]),
                     with_ci(a["edge_f1"]), with_ci(g["edge_f1"]), with_ci(f["source_recall"]),
                     with_ci(g["source_recall"]),
                     f"{through}/{len(ids)} [{lo:.2f}, {hi:.2f}]",
                     f"{same_kind}/{through}" if through else "-"])
    lines = [f"The LLM pipeline on claims ({model}; claim-propose then claim-verify, prompts "
             "claim-propose-v1 and claim-verify-v1) against the annotated set: the claims of "
             f"{len(bench.conversations)} conversations, shortest first. Edge F1 and source "
             "recall with 95% conversation-clustered bootstrap intervals (1,000 resamples); a "
             "claim whose graph the checks rejected counts as an empty graph; \"as answered\": "
             "the model's last graph for each claim, checked or not. \"Through\": "
             "claims whose graph passed every check (Wilson interval); \"kind\": of those, "
             "the annotators' claim kind given.", ""]
    lines += md(["claims", "conv. / claims", "LLM edge F1", "as answered", "string-match edge F1",
                 "LLM source R", "string-match source R", "through the checks",
                 "kind as annotated"], rows)
    return "\n".join(lines)


def rejection_reasons(records: Iterable[Proposal | Candidate]) -> Counter[str]:
    """Why the checks rejected graphs: reason -> count (a graph may have several)."""
    return Counter(r.reason for c in records if c.status != "ok" for r in c.rejections)
