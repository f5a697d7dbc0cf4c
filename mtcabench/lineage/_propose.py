"""The public entry: lineage candidates for conversations, and the annotator they carry."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from mtcabench.lineage._config import LineageConfig, LineageSummary
from mtcabench.lineage._spans import answer_spans
from mtcabench.lineage._tracing import Tracer
from mtcabench.graph import check_graph, depth
from mtcabench.model import Annotator, Candidate, Conversation, Role, span_id


def lineage_annotator(config: LineageConfig | None = None) -> Annotator:
    """The annotator written into every lineage record (rules version and settings)."""
    return Annotator(name="lineage", rules_version=(config or LineageConfig()).signature())


def propose_conversation(
    conv: Conversation, config: LineageConfig | None = None, summary: LineageSummary | None = None
) -> list[Candidate]:
    """Lineage candidates for one conversation, in turn and span order."""
    config = config or LineageConfig()
    summary = summary if summary is not None else LineageSummary()
    summary.rules_version, summary.settings = config.signature(), config.as_dict()
    summary.conversations += 1
    tracer = Tracer(conv, config, summary)
    answers = [t.index for t in conv.turns if t.role is Role.ASSISTANT and t.content.strip()]
    if not answers:
        summary.conversations_without_assistant_text += 1
        return []
    annotator = lineage_annotator(config)
    out: list[Candidate] = []
    for c in answers:
        summary.answer_turns += 1
        for s in answer_spans(tracer, c):
            rid = span_id(conv.id, s.span)
            violations = check_graph(s.graph, conv, s.span, record=rid)
            if violations:  # a bug in these rules, never bad input: stop loudly
                raise RuntimeError(
                    "lineage built an invalid graph: " + "; ".join(map(str, violations)))
            summary.spans += 1
            summary.by_type[s.dtype.value] += 1
            summary.by_depth[depth(s.graph)] += 1
            summary.by_kind[s.value.kind] += 1
            out.append(Candidate(
                id=rid,
                conversation_id=conv.id,
                span=s.span,
                dependency_type=s.dtype,
                graph=s.graph,
                annotator=annotator,
                status="ok",
                rationale=s.rationale,
            ))
    return out


def propose_lineage(
    conversations: Iterable[Conversation],
    config: LineageConfig | None = None,
    *,
    summary: LineageSummary | None = None,
) -> Iterator[Candidate]:
    """Lineage candidates (status "ok", annotator "lineage") for every conversation.

    Pass a :class:`LineageSummary` to have it filled with counts by type, depth and rule as
    the candidates are yielded.
    """
    config = config or LineageConfig()
    summary = summary if summary is not None else LineageSummary()
    summary.rules_version, summary.settings = config.signature(), config.as_dict()
    for conv in conversations:
        yield from propose_conversation(conv, config, summary)
