"""Validating the spans chosen for a release and turning them into released records.

Every graph is checked against every rule of :mod:`mtcabench.graph`; on top of those, the
release rules: each span's conversation is present, no two ids name the same span, and no
text a released record holds (any column, keys as well as values) is a credential
(:func:`credential_problem`, which ``release publish`` runs too, on the Parquet files it
would upload).
All failures are collected so that one refused build lists everything to fix.
"""

from __future__ import annotations

from collections.abc import Iterable

from typing import Any

from mtcabench.graph import Violation, check_graph, depth, sources
from mtcabench.model import BenchmarkSpan, Candidate, Conversation
from mtcabench.redact import credential_fields
from mtcabench.release._select import Outcome

#: Rules the release adds to the graph rules (names appear in failures and in the card).
RELEASE_RULES: dict[str, str] = {
    "record-schema": "every input line is a valid record of its kind",
    "duplicate-conversation": "conversation ids are unique",
    "duplicate-id": "a span id names one span (same conversation, turn, offsets and text)",
    "duplicate-span": "no two released ids name the same span",
    "conversation-exists": "every released span's conversation is in the conversations file",
    "nothing-accepted": "at least one span is accepted",
    "source-licence": "every source of a released conversation has a known licence",
    "version-exists": "the version's folder does not exist yet (unless --force)",
    "no-credentials": "no text the release writes (ids, agent model, turns, tool-call "
                      "arguments, metadata, annotators; keys as well as values) looks like a "
                      "credential (an API key, a token, a password, a URL with a password, "
                      "an Authorization header)",
}


def credential_problem(value: Any, what: str = "$") -> str | None:
    """Why a record (or a table row) may not be published, else None: the fields whose name,
    key or text looks like a credential, by the rule every message is redacted by
    (:func:`mtcabench.redact.credential_fields`), over every text a release writes: ids,
    the agent model, turns, tool-call arguments, metadata, annotators. Ingest keeps metadata to
    an allow-list and names to the name rule, but a file written by hand or by an older
    version may hold a run's settings or an endpoint URL with its password, and a release is
    public. The fields are named, their values never shown."""
    if isinstance(value, dict) and what == "$":  # a record or row: its columns by name
        fields = sorted(f for k, v in value.items() for f in credential_fields(v, str(k)))
    else:
        fields = credential_fields(value, what)
    if not fields:
        return None
    shown = ", ".join(fields[:5]) + (f" and {len(fields) - 5} more" if len(fields) > 5 else "")
    return (f"{shown} look{'s' if len(fields) == 1 else ''} like a credential (an API key, a "
            "token, a password, a URL with a password, an Authorization header); a release "
            "never publishes one: remove it from the input file (ingest with this version "
            "keeps metadata to an allow-list and refuses such names) and build the release "
            "again (with --force for this version)")


def record_texts(record: Conversation | BenchmarkSpan) -> dict[str, Any]:
    """What a release writes of a record, every column: its fields as JSON values (metadata
    and tool-call arguments as the objects their JSON text holds)."""
    return record.model_dump(mode="json", exclude={"kind", "schema_version"})


def credential_violations(records: Iterable[Conversation | BenchmarkSpan]) -> list[Violation]:
    """A ``no-credentials`` failure for each conversation or span with a credential in any
    text the release writes of it (:func:`credential_problem`)."""
    out = []
    for record in records:
        if (why := credential_problem(record_texts(record))) is not None:
            out.append(Violation(record.key, "no-credentials", why))
    return out


def validate_released(
    outcomes: Iterable[Outcome],
    conversations: dict[str, Conversation],
    candidates: dict[str, Candidate] | None = None,
) -> tuple[list[BenchmarkSpan], list[Violation]]:
    """Released records for the accepted outcomes, and every rule they break."""
    spans: list[BenchmarkSpan] = []
    failures: list[Violation] = []
    seen: dict[tuple[str, int, int, int], str] = {}
    for outcome in outcomes:
        d = outcome.chosen
        assert d is not None, "only released outcomes are validated"
        conv = conversations.get(d.conversation_id)
        if conv is None:
            failures.append(Violation(d.id, "conversation-exists",
                                      f"conversation {d.conversation_id} is not in the "
                                      "conversations file"))
            continue
        key = (d.conversation_id, d.span.turn, d.span.start, d.span.end)
        if key in seen:
            failures.append(Violation(d.id, "duplicate-span",
                                      f"same span as {seen[key]}; keep one id per span"))
        else:
            seen[key] = d.id
        problems = check_graph(d.graph, conv, d.span, record=d.id)
        if problems:
            failures.extend(problems)
            continue
        annotator = d.annotator
        if annotator is None and candidates and d.id in candidates:
            annotator = candidates[d.id].annotator
        # A decision from a review tool may not carry the origin: the candidate's tells it.
        made = d if d.counterfactual is not None else (candidates or {}).get(d.id, d)
        # Likewise its kind: a claim's decision says so, or its candidate does.
        kinded = d if d.claim_kind is not None else (candidates or {}).get(d.id, d)
        spans.append(BenchmarkSpan(
            id=d.id,
            conversation_id=d.conversation_id,
            source=conv.source,
            domain=conv.domain,
            span=d.span,
            dependency_type=d.dependency_type,
            graph=d.graph,
            depth=depth(d.graph),
            sources=sources(d.graph, conv),
            decision_source=d.decision_source,
            verdict=d.verdict,
            reviewers=outcome.reviewers,
            annotator=annotator,
            origin=made.origin,
            counterfactual=made.counterfactual,
            span_kind=kinded.span_kind,
            claim_kind=kinded.claim_kind,
        ))
    return spans, failures
