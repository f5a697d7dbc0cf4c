"""What the model must answer in each phase: pydantic models and the JSON schema sent to the server.

The schema is derived from these models and sent in the server's flavour of structured
output: OpenAI's ``{"type": "json_schema", "json_schema": {..., "strict": true}}`` or
llama.cpp's ``{"type": "json_object", "schema": {...}}`` (grammar-constrained decoding).
The models never ask for character offsets: we compute those from the quotes.

Parsing is lenient about extra keys (a model may add offsets or notes; they are ignored, never
trusted) and strict about the keys and types the schema requires.
"""

from __future__ import annotations

import copy
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

RESPONSE_FORMATS = ("json_schema", "json_object")

#: Ceilings in the schema: they bound an answer's length (a small model under a grammar may
#: otherwise repeat items until it hits max_tokens) and are generous for a strong model.
MAX_SPANS = 8
MAX_EDGES = 8

DependencyTypeOut = Literal["direct", "chained", "multi-source", "hallucination"]


class _Out(BaseModel):
    model_config = ConfigDict(extra="ignore")


class EdgeOut(_Out):
    """One edge as the model states it: ``child`` depends on the earlier turn ``parent``."""

    child: int = Field(description="Index of the dependent turn.")
    parent: int = Field(description="Index of the earlier turn it depends on.")
    evidence: str = Field(description="Text copied exactly from the parent turn.")


class SpanOut(_Out):
    """One target span proposed in phase 1."""

    turn: int = Field(description="Index of the assistant turn holding the span.")
    quote: str = Field(description="The span, copied exactly from that turn.")
    dependency_type: DependencyTypeOut
    edges: list[EdgeOut] = Field(max_length=MAX_EDGES)
    rationale: str = Field(description="One short sentence.")


class ProposeOut(_Out):
    """Phase 1 answer: the spans chosen in the target turns."""

    spans: list[SpanOut] = Field(max_length=MAX_SPANS)


class VerifyOut(_Out):
    """Phase 2 answer for one span: the corrected graph, type, confidence and rationale."""

    dependency_type: DependencyTypeOut
    edges: list[EdgeOut] = Field(max_length=MAX_EDGES)
    primed_by: list[int] = Field(max_length=MAX_EDGES,
                                 description="For a hallucination: turns that primed the error.")
    confidence: float = Field(ge=0, le=1)
    rationale: str = Field(description="A short rationale.")


OUTPUT_MODELS: dict[str, type[_Out]] = {"propose": ProposeOut, "verify": VerifyOut}


def output_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A self-contained JSON schema for ``model``, in the strict subset both servers accept.

    References are inlined (llama.cpp's grammar builder and OpenAI both take a flat schema),
    titles and descriptions dropped (tokens the grammar does not need), every property
    required and no additional properties (OpenAI strict mode).
    """
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return walk(copy.deepcopy(defs[node["$ref"].rsplit("/", 1)[-1]]))
            out = {k: walk(v) for k, v in node.items() if k not in ("title", "description")}
            if out.get("type") == "object" and "properties" in out:
                out["required"] = list(out["properties"])
                out["additionalProperties"] = False
            return out
        if isinstance(node, list):
            return [walk(x) for x in node]
        return node

    return walk(schema)


def response_format(phase: str, flavour: str) -> dict[str, Any]:
    """The ``response_format`` request field for ``phase`` in the server's ``flavour``."""
    schema = output_schema(OUTPUT_MODELS[phase])
    if flavour == "json_schema":
        return {"type": "json_schema",
                "json_schema": {"name": f"{phase}_output", "strict": True, "schema": schema}}
    if flavour == "json_object":
        return {"type": "json_object", "schema": schema}
    raise ValueError(f"unknown response format {flavour!r}; expected one of {RESPONSE_FORMATS}")
