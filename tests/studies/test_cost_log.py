"""The cost log of benchmarks/trace_cost.py --log: a whole split measured over several runs,
each row kept as it is measured, a killed run's cut line measured again, the figures read
back."""

import json

import pytest

from mtcabench.errors import InputError
from mtcabench.studies import append_cost_row, cost_log_rows, cost_summary


def row(conversation, domain, process, plain, trace):
    return {"conversation": conversation, "domain": domain, "process": process, "spans": 2,
            "tokens": 1000, "plain_s": plain, "trace_s": trace, "ids_s": 0.0, "calls": 1,
            "computed": 900, "reused": 100, "windowed": 0, "skipped": 0, "max_rss_mib": 700}


def test_the_log_keeps_whole_rows_and_a_cut_last_line_is_measured_again(tmp_path):
    log = tmp_path / "log.jsonl"
    assert cost_log_rows(log) == []  # not started yet
    append_cost_row(log, row("a", "airline", "p1", 2.0, 1.0))
    append_cost_row(log, {**row("b", "retail", "p2", 1.0, 3.0), "windowed": 2})
    with log.open("a", encoding="utf-8") as f:
        f.write('{"conversation": "c", "pla')  # a run killed while writing
    assert [r["conversation"] for r in cost_log_rows(log)] == ["a", "b"]
    text = cost_summary(cost_log_rows(log), selected=5)
    assert "2 conversations measured of the 5 selected, by 2 process(es)" in text
    # Per conversation: trace (1 + 3) / 2 = 2.0 s against plain (2 + 1) / 2 = 1.5 s: 1.33x
    assert ("all: 2 conversations, 4 spans; per conversation trace 2.0 s against one plain "
            "pass 1.5 s: 1.33x") in text
    assert "  airline: 1 conversations" in text and "  retail: 1 conversations" in text
    # The conversations whose spans took context windows apart: 3.0 s against 1.0 s
    assert "  with a span in a context window: 1 conversations, 2 spans; per conversation " \
           "trace 3.0 s against one plain pass 1.0 s: 3.00x" in text
    assert "  without: 1 conversations" in text
    assert cost_summary([]) == "no conversation measured yet"


def test_a_log_broken_before_its_last_line_is_refused_with_its_line(tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text("not json\n" + json.dumps(row("a", "airline", "p", 1.0, 1.0)) + "\n")
    with pytest.raises(InputError, match=r"log.jsonl, line 1: not a JSON row"):
        cost_log_rows(log)
