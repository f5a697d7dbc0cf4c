"""An edge's evidence from sentence scores (hand-built tables, no model): the parent's best
sentences, on the turn share's scale, as trimmed ranges of Turn.text; and on graphs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mtcabench.evaluate import TARGET, turn_shares
from mtcabench.evaluate.attribution._engine import best_sentences
from mtcabench.evaluate.attribution._render import Sentence
from mtcabench.evaluate.methods._conversation import with_evidence
from mtcabench.model import SCORE_DIGITS, Edge, EdgeKind, ProvenanceGraph, ScoredSentence

TEXTS = ["Be brief. Never guess.", '{\n  "a": 1,\n  "gate": "K41",\n  "seat": "17C"\n}', "ok"]
#: The sentences of turns 0 and 1 as the splitter makes them (blanks belong to a sentence).
SENTENCES = [Sentence(0, 0, 10, 0), Sentence(0, 10, 22, 1),
             Sentence(1, 0, 4, 0), Sentence(1, 4, 13, 1), Sentence(1, 13, 30, 2),
             Sentence(1, 30, 44, 3), Sentence(1, 44, 45, 4)]


def test_best_sentences_rank_scale_and_trim():
    scores = np.array([0.1, 0.3, np.nan, -0.2, 0.6, 0.2, 0.0])
    turns = np.array([s.turn for s in SENTENCES])
    best = best_sentences(scores, SENTENCES, TEXTS, before=2, k=2)
    shares = turn_shares(scores, turns, 2)
    # Best first; with the max aggregate the best sentence's score is the turn's share.
    # A JSON field's evidence leaves out its trailing comma (and blanks).
    assert [TEXTS[1][x.start:x.end] for x in best[1]] == ['"gate": "K41"', '"seat": "17C"']
    assert best[1][0].score == pytest.approx(abs=1e-6, expected=shares[1])
    assert best[0][0].score == pytest.approx(abs=1e-6, expected=shares[0])
    assert [x.score for x in best[1]] == pytest.approx(abs=1e-6, expected=[0.6 / 0.9, 0.2 / 0.9])
    assert [TEXTS[0][x.start:x.end] for x in best[0]] == ["Never guess.", "Be brief."]
    # Never scored (NaN), negative and zero sentences are no evidence; k bounds the list.
    assert len(best_sentences(scores, SENTENCES, TEXTS, before=2, k=9)[1]) == 2
    assert best_sentences(scores, SENTENCES, TEXTS, before=1, k=3).keys() == {0}
    assert best_sentences(scores, SENTENCES, TEXTS, before=2, k=0) == {}
    assert best_sentences(np.full(7, -1.0), SENTENCES, TEXTS, before=2, k=3) == {}


def test_sum_aggregate_sentences_share_the_turn():
    scores = np.array([0.1, 0.3, np.nan, 0.2, 0.6, 0.2, 0.0])
    best = best_sentences(scores, SENTENCES, TEXTS, before=2, k=9, aggregate="sum")
    shares = turn_shares(scores, np.array([s.turn for s in SENTENCES]), 2, "sum")
    for turn, xs in best.items():
        assert sum(x.score for x in xs) == pytest.approx(abs=1e-6, expected=shares[turn])


def test_with_evidence_reads_each_edge_from_its_child():
    graph = ProvenanceGraph(target=4, nodes=[0, 2, 3, 4], edges=[
        Edge(child=4, parent=3, score=0.5), Edge(child=3, parent=2, kind=EdgeKind.STRUCTURAL),
        Edge(child=2, parent=0, score=0.7)])
    asked = []

    def sentences(node, parent):
        asked.append((node, parent))
        return [ScoredSentence(start=0, end=1, score=0.1 * parent)]

    out = with_evidence(graph, sentences)
    assert asked == [(TARGET, 3), (2, 0)]  # the target's under TARGET, a turn's by index
    assert [len(e.sentences or []) for e in out.edges] == [1, 0, 1]
    assert with_evidence(graph, None) is graph and not graph.edges[0].sentences


def test_with_evidence_of_a_turn_asked_by_parts_reads_the_part_that_found_the_edge():
    from mtcabench.evaluate.methods._tokengeist import node_keys
    from mtcabench.model import Conversation

    conv = Conversation.model_validate({
        "id": "hand/3", "source": "hand", "domain": "test", "turns": [
            {"index": 0, "role": "user", "content": "Order ORD-1."},
            {"index": 1, "role": "assistant", "content": "Let me look.", "tool_calls": [
                {"id": "a", "name": "lookup", "arguments": {"order_id": "ORD-1"}}]},
            {"index": 2, "role": "tool", "tool_call_id": "a", "content": "ok"},
            {"index": 3, "role": "assistant", "content": "Done."}]})
    text, call = node_keys(conv, 1)  # the text, the order id's value
    graph = ProvenanceGraph(target=3, nodes=[0, 1, 2, 3], edges=[
        Edge(child=3, parent=2, score=0.9), Edge(child=2, parent=1, kind=EdgeKind.STRUCTURAL),
        Edge(child=1, parent=0, score=0.7)])
    by_key = {text: [ScoredSentence(start=0, end=5, score=0.2)],
              call: [ScoredSentence(start=6, end=12, score=0.7)]}
    out = with_evidence(graph, lambda node, parent: by_key.get(node, []) if parent == 0 else
                        [ScoredSentence(start=0, end=2, score=0.9)], conv)
    (edge,) = [e for e in out.edges if e.pair == (1, 0)]
    assert [(x.start, x.end) for x in edge.sentences] == [(6, 12)]


@pytest.mark.parametrize(("unit", "shown"), [
    ('{"order_id": "ORD-55821", ', '"order_id": "ORD-55821"'),
    ('"qty": 1}], ', '"qty": 1'),
    ('"items": [{"sku": "LMP-2", ', '"items": [{"sku": "LMP-2"'),
    ('"shipped_on": "2025-03-02"}', '"shipped_on": "2025-03-02"'),
    ("  Be brief. ", "Be brief."),
    ('{"a": [1, 2]}', '{"a": [1, 2]}'),  # balanced: the whole object is the unit
    ("{", "{"),  # never empty
])
def test_evidence_range_shows_the_field_without_its_container(unit, shown):
    from mtcabench.evaluate.attribution._engine import evidence_range

    a, b = evidence_range(unit, 0, len(unit))
    assert unit[a:b] == shown


def test_a_turn_scores_its_best_segment_with_the_units_of_a_segment_pooled():
    from mtcabench.evaluate.attribution._engine import segment_ids

    # Turn 0: one sentence of two JSON fields (units 0, 1 in segment 0); turn 1: two sentences.
    units = [Sentence(0, 0, 5, 0), Sentence(0, 5, 9, 0), Sentence(1, 0, 4, 0),
             Sentence(1, 4, 8, 1)]
    scores = np.array([0.2, 0.3, 0.4, 0.1])
    turns = np.array([x.turn for x in units])
    segs = segment_ids(units)
    assert segs.tolist() == [0, 0, 1, 2]
    # Attention masses add up within a segment: 0.5 against 0.4, splitting fields changes nothing.
    assert turn_shares(scores, turns, 2, segments=segs) == pytest.approx({0: 0.5 / 0.9,
                                                                         1: 0.4 / 0.9})
    # A scorer whose unit scores are not masses keeps a segment's best unit.
    assert turn_shares(scores, turns, 2, segments=segs, additive=False) == pytest.approx(
        {0: 0.3 / 0.7, 1: 0.4 / 0.7})
    # The evidence stays the unit: the field that holds the value, on the same scale.
    best = best_sentences(scores, units, ["abcdefghi", "abcdefgh"], 2, 1)
    assert (best[0][0].start, best[0][0].end) == (5, 9)
    assert best[0][0].score == pytest.approx(0.3 / 0.9, abs=1e-6)


def test_a_sentence_written_never_outscores_its_edge():
    """Scores are rounded once, when written: an edge and its best sentence (the same share,
    with the max aggregate) are written alike, whichever way the sixth decimal rounds."""
    share = 0.9899536762416064  # rounds up at six decimals: 0.989954
    scores = np.array([share, np.nan, 1 - share, np.nan, np.nan, np.nan, np.nan])
    turns = np.array([s.turn for s in SENTENCES])
    shares = turn_shares(scores, turns, 2)
    best = best_sentences(scores, SENTENCES, TEXTS, before=2, k=1)
    assert round(shares[0], 6) > shares[0]  # the case that broke: rounding up
    edge = Edge(child=2, parent=0, score=shares[0], sentences=best[0])
    assert edge.sentences[0].score == edge.score  # in memory: full precision, equal
    written = json.loads(ProvenanceGraph(target=2, nodes=[0, 2], edges=[edge]).model_dump_json())
    (e,) = written["edges"]
    assert e["score"] == round(shares[0], SCORE_DIGITS) == e["sentences"][0]["score"]


def test_structural_and_gold_edges_have_an_empty_evidence_list():
    structural = Edge(child=3, parent=2, kind=EdgeKind.STRUCTURAL)
    assert structural.sentences == [] and [s.score for s in structural.sentences] == []
    # Written without the key, as before the field existed (gold files stay byte for byte);
    # read back, and read from a file that wrote null, it is an empty list again.
    assert "sentences" not in structural.model_dump(mode="json")
    assert Edge.model_validate({"child": 1, "parent": 0, "sentences": None}).sentences == []
    assert Edge.model_validate_json(structural.model_dump_json()) == structural
