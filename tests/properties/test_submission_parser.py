"""The submission parser accepts a line exactly when the published JSON schema does.

Lines are generated from the schema's own field names with values of every JSON type, right
and wrong ("10" for an integer, true for a number, a list for an object, integral floats).
The oracle is the published ``submission.schema.json`` under a standard JSON Schema 2020-12
validator, plus what the schema states but a validator does not assert by default: scores are
finite numbers (JSON has no NaN; an integer too large for a float is not a finite score
either), and ``created_at`` has the ``date-time`` format (RFC 3339), checked here with a
regular expression and the standard library, independently of the parser.
"""

from __future__ import annotations

import json
import math
import re
import tempfile
from datetime import datetime
from pathlib import Path

import jsonschema
from hypothesis import given
from hypothesis import strategies as st

from mtcabench.errors import InputError
from mtcabench.scoring import read_submission
from mtcabench.results.schema import SCHEMA_PATH

VALIDATOR = jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))

anything = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                max_size=3),
    max_leaves=6)
numbers = (st.integers(-3, 40) | st.floats(-3, 40, allow_nan=False).map(lambda x: round(x, 1))
           | st.sampled_from([4.0, 10**20, 1e300, -0.0, 10**400]))
wrong = st.sampled_from(["10", "0.9", True, False, None, [], {}, [1], {"a": 1}])
ints = numbers | wrong
edges = st.fixed_dictionaries({}, optional={
    "child": ints, "parent": ints, "score": numbers | wrong, "weight": anything, "kind": anything})
edge_lists = st.lists(edges, max_size=3) | wrong | anything
times = st.sampled_from(["2026-01-02T03:04:05Z", "2026-01-02T03:04:05.123+02:00",
                         "2026-01-02t03:04:05z", "2026-01-02 03:04:05", "2026-01-02T03:04:05",
                         "2026-02-31T00:00:00Z", "2026-01-02T25:00:00Z", "1700000000", ""]) \
    | st.sampled_from([1700000000, True, None, [], {}])
versions = st.sampled_from([1, 1.0, 2, 0, -1, True, "1", None, 1.5])
texts = st.text(max_size=6) | wrong

# Valid lines, built from the schema's fields with values of the right types ...
good_ints = st.integers(-3, 40) | st.sampled_from([4.0, 10**20, 1e300])
good_edges = st.lists(st.fixed_dictionaries(
    {"child": good_ints, "parent": good_ints},
    optional={"score": st.none() | st.integers(-5, 5)
              | st.floats(-1e6, 1e6, allow_nan=False)}), max_size=3)
valid_prediction = st.fixed_dictionaries({"span_id": st.text(max_size=6)}, optional={
    "kind": st.just("prediction"), "schema_version": st.sampled_from([1, 1.0]),
    "edges": good_edges, "skipped": st.none() | st.just("")})
valid_skip = st.fixed_dictionaries({"span_id": st.text(max_size=6), "skipped": st.text(min_size=1,
                                                                                      max_size=6)},
                                   optional={"edges": st.just([])})
valid_head = st.fixed_dictionaries({"kind": st.just("submission"), "method": st.text(max_size=5)},
                                   optional={
    "schema_version": st.just(1), "scorer": st.none() | st.text(max_size=4),
    "model": st.none() | st.text(max_size=4), "parameters": st.dictionaries(
        st.text(max_size=3), anything, max_size=2), "benchmark": st.none() | st.text(max_size=4),
    "created_at": st.none() | st.sampled_from(["2026-01-02T03:04:05Z",
                                              "2026-01-02T03:04:05.123+02:00"]),
    "notes": st.dictionaries(st.text(max_size=3), anything, max_size=2)})
valid_lines = valid_prediction | valid_skip | valid_head

# ... and the same with one thing wrong (or not: a mutation may leave the line valid).
FIELDS = ["kind", "schema_version", "span_id", "edges", "skipped", "method", "scorer", "model",
          "parameters", "benchmark", "created_at", "notes", "weight"]
values = st.one_of(wrong, anything, times, versions, texts, edge_lists)


@st.composite
def mutated(draw):
    line = dict(draw(valid_lines))
    what = draw(st.sampled_from(["set", "drop", "edge"]))
    if what == "set":
        line[draw(st.sampled_from(FIELDS))] = draw(values)
    elif what == "drop" and line:
        line.pop(draw(st.sampled_from(sorted(line))))
    elif isinstance(line.get("edges"), list) and line["edges"]:
        i = draw(st.integers(0, len(line["edges"]) - 1))
        edge = dict(line["edges"][i])
        edge[draw(st.sampled_from(["child", "parent", "score", "weight"]))] = draw(ints | anything)
        line["edges"] = [*line["edges"][:i], edge, *line["edges"][i + 1:]]
    return line


prediction = st.fixed_dictionaries({}, optional={
    "kind": st.sampled_from(["prediction", "submission", "span", None, 3]),
    "schema_version": versions, "span_id": texts, "edges": edge_lists,
    "skipped": texts, "method": texts, "extra": anything})
lines = valid_lines | mutated() | prediction | anything


def scores_finite(line) -> bool:
    for e in line.get("edges") or [] if isinstance(line, dict) else []:
        score = e.get("score") if isinstance(e, dict) else None
        if isinstance(score, (int, float)) and not isinstance(score, bool):
            try:
                if not math.isfinite(float(score)):
                    return False
            except OverflowError:
                return False
    return True


RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})",
                     re.ASCII)


def time_format_ok(line) -> bool:
    value = line.get("created_at") if isinstance(line, dict) else None
    if not isinstance(value, str) or line.get("kind") != "submission":
        return True
    if not RFC3339.fullmatch(value):
        return False
    try:
        datetime.fromisoformat(value.upper().replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def accepted(text: str) -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sub.jsonl"
        path.write_text(text, encoding="utf-8")
        try:
            read_submission(path)
        except InputError as exc:
            assert exc.message.startswith(str(path)), exc.message
            return False
    return True


@given(lines)
def test_a_line_is_read_exactly_when_the_schema_accepts_it(line):
    valid = VALIDATOR.is_valid(line) and scores_finite(line) and time_format_ok(line)
    assert accepted(json.dumps(line) + "\n") == valid, (line, list(VALIDATOR.iter_errors(line))[:2])


valid_entries = st.builds(
    lambda sid, pairs: {"span_id": sid, "edges": [{"child": c, "parent": p} for c, p in pairs]},
    st.sampled_from(["a#1:0-1", "b#2:0-1", "c#3:0-1"]),
    st.lists(st.tuples(st.integers(1, 9), st.integers(0, 8)), max_size=3))
valid_header = st.just({"kind": "submission", "method": "m"})


@given(st.lists(valid_entries | valid_header, min_size=1, max_size=5))
def test_a_file_of_valid_lines_is_read_exactly_when_the_file_rules_hold(file_lines):
    """The rules the schema cannot state: a header only first, each span id once."""
    ids = [x["span_id"] for x in file_lines if "span_id" in x]
    rules = (all("kind" not in x for x in file_lines[1:]) and len(ids) == len(set(ids)))
    assert accepted("".join(json.dumps(x) + "\n" for x in file_lines)) == rules
