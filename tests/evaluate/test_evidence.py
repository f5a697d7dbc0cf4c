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
SENTENCES = [Sentence(0, 0, 10), Sentence(0, 10, 22),
             Sentence(1, 0, 4), Sentence(1, 4, 13), Sentence(1, 13, 30), Sentence(1, 30, 44),
             Sentence(1, 44, 45)]


def test_best_sentences_rank_scale_and_trim():
    scores = np.array([0.1, 0.3, np.nan, -0.2, 0.6, 0.2, 0.0])
    turns = np.array([s.turn for s in SENTENCES])
    best = best_sentences(scores, SENTENCES, TEXTS, before=2, k=2)
    shares = turn_shares(scores, turns, 2)
    # Best first; with the max aggregate the best sentence's score is the turn's share.
    assert [TEXTS[1][x.start:x.end] for x in best[1]] == ['"gate": "K41",', '"seat": "17C"']
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
