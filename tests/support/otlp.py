"""OTLP JSON exports read with the OpenTelemetry protobuf definitions (opentelemetry-proto):
what the tests check our OTLP output with, and how they send an agent's trace to Phoenix."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import httpx
from google.protobuf.json_format import ParseDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

_IDS = ("traceId", "spanId", "parentSpanId")


def _b64_ids(obj: dict[str, Any]) -> None:
    # OTLP/JSON writes ids in hex; protobuf's JSON parser reads bytes as base64.
    for key in _IDS:
        if obj.get(key):
            obj[key] = base64.b64encode(bytes.fromhex(obj[key])).decode()


def parse_otlp_json(data: dict[str, Any] | str | Path) -> ExportTraceServiceRequest:
    """An OTLP JSON export as the protobuf message; unknown fields are refused."""
    if isinstance(data, (str, Path)):
        data = json.loads(Path(data).read_text(encoding="utf-8"))
    data = copy.deepcopy(data)
    for resource in data.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                _b64_ids(span)
                for link in span.get("links", []):
                    _b64_ids(link)
    return ParseDict(data, ExportTraceServiceRequest(), ignore_unknown_fields=False)


def attributes(items) -> dict[str, Any]:
    """Protobuf KeyValues as a dict of Python values."""
    out = {}
    for kv in items:
        which = kv.value.WhichOneof("value")
        out[kv.key] = getattr(kv.value, which) if which else None
    return out


def post_otlp(traces_url: str, request: ExportTraceServiceRequest) -> None:
    """Send spans over OTLP HTTP/protobuf, as an instrumented agent's exporter does."""
    response = httpx.post(traces_url, content=request.SerializeToString(), timeout=30,
                          headers={"Content-Type": "application/x-protobuf"})
    response.raise_for_status()
