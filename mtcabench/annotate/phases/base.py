"""What an annotation phase is: one object owning its prompt, schema, requests and parse.

A phase takes *units* of work (a group of target turns of a conversation; a proposal), renders
each as chat messages with its prompt template, asks for answers of its pydantic model (the
schema sent in the endpoint's flavour), and turns each answer into records with the
deterministic checks. The pipeline chains phases: every ``ok`` record one phase makes becomes
the input of the next, and the last phase makes the candidates. A new phase is one subclass
plus :func:`~mtcabench.annotate.phases.registry.register_phase` (docs/annotate.md shows one).

The request body is exactly what is sent (and what a Batch API line holds), and its cache key
is computed from it plus the template's version and hash.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel

from mtcabench.annotate.llm.providers import Endpoint
from mtcabench.annotate.llm.wire import Answer, ChatRequest
from mtcabench.annotate.phases.schema import response_format
from mtcabench.annotate.phases.templates import PromptTemplate, load_template
from mtcabench.annotate.phases.transcript import TranscriptLimits
from mtcabench.model import Annotator, Candidate, Conversation, Proposal

Record = Proposal | Candidate


@dataclass(frozen=True)
class Sampling:
    """Settings that shape an answer besides the prompt (all part of the cache key)."""

    temperature: float = 0.0
    seed: int | None = 0


@dataclass(frozen=True)
class RequestSettings:
    """How requests are cut and rendered, for every phase."""

    sampling: Sampling = field(default_factory=Sampling)
    limits: TranscriptLimits = field(default_factory=TranscriptLimits)
    #: Target turns per propose request (the whole conversation is rarely needed at once).
    targets_per_request: int = 3
    #: Spans the propose prompt asks for, at most, per request.
    spans_per_request: int = 4
    #: Answer limits by phase name; a phase not named uses its own default.
    max_tokens: Mapping[str, int] = field(default_factory=dict)
    #: For a small local model: each phase's compact answer limit instead of its default.
    compact: bool = False
    #: The claims the claim phases ask about, by conversation id (read from ``--targets`` by
    #: :func:`mtcabench.annotate.claims.read_claim_targets`); None: the claim proposer's.
    claim_targets: Mapping[str, tuple[Any, ...]] | None = None


#: Settings for a compact endpoint (the embedded SmolLM2 server: 2 slow cores and an 8k
#: context): shorter transcripts, fewer targets per request and shorter answers.
COMPACT_SETTINGS = RequestSettings(
    limits=TranscriptLimits(max_turn_chars=700, max_chars=5000),
    targets_per_request=2,
    spans_per_request=3,
    compact=True,
)


class Phase(ABC):
    """One LLM phase. Subclasses set the class attributes and the three methods below."""

    #: The phase's name: its registry key, its templates' ``<name>-v<N>.md``.
    name: ClassVar[str]
    #: The pydantic model (see :class:`~.schema.AnswerModel`) an answer must match.
    output: ClassVar[type[BaseModel]]
    #: What a unit comes from: None for a conversation (the first phase of a chain), else
    #: the record type the previous phase makes.
    consumes: ClassVar[type[Record] | None]
    #: The record type ``parse`` makes (the last phase of a chain makes Candidates).
    produces: ClassVar[type[Record]]
    #: Answer limit in tokens, and the one on a compact endpoint.
    max_tokens: ClassVar[int]
    compact_max_tokens: ClassVar[int]

    def __init__(self, endpoint: Endpoint, template: PromptTemplate,
                 settings: RequestSettings | None = None):
        if template.phase != self.name:
            raise ValueError(f"a {template.phase!r} template given to the {self.name!r} phase")
        self.endpoint = endpoint
        self.template = template
        self.settings = settings or RequestSettings()
        self.answer_tokens = self.settings.max_tokens.get(self.name) or (
            self.compact_max_tokens if self.settings.compact else self.max_tokens)
        self.response_format = response_format(self.output, endpoint.response_format,
                                               name=f"{self.name}_output")
        #: Written into every record the phase makes.
        self.annotator = Annotator(name="llm", model=endpoint.model, endpoint=endpoint.identity,
                                   prompt_version=template.version, prompt_hash=template.sha256)

    @classmethod
    def find_template(cls, version: str | None = None,
                 prompts_dir: str | Path | None = None) -> PromptTemplate:
        """The phase's template: ``version`` (e.g. ``propose-v1``) or the newest."""
        return load_template(cls.name, version, prompts_dir)

    # ------------------------------------------------------------------ what a phase says
    @abstractmethod
    def units(self, conv: Conversation, upstream: Record | None) -> list[Any]:
        """The units of work from a conversation (first phase) or an upstream ``ok`` record."""

    @abstractmethod
    def messages(self, conv: Conversation, unit: Any) -> list[dict[str, str]]:
        """The chat messages of one unit (usually ``self.template.render(...)``)."""

    @abstractmethod
    def parse(self, conv: Conversation, unit: Any, answer: Answer) -> list[Record]:
        """The records of one answer: ok ones and rejected ones (with the raw answer), none
        dropped."""

    # ------------------------------------------------------------------ shared
    def request(self, conv: Conversation, unit: Any) -> ChatRequest:
        """The chat request of one unit, with its cache key."""
        s = self.settings.sampling
        body: dict[str, Any] = {
            "model": self.endpoint.model,
            "messages": self.messages(conv, unit),
            "response_format": self.response_format,
            "temperature": s.temperature,
            "max_tokens": self.answer_tokens,
        }
        if s.seed is not None:
            body["seed"] = s.seed
        return ChatRequest.build(body, endpoint=self.endpoint.identity,
                                 prompt_version=self.template.version,
                                 prompt_hash=self.template.sha256)
