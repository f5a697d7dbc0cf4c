"""`view` sends offsets in the unit the page slices by (UTF-16 code units): after an emoji, a
span's highlight and a gold evidence range land on their value, as in the review UI."""

from __future__ import annotations

from mtcabench.benchmark import load_benchmark
from mtcabench.model import Evidence, browser_offset
from mtcabench.scoring.view import view_data

EMOJI = "\U0001F600\U0001F680 "  # two characters outside the BMP: four UTF-16 units


def _js_slice(text: str, start: int, end: int) -> str:
    """What JavaScript's ``text.slice(start, end)`` gives (UTF-16 code units)."""
    units = text.encode("utf-16-le", "surrogatepass")
    return units[2 * start:2 * end].decode("utf-16-le", "surrogatepass")


def test_span_and_evidence_offsets_after_an_emoji_land_on_the_value(bench, submissions):
    folder, ids = bench
    benchmark = load_benchmark(folder)
    span = next(s for s in benchmark.spans if s.id == ids["s1-price"])
    conv = benchmark.conversations[span.conversation_id]
    target = conv.turns[span.span.turn]
    target.content = EMOJI + target.content
    span.span.start += len(EMOJI)
    span.span.end += len(EMOJI)
    edge = next(e for e in span.graph.edges if e.pair == (10, 7))
    parent = conv.turns[7]
    parent.content = EMOJI + parent.content
    value = "151"
    at = parent.text.index(value)
    edge.evidence = Evidence(start=at, end=at + len(value), quote=value)

    data = view_data(benchmark, [])
    shown = next(s for s in data["spans"] if s["id"] == span.id)
    texts = data["texts"]
    turns = data["conversations"][shown["conv"]]["turns"]
    assert _js_slice(texts[turns[shown["turn"]][1]], shown["start"], shown["end"]) == "$151"
    (c, p, a, b), = [e for e in shown["evidence"] if e[:2] == [10, 7]]
    assert _js_slice(texts[turns[p][1]], a, b) == value


def test_browser_offset_counts_utf16_units():
    text = "a\U0001F600b\u00e9c"
    assert [browser_offset(text, k) for k in range(len(text) + 1)] == [0, 1, 3, 4, 5, 6]
