"""Building the chat requests of both phases, with their cache keys and annotator labels.

A propose request covers a group of target turns of one conversation (its *unit*); a verify
request covers one proposal that passed the checks. The request body is exactly what is sent
(and what a Batch API line holds), and its cache key is computed from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mtcabench.annotate.cache import request_key
from mtcabench.annotate.client import Endpoint
from mtcabench.annotate.schemas import response_format
from mtcabench.annotate.templates import PromptTemplate, load_template
from mtcabench.annotate.transcript import TranscriptLimits, group_targets, render_transcript
from mtcabench.model import Annotator, Conversation, Proposal


@dataclass(frozen=True)
class Sampling:
    """Settings that shape an answer besides the prompt (all part of the cache key)."""

    temperature: float = 0.0
    seed: int | None = 0
    max_tokens_propose: int = 1024
    max_tokens_verify: int = 512


@dataclass(frozen=True)
class RequestSettings:
    """How requests are cut and rendered."""

    sampling: Sampling = field(default_factory=Sampling)
    limits: TranscriptLimits = field(default_factory=TranscriptLimits)
    #: Target turns per propose request (the whole conversation is rarely needed at once).
    targets_per_request: int = 3
    #: Spans the propose prompt asks for, at most, per request.
    spans_per_request: int = 4


@dataclass(frozen=True)
class PreparedRequest:
    """One chat request ready to send or to look up."""

    phase: str
    key: str
    body: dict[str, Any]
    prompt_chars: int
    max_tokens: int


def propose_unit_id(conv_id: str, targets: tuple[int, ...]) -> str:
    """The stable id of one propose request: the conversation and its target-turn range."""
    return f"{conv_id}#propose:{targets[0]}-{targets[-1]}"


class RequestBuilder:
    """Makes the requests of both phases for one endpoint and pair of templates."""

    def __init__(self, endpoint: Endpoint, settings: RequestSettings | None = None, *,
                 propose_template: PromptTemplate | None = None,
                 verify_template: PromptTemplate | None = None):
        self.endpoint = endpoint
        self.settings = settings or RequestSettings()
        self.templates = {
            "propose": propose_template or load_template("propose"),
            "verify": verify_template or load_template("verify"),
        }
        self._formats = {p: response_format(p, endpoint.response_format) for p in self.templates}

    def annotator(self, phase: str) -> Annotator:
        t = self.templates[phase]
        return Annotator(name="llm", model=self.endpoint.model, endpoint=self.endpoint.identity,
                         prompt_version=t.version, prompt_hash=t.sha256)

    def units(self, conv: Conversation) -> list[tuple[int, ...]]:
        return group_targets(conv, self.settings.targets_per_request)

    def _prepare(self, phase: str, messages: list[dict[str, str]], max_tokens: int
                 ) -> PreparedRequest:
        s = self.settings.sampling
        body: dict[str, Any] = {
            "model": self.endpoint.model,
            "messages": messages,
            "response_format": self._formats[phase],
            "temperature": s.temperature,
            "max_tokens": max_tokens,
        }
        if s.seed is not None:
            body["seed"] = s.seed
        t = self.templates[phase]
        key = request_key(endpoint=self.endpoint.identity, model=self.endpoint.model,
                          prompt_version=t.version, prompt_hash=t.sha256, body=body)
        chars = sum(len(m["content"]) for m in messages)
        return PreparedRequest(phase=phase, key=key, body=body, prompt_chars=chars,
                               max_tokens=max_tokens)

    def propose(self, conv: Conversation, targets: tuple[int, ...]) -> PreparedRequest:
        transcript = render_transcript(conv, targets[-1], self.settings.limits)
        messages = self.templates["propose"].render(
            transcript=transcript,
            targets=", ".join(map(str, targets)),
            max_spans=self.settings.spans_per_request,
        )
        return self._prepare("propose", messages, self.settings.sampling.max_tokens_propose)

    def verify(self, conv: Conversation, proposal: Proposal) -> PreparedRequest:
        assert proposal.span is not None and proposal.graph is not None
        span = proposal.span
        transcript = render_transcript(conv, span.turn, self.settings.limits)
        edges = [
            f"- {e.child} -> {e.parent}"
            + (f' ({e.kind.value})' if e.kind.value != "content" else "")
            + (f': "{e.evidence.quote}"' if e.evidence else "")
            for e in proposal.graph.edges
        ]
        messages = self.templates["verify"].render(
            transcript=transcript,
            turn=span.turn,
            span=span.text,
            dependency_type=proposal.dependency_type.value if proposal.dependency_type else "?",
            edges="\n".join(edges) or "(none)",
        )
        return self._prepare("verify", messages, self.settings.sampling.max_tokens_verify)
