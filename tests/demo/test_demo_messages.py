"""What the demo says about its LLM stage: one plain line with what the model proposed and
what was kept, and, for the embedded 135M model, what it can and cannot do and how to point
the demo at a capable endpoint (it used to say so only in a log line)."""

from __future__ import annotations

from collections import Counter

from mtcabench.annotate.summary import RecordTally, RunSummary
from mtcabench.demo import EMBEDDED_NOTE, llm_line


def _summary(endpoint: str, model: str) -> RunSummary:
    return RunSummary(command="run", endpoint=endpoint, model=model,
                      proposals=RecordTally(ok=2, rejected_records=3),
                      candidates_by_annotator=Counter({"lineage": 21}))


def test_the_embedded_model_line_says_what_it_did_and_what_to_do_instead():
    line = llm_line(_summary("embedded-llama.cpp:smollm2-135m-instruct", "smollm2-135m-instruct"))
    assert "proposed 5 spans, 2 passed the checks" in line
    assert "0 candidates have the LLM's graph, 21 the lineage rules'" in line
    assert EMBEDDED_NOTE in line and "--base-url URL --model NAME" in line
    assert "OPENAI_API_KEY" in line and "\n" not in line


def test_a_capable_endpoint_gets_the_numbers_only():
    line = llm_line(_summary("https://api.example.com/v1", "gpt-4o"))
    assert line.startswith("annotate: gpt-4o proposed 5 spans") and EMBEDDED_NOTE not in line
