"""A phase's answer schema as the server takes it: a flat, strict JSON schema in its flavour.

The schema is derived from the phase's pydantic model and sent in the server's flavour of
structured output: OpenAI's ``{"type": "json_schema", "json_schema": {..., "strict": true}}``
or llama.cpp's ``{"type": "json_object", "schema": {...}}`` (grammar-constrained decoding).
Parsing is lenient about extra keys (a model may add offsets or notes; they are ignored,
never trusted) and strict about the keys and types the schema requires: models derive from
:class:`AnswerModel`. The models never ask for character offsets: we compute those.
"""

from __future__ import annotations

import copy
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mtcabench.annotate.llm.providers import RESPONSE_FORMATS

#: Ceilings in the schemas: they bound an answer's length (a small model under a grammar may
#: otherwise repeat items until it hits max_tokens) and are generous for a strong model.
MAX_SPANS = 8
MAX_EDGES = 8

DependencyTypeOut = Literal["direct", "chained", "multi-source", "hallucination"]


class AnswerModel(BaseModel):
    """Base of the answer models: extra keys are ignored, never trusted."""

    model_config = ConfigDict(extra="ignore")


class EdgeOut(AnswerModel):
    """One edge as the model states it: ``child`` depends on the earlier turn ``parent``."""

    child: int = Field(description="Index of the dependent turn.")
    parent: int = Field(description="Index of the earlier turn it depends on.")
    evidence: str = Field(description="Text copied exactly from the parent turn.")


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


def response_format(model: type[BaseModel], flavour: str, *, name: str) -> dict[str, Any]:
    """The ``response_format`` request field for answers of ``model`` in ``flavour``."""
    schema = output_schema(model)
    if flavour == "json_schema":
        return {"type": "json_schema",
                "json_schema": {"name": name, "strict": True, "schema": schema}}
    if flavour == "json_object":
        return {"type": "json_object", "schema": schema}
    raise ValueError(f"unknown response format {flavour!r}; expected one of {RESPONSE_FORMATS}")
