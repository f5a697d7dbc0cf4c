"""Explaining spans of one conversation offline: one set of forward passes, every method."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtcabench.errors import InputError
from mtcabench.evaluate import (
    DEFAULT_DEVICE,
    DEFAULT_DTYPE,
    DEFAULT_METHOD,
    DEFAULT_MODEL,
    DEFAULT_SCORER,
    TARGET,
    LoadedModel,
    TraceSettings,
    attribute_spans,
    get_methods,
    header_parameters,
    load_attributor,
    model_parameters,
    beyond_any_window,
    fewest_tokens,
    model_limits,
    text_chars,
)
from mtcabench._version import __version__
from mtcabench.model import (
    ContextWindow,
    Conversation,
    ExplainedSpan,
    ExplanationRecord,
    ProvenanceGraph,
    Role,
    TargetSpan,
    span_id,
)
from mtcabench.transcripts import (
    check_text,
    choose,
    conversations_from_value,
    read_transcript,
    target_span,
)


@dataclass
class Explanation:
    """The provenance graphs of some spans of one conversation, and how they were made."""

    conversation: Conversation
    targets: list[TargetSpan]
    #: Per method, one graph per target (in the order of ``targets``).
    graphs: dict[str, list[ProvenanceGraph]]
    model: str | None
    scorer: str | None
    settings: TraceSettings
    forward_passes: int = 0
    #: Tokens of the rendered conversation up to the last target's turn (0: model-free).
    tokens: int = 0
    #: Per method, the parameters its submission header would record (same run, same keys).
    method_parameters: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The model's and the scorer's settings, as a header records them (empty: no model).
    model_parameters: dict[str, Any] = field(default_factory=dict)
    #: Per target (by index) past the model's context, the context window it was attributed
    #: in by the model-based methods (the submission's ``window``).
    windows: dict[int, ContextWindow] = field(default_factory=dict)

    def span_id(self, k: int) -> str:
        return span_id(self.conversation.id, self.targets[k])

    def record(self) -> ExplanationRecord:
        """The explanation as the versioned record written to ``explain.json``."""
        s = self.settings.search
        shared: dict[str, Any] = {"top_k": s.top_k, "threshold": s.threshold,
                                  "d_max": s.d_max, "alpha": s.alpha,
                                  "match_values": s.match_values,
                                  "turn_aggregate": self.settings.turn_aggregate,
                                  **self.model_parameters}
        return ExplanationRecord(
            conversation=self.conversation.id, model=self.model, scorer=self.scorer,
            parameters=shared, methods=self.method_parameters,
            forward_passes=self.forward_passes, tokens=self.tokens,
            targets=[ExplainedSpan(span_id=self.span_id(k), span=t,
                                   graphs={m: gs[k] for m, gs in self.graphs.items()},
                                   window=self.windows.get(k))
                     for k, t in enumerate(self.targets)],
            notes={"mtcabench_version": __version__})

    def to_json(self) -> dict[str, Any]:
        """The explanation as written to ``explain.json`` (:meth:`record`, as JSON)."""
        return self.record().model_dump(mode="json")


def explain_conversation(
    conversation: Conversation,
    targets: Sequence[TargetSpan],
    *,
    model: str | LoadedModel = DEFAULT_MODEL,
    scorer: str = DEFAULT_SCORER,
    methods: Iterable[str] = (DEFAULT_METHOD,),
    settings: TraceSettings = TraceSettings(),
    device: str = DEFAULT_DEVICE,
    dtype: str = DEFAULT_DTYPE,
) -> Explanation:
    """The graph of every target by every method, from one set of forward passes.

    A target whose tokens end past the model's context (or ``settings.max_tokens``) is
    attributed in a context window (earlier turns shortened, recorded in ``windows``; the
    context-length policy of docs/evaluate.md); one that no window fits (the system turn and
    its own turn alone are too long) is an InputError. Turns after the last target are not
    read (the model is causal). No model is loaded when every method is model-free.
    """
    chosen = get_methods(methods)
    targets = [target_span(conversation, t.turn, t) for t in targets]
    if not targets:
        raise InputError(f"conversation {conversation.id}: no span to explain")
    loaded = scorer_obj = attributor = None
    if any(m.uses_model for m in chosen.values()):
        refuse_too_long(conversation, targets, model, settings)
        attributor = load_attributor(model, scorer, settings, device, dtype)
        loaded, scorer_obj = attributor.loaded, attributor.scorer
    # A span that no window fits is refused (strict) before any forward pass.
    keys = [(TARGET, k) for k in range(len(targets))]
    result = attribute_spans(attributor, conversation, dict(zip(keys, targets)), chosen,
                             settings, strict=True)
    windows = {k: ContextWindow(**result.windows[key].report())
               for k, key in enumerate(keys) if key in result.windows}
    graphs = {name: [by_key[k] for k in keys] for name, by_key in result.graphs.items()}
    params = {name: header_parameters(name, m, settings, loaded, scorer_obj)
              for name, m in chosen.items()}
    shared = model_parameters(settings, scorer_obj, loaded) if loaded and scorer_obj else {}
    return Explanation(conversation, targets, graphs,
                       model=loaded.name if loaded else None,
                       scorer=scorer_obj.name if scorer_obj else None,
                       settings=settings, forward_passes=result.forward_passes,
                       tokens=result.tokens, method_parameters=params,
                       model_parameters=shared, windows=windows)


def refuse_too_long(conversation: Conversation, targets: Sequence[TargetSpan],
                    model: str | LoadedModel, settings: TraceSettings) -> None:
    """Refuse, before loading the model or tokenising anything, a target that no context
    window can take, counting tokens from characters as generously as can be
    (:func:`~mtcabench.evaluate.attribution._window.fewest_tokens`): what a window always keeps
    (a leading system turn, and the target's own turn up to the span's end) passes the limit,
    or the whole text up to the span is beyond any window (``WINDOW_FACTOR`` times the limit;
    a 6 MB tool result took 44 s and 1.8 GB to be refused after tokenising). Skipped when the
    model's files are not on this machine yet; the exact checks after tokenising still hold."""
    limits = model_limits(model)
    if limits is None:
        return
    context, longest = limits
    limit = min(settings.max_tokens or context, context)
    name = getattr(model, "name", model)
    turns = conversation.turns
    system = len(turns[0].text.strip()) if turns and turns[0].role is Role.SYSTEM else 0
    for t in sorted(targets, key=lambda t: (t.turn, t.end)):
        where = f"conversation {conversation.id}, turn {t.turn}"
        kept = system + text_chars(conversation, t.turn, t.end) - text_chars(conversation,
                                                                              t.turn, 0)
        if fewest_tokens(kept, longest) > limit:
            raise InputError(
                f"{where}: the system turn and the span's own turn up to its end are "
                f"{kept:,} characters, at least {fewest_tokens(kept, longest):,} tokens, past "
                f"the {limit}-token context of {name}; no window of the conversation fits: "
                "choose an earlier span or a model with a longer context")
        if (why := beyond_any_window(text_chars(conversation, t.turn, t.end), longest,
                                     limit)) is not None:
            raise InputError(f"{where}: {why.removeprefix('too-long: ')} ({name}); choose "
                             "an earlier span, leave the long turn out, or use a model with a "
                             "longer context")


Messages = Conversation | str | Path | Sequence[Mapping[str, Any]] | Mapping[str, Any]


def as_conversation(messages: Messages, select: str | None = None,
                    format: str | None = None) -> Conversation:
    """A conversation from a Conversation, an agent log file's path, or a log given as a
    Python value (OpenAI chat messages, ``{"messages": [...]}``, Responses items, an
    Anthropic request...: any format of :mod:`mtcabench.transcripts`, recognised from its
    shape unless ``format`` names it)."""
    if isinstance(messages, Conversation):
        for t in messages.turns:  # built in Python: its text has not been read as messages
            check_text(t, f"conversation {messages.id}, turn {t.index}")
        return messages
    if isinstance(messages, (str, Path)):
        return read_transcript(messages, select, format)
    return choose(conversations_from_value(messages, format), select, "messages")
