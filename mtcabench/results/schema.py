"""The published JSON schema of a submission line, generated from the pydantic models.

``submission.schema.json`` beside this module is the published copy; a test checks that it
equals :func:`submission_schema`. After changing the models, regenerate it with
``python -m mtcabench.results.schema --write``.

The schema describes one line, and the scorer reads a line exactly when the schema accepts
it (tests/properties checks this on generated lines). What it cannot say is checked by the
scorer against the whole file or the benchmark (docs/scoring.md): the header may only be the
first line, span ids are unique and in the benchmark, edges point backwards between turns of
the span's conversation, start no later than the target turn and are no more than the
conversation's turn pairs, scores are finite (JSON has no NaN; some writers emit it).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic.json_schema import models_json_schema

from mtcabench.model import SCHEMA_VERSION, SubmissionEntry, SubmissionHeader
from mtcabench.results.submission import MAX_SENTENCES

SCHEMA_PATH = Path(__file__).with_name("submission.schema.json")


def submission_schema() -> dict:
    """JSON Schema (2020-12) of one submission line: a header or a prediction."""
    _, schema = models_json_schema(
        [(SubmissionHeader, "validation"), (SubmissionEntry, "validation")])
    defs = schema["$defs"]
    version = {"type": "integer", "minimum": 1, "maximum": SCHEMA_VERSION,
               "default": SCHEMA_VERSION, "description": "Layout version of this record kind."}
    header = defs["SubmissionHeader"]
    header["properties"]["kind"] = {
        "const": SubmissionHeader.KIND,
        "description": "Marks the header; only allowed on the first line."}
    header["properties"]["schema_version"] = version
    header["required"] = ["kind", *header["required"]]
    entry = defs["SubmissionEntry"]
    entry["properties"]["kind"] = {
        "const": SubmissionEntry.KIND, "default": SubmissionEntry.KIND,
        "description": "May be left out: a line without kind is a prediction."}
    entry["properties"]["schema_version"] = {
        **version, "maximum": SubmissionEntry.VERSION, "default": 1,
        "description": "Layout version: 1, 2 where an edge carries sentences, 3 where the "
                       "line has a window."}
    entry["allOf"] = [
        # A skipped span has no edges (a rule across two fields, so stated here).
        {"if": {"required": ["skipped"],
                "properties": {"skipped": {"type": "string", "minLength": 1}}},
         "then": {"properties": {"edges": {"maxItems": 0}}}},
        # Sentences came with version 2: a line that says 1 has none.
        {"if": {"required": ["schema_version"], "properties": {"schema_version": {"const": 1}}},
         "then": {"properties": {"edges": {"items": {
             "properties": {"sentences": {"type": "null"}}}}}}},
        # A window came with version 3: a line that says 1 or 2 has none.
        {"if": {"required": ["schema_version"], "properties": {"schema_version": {"maximum": 2}}},
         "then": {"properties": {"window": {"type": "null"}}}},
    ]
    edge = defs["PredictedEdge"]
    edge["properties"]["child"]["description"] = "Index of the dependent turn (0-based)."
    edge["properties"]["parent"]["description"] = "Index of the turn depended on; < child."
    edge["properties"]["score"]["description"] = "Attribution score, if any; a finite number."
    edge["properties"]["sentences"]["anyOf"][0]["maxItems"] = MAX_SENTENCES
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "mtcabench submission line",
        "description": (
            "A submission is JSON Lines: an optional header (kind 'submission') on the first "
            "line, then one prediction per benchmark span. Each line matches this schema."),
        "oneOf": [{"$ref": "#/$defs/SubmissionHeader"}, {"$ref": "#/$defs/SubmissionEntry"}],
        "$defs": defs,
    }


def schema_text() -> str:
    return json.dumps(submission_schema(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Print the schema, or with ``--write`` update the published copy."""
    argv = sys.argv[1:] if argv is None else argv
    if "--write" in argv:
        SCHEMA_PATH.write_text(schema_text(), encoding="utf-8")
        print(f"wrote {SCHEMA_PATH}")
    else:
        sys.stdout.write(schema_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
