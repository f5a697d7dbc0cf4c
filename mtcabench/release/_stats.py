"""The numbers a release reports: span statistics, review outcome and the annotation recipe."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from statistics import median_low
from typing import Any

from mtcabench.graph import path_hops

from mtcabench.model import (
    Annotator,
    BenchmarkSpan,
    Candidate,
    Conversation,
    DecisionSource,
    DependencyType,
    SpanOrigin,
    Verdict,
)
from mtcabench.release._select import Selection


def _sorted(counter: Counter) -> dict[str, int]:
    return {str(k): counter[k] for k in sorted(counter, key=str)}


def span_statistics(spans: list[BenchmarkSpan], conversations: list[Conversation]) -> dict:
    """Spans by dependency type, source, domain and gold depth; conversations by source."""
    by_type = Counter(s.dependency_type.value for s in spans)
    return {
        "spans": len(spans),
        "conversations": len(conversations),
        "by_dependency_type": {t.value: by_type[t.value] for t in DependencyType},
        "by_source": _sorted(Counter(s.source for s in spans)),
        "by_domain": _sorted(Counter(f"{s.source}/{s.domain}" for s in spans)),
        "by_type_and_source": {
            t.value: _sorted(Counter(s.source for s in spans if s.dependency_type is t))
            for t in DependencyType
        },
        "by_depth": {str(k): v for k, v in sorted(Counter(s.depth for s in spans).items())},
        "conversations_by_source": _sorted(Counter(c.source for c in conversations)),
        "max_depth": max((s.depth for s in spans), default=0),
        "hops_by_type": hops_by_type(spans),
        **origin_statistics(spans),
    }


def _spread(values: list[int]) -> list[int]:
    """[least, median (the lower middle one), most] of whole numbers; [] for none."""
    return [min(values), median_low(values), max(values)] if values else []


def hops_by_type(spans: list[BenchmarkSpan]) -> dict[str, dict[str, Any]]:
    """Per dependency type: spans, and the depth, content hops and call-structure hops of
    their gold paths as [least, median, most] (see mtcabench.graph.path_hops)."""
    out: dict[str, dict[str, Any]] = {}
    for t in DependencyType:
        of_type = [s for s in spans if s.dependency_type is t]
        hops = [path_hops(s.graph) for s in of_type]
        out[t.value] = {"spans": len(of_type), "depth": _spread([s.depth for s in of_type]),
                        "content_hops": _spread([c for c, _ in hops]),
                        "structural_hops": _spread([h for _, h in hops])}
    return out


def origin_statistics(spans: list[BenchmarkSpan]) -> dict[str, Any]:
    """Spans by origin and type, and the counterfactual edits by field and depth; nothing
    when every span is real (the statistics of such a release are as they were)."""
    made = [s for s in spans if s.origin is SpanOrigin.COUNTERFACTUAL]
    if not made:
        return {}
    return {
        "by_origin": {o.value: {t.value: sum(1 for s in spans if s.origin is o
                                             and s.dependency_type is t)
                                for t in DependencyType} for o in SpanOrigin},
        "counterfactual": {
            "spans": len(made),
            "conversations_edited": len({s.counterfactual.conversation_id for s in made
                                         if s.counterfactual}),
            "by_field": dict(Counter(s.counterfactual.field for s in made
                                     if s.counterfactual).most_common()),
            "by_depth": {str(k): v for k, v in sorted(Counter(s.depth for s in made).items())},
        },
    }


def review_statistics(selection: Selection, spans: list[BenchmarkSpan]) -> dict:
    """Acceptance and edit rates, and how many decisions came from people."""
    all_decisions = [d for o in selection.outcomes for d in o.all_decisions]
    by_source = Counter(d.decision_source.value for d in all_decisions)
    reviewed = len(selection.outcomes)
    released = len(spans)
    edited = sum(1 for s in spans if s.verdict is Verdict.ACCEPT_WITH_EDITS)
    auto = sum(1 for s in spans if s.decision_source is DecisionSource.AUTO)
    reviewers = {d.reviewer for d in all_decisions
                 if d.decision_source is DecisionSource.HUMAN and d.reviewer}
    return {
        "decisions": len(all_decisions),
        "decisions_by_source": {s.value: by_source[s.value] for s in DecisionSource},
        "reviewers": len(reviewers),
        "reviewed_spans": reviewed,
        "released_spans": released,
        "rejected_spans": sum(1 for o in selection.outcomes if not o.released),
        "split_spans": sum(1 for o in selection.outcomes if o.split),
        "acceptance_rate": round(released / reviewed, 4) if reviewed else 0.0,
        "edit_rate": round(edited / released, 4) if released else 0.0,
        "edited_spans": edited,
        "auto_spans": auto,
        "human_spans": released - auto,
    }


def _annotator_key(a: Annotator) -> dict[str, Any]:
    return a.model_dump(mode="json", exclude={"endpoint"}, exclude_none=True)


def _count_annotators(annotators: Iterable[Annotator | None]) -> list[dict[str, Any]]:
    counts: Counter = Counter()
    for a in annotators:
        if a is not None:
            counts[tuple(sorted(_annotator_key(a).items()))] += 1
    return [{**dict(k), "count": n} for k, n in sorted(counts.items())]


def recipe(spans: list[BenchmarkSpan], candidates: list[Candidate] | None,
           review: dict) -> dict:
    """How the gold was made: annotators (model, prompt version and hash), review counts.

    Endpoints are left out: a base URL says where a model ran, not how the data was made,
    and may name private hosts.
    """
    out: dict[str, Any] = {
        "annotators": _count_annotators(s.annotator for s in spans),
        "reviewers": review["reviewers"],
        "decisions": review["decisions"],
        "decisions_by_source": review["decisions_by_source"],
    }
    if candidates is not None:
        out["candidates"] = {
            "total": len(candidates),
            "passed_checks": sum(1 for c in candidates if c.status == "ok"),
            "rejected_by_checks": sum(1 for c in candidates if c.status != "ok"),
            "verifiers": _count_annotators(c.annotator for c in candidates),
            "proposers": _count_annotators(c.proposal_annotator for c in candidates),
        }
    return out
