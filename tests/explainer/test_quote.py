"""The terminal's quote of an edge's evidence: one line, centred on the value when it is long."""

from __future__ import annotations

from mtcabench.explainer._output import quote

RESULT = ('{"order_id": "ORD-55821", "status": "shipped", "carrier": "UPS", "tracking_number": '
          '"1Z999AA10123456784", "items": [{"sku": "LMP-2", "name": "desk lamp", "qty": 1}], '
          '"shipped_on": "2025-03-02"}')


def test_a_long_evidence_is_quoted_around_the_value_its_child_took():
    got = quote(RESULT, "The tracking number is 1Z999AA10123456784.", limit=72)
    assert "1Z999AA10123456784" in got and len(got) <= 72
    assert got.startswith("\u2026") and got.endswith("\u2026")  # cut on both sides
    # Cut at its first 72 characters, the value was not shown.
    assert "1Z999AA10123456784" not in RESULT[:72]


def test_a_short_evidence_is_quoted_whole_and_an_unrelated_child_keeps_the_head():
    assert quote('"tracking_number": "1Z9"', "anything") == '"tracking_number": "1Z9"'
    head = quote(RESULT, "zzzz", limit=40)
    assert head == RESULT[:39] + "\u2026"
    assert quote("a\n\tb\x1b[31m", "") == "a b"  # one line, no control sequence
