"""A release of real spans only keeps the columns it had before origins existed (its Parquet
files byte for byte, scripts/release_fingerprint.py); its card states the type rule and the
hops, and says nothing of counterfactual spans."""

from __future__ import annotations

import pyarrow.parquet as pq

from mtcabench.benchmark.tables import SPAN_FEATURES, span_from_row, span_row
from mtcabench.model import BenchmarkSpan, CounterfactualEdit, SpanOrigin
from mtcabench.release import build_release


def test_a_release_of_real_spans_has_no_origin_columns(sample_inputs):
    built = build_release("0.1.0", sample_inputs["reviewed"], sample_inputs["conversations"],
                          out=sample_inputs["out"])
    table = pq.read_table(built.folder / "data" / "spans" / "taubench.parquet")
    assert table.column_names == list(SPAN_FEATURES)
    assert "origin" not in table.column_names and "counterfactual" not in table.column_names
    card = (built.folder / "README.md").read_text(encoding="utf-8")
    assert "### Real and counterfactual spans" not in card and "| `origin` |" not in card
    assert "### Types, depths and hops" in card and "- hallucination: " in card
    assert "by_origin" not in built.manifest.statistics
    assert set(built.manifest.statistics["hops_by_type"]) == {
        "direct", "chained", "multi-source", "hallucination"}
    assert all(s.origin is SpanOrigin.REAL for s in built.spans)


def test_a_rows_origin_and_edit_round_trip(sample_inputs):
    built = build_release("0.1.0", sample_inputs["reviewed"], sample_inputs["conversations"],
                          out=sample_inputs["out"])
    real = built.spans[0]
    assert "origin" not in span_row(real) and "counterfactual" not in span_row(real)
    edit = CounterfactualEdit(conversation_id="c", field="flight_number", original="HAT069",
                              replacement="HAT083", source_turn=3, source_quote="HAT083",
                              source_start=5, source_end=11, entity_turn=3)
    made = real.model_copy(update={"origin": SpanOrigin.COUNTERFACTUAL, "counterfactual": edit})
    row = span_row(made)
    assert row["origin"] == "counterfactual" and row["counterfactual"]["field"] == "flight_number"
    assert span_from_row(row) == made
    # a real span's row in a release holding counterfactuals: empty cells, read back as real
    assert span_from_row({**span_row(real), "origin": None, "counterfactual": None}) == real
    assert BenchmarkSpan.model_validate(real.model_dump()) == real
