"""The HTML page's evidence marks: only the sentences that carry weight, shaded by score."""

from __future__ import annotations

import re

from mtcabench.model import Conversation, ScoredSentence
from mtcabench.render._highlight import WEIGHT_FLOOR, evidence_marks, highlight

CONV = Conversation.model_validate({
    "id": "hand/marks", "source": "hand", "domain": "test", "turns": [
        {"index": 0, "role": "user", "content": "Hi! My order is ORD-1."},
        {"index": 1, "role": "assistant", "content": "It shipped."}]})


def test_weak_sentences_are_not_painted_and_the_rest_are_graded():
    hi, order = ScoredSentence(start=0, end=3, score=0.05), ScoredSentence(start=4, end=22,
                                                                          score=0.6)
    marks = evidence_marks({(1, 0): [order, hi]}, CONV)
    # "Hi!" scores under WEIGHT_FLOOR of the edge's best: no mark.
    assert hi.score < WEIGHT_FLOOR * order.score
    assert [(a, b) for a, b, _, _ in marks[0]] == [(4, 22)]
    assert marks[0][0][3] == 1.0  # the best score on the page: full weight
    page = highlight(CONV.turns[0].text, marks[0])
    assert page.count("<mark") == 1 and "score 0.6" in page


def test_shade_follows_the_score_across_edges():
    strong = ScoredSentence(start=4, end=22, score=0.8)
    weak = ScoredSentence(start=0, end=3, score=0.2)
    marks = evidence_marks({(1, 0): [strong], (2, 0): [weak]}, CONV)
    weights = {(a, b): w for a, b, _, w in marks[0]}
    assert weights == {(4, 22): 1.0, (0, 3): 0.25}
    html = highlight(CONV.turns[0].text, marks[0])
    alphas = [float(x) for x in re.findall(r"rgba\(46,139,87,([0-9.]+)\)", html)]
    assert alphas[0] < alphas[1]  # "Hi!" (weak, first in the text) paler than the order
