"""Base scorers, sentence splitting and turn shares on hand-built features (no model)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mtcabench.errors import InputError
from mtcabench.evaluate import (
    SCORERS,
    AblationSettings,
    AttnTraceSettings,
    BaseScorer,
    TraceSettings,
    make_scorer,
    register_scorer,
    turn_shares,
)
from mtcabench.evaluate.attribution._attention import PassFeatures
from mtcabench.evaluate.attribution._scorers import (
    AT2,
    AttnTrace,
    AverageAttention,
    sentence_sum,
    sentence_top_k_mean,
)
from mtcabench.evaluate.attribution._sentences import split_sentences, unit_segments


def features(token_attn, token_sentence, present, head_sentence=None):
    return PassFeatures(
        token_attn=torch.tensor(token_attn, dtype=torch.float32),
        head_sentence=None if head_sentence is None else torch.tensor(head_sentence),
        token_sentence=np.array(token_sentence), present=np.array(present),
        num_layers=1, num_heads=1)


def test_sentences_cover_the_text_without_gaps():
    text = "Flight HAT136 leaves at 8. It costs $412!\nget_x({\"a\": 1})\n\n  Done?"
    spans = split_sentences(text)
    assert [text[a:b].strip() for a, b in spans] == [
        "Flight HAT136 leaves at 8.", "It costs $412!", 'get_x({"a": 1})', "Done?"]
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    assert all(b == a2 for (_, b), (a2, _) in zip(spans, spans[1:]))
    assert split_sentences("") == [] and split_sentences("  \n ") == []
    # decimals and ids are not sentence ends
    assert len(split_sentences("It is 3.5 hours on HAT.136 today.")) == 1


def test_json_is_split_into_fields_and_items_before_sentences():
    text = ('{"order_id": "ORD-55821", "tracking_number": "1Z999AA10123456784", '
            '"items": [{"sku": "LMP-2", "qty": 1}, {"sku": "B-7", "qty": 2}], '
            '"tags": ["gift", "fragile"], "note": "Left at door. Signed by J."}')
    spans = split_sentences(text)
    assert [text[a:b] for a, b in spans] == [
        '{"order_id": "ORD-55821", ', '"tracking_number": "1Z999AA10123456784", ',
        '"items": [{"sku": "LMP-2", ', '"qty": 1}, ', '{"sku": "B-7", ', '"qty": 2}], ',
        '"tags": ["gift", ', '"fragile"], ', '"note": "Left at door. ', 'Signed by J."}']
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    assert all(b == a2 for (_, b), (a2, _) in zip(spans, spans[1:]))
    # The units refine the sentences: all in the first sentence but "Signed by J."
    assert unit_segments(text, spans) == [0] * 9 + [1]
    # Not JSON (or not an object or list): sentences and lines only.
    broken = '{"a": 1, "b": 2'
    assert [broken[a:b] for a, b in split_sentences(broken)] == [broken]
    assert len(split_sentences('"a string", "b"')) == 1
    # Escaped quotes and brackets inside strings are not structure.
    tricky = '[{"q": "say \\"}, [\\" twice"}, {"r": 2}]'
    assert [tricky[a:b] for a, b in split_sentences(tricky)] == [
        '[{"q": "say \\"}, [\\" twice"}, ', '{"r": 2}]']



def test_tool_results_are_json_by_the_one_parser():
    """Tool results were parsed with json.loads: a deeply nested one raised RecursionError
    (a traceback in trace and explain), and NaN counted as JSON, which io's policy refuses."""
    deep = "[" * 3000 + "]" * 3000
    assert split_sentences(deep) == [(0, len(deep))]
    for text in ('{"a": NaN, "b": 1}', '{"a": 1e999, "b": 1}'):
        assert split_sentences(text) == [(0, len(text))], text  # not JSON: one sentence
    fine = '{"a": 1.5, "b": 1}'
    assert [fine[a:b] for a, b in split_sentences(fine)] == ['{"a": 1.5, ', '"b": 1}']

def test_average_attention_sums_tokens_per_sentence():
    f = features([[0.1, 0.2, 0.3, 0.4], [0.4, 0.0, 0.0, 0.6]], [-1, 0, 0, 1], [True, True, False])
    got = AverageAttention().sentence_scores(f)
    assert torch.allclose(got[:, :2], torch.tensor([[0.5, 0.4], [0.0, 0.6]]))
    assert torch.isnan(got[:, 2]).all()  # a sentence not in this pass has no score


def test_attntrace_averages_the_top_k_tokens_of_each_sentence():
    f = features([[0.1, 0.5, 0.2, 0.9, 0.3, 0.0]], [0, 0, 0, 1, 1, -1], [True, True])
    assert torch.allclose(sentence_top_k_mean(f.token_attn, f, 2), torch.tensor([[0.35, 0.6]]))
    # K larger than the sentence: its mean
    assert torch.allclose(sentence_top_k_mean(f.token_attn, f, 5)[0, 1], torch.tensor(0.6))
    assert torch.allclose(AttnTrace(top_tokens=1).sentence_scores(f), torch.tensor([[0.5, 0.9]]))


def test_attntrace_subsampling_is_seeded_and_never_drops_other_sentences():
    scorer = AttnTrace(subsamples=5, keep=0.4)
    droppable = [2, 3, 5, 8, 9, 11, 12, 20, 21, 30]
    a = scorer.plan(droppable, np.random.default_rng(7))
    b = scorer.plan(droppable, np.random.default_rng(7))
    c = scorer.plan(droppable, np.random.default_rng(8))
    assert a == b and a != c
    assert len(a) == 5
    for drop in a:
        assert drop <= set(droppable) and len(drop) == 10 - int(10 * 0.4)
    assert AverageAttention().plan(droppable, np.random.default_rng(0)) == [frozenset()]


def test_at2_weights_heads_and_checks_shape():
    hs = np.zeros((1, 2, 3, 2), dtype=np.float32)  # [Q, L, H, S]
    hs[0, 0, 1, 0], hs[0, 1, 2, 1] = 0.5, 0.25
    f = features([[0.0]], [0], [True, True], head_sentence=hs)
    weights = torch.zeros(2, 3)
    weights[0, 1], weights[1, 2] = 2.0, -4.0
    assert torch.allclose(AT2(weights).sentence_scores(f), torch.tensor([[1.0, -1.0]]))
    with pytest.raises(ValueError, match="layers, heads"):
        AT2(torch.zeros(3, 3)).sentence_scores(f)


def test_a_new_scorer_is_one_class():
    @register_scorer
    class MaxAttention(BaseScorer):
        name = "test-max-attention"

        def sentence_scores(self, features):
            return sentence_top_k_mean(features.token_attn, features, 1)

    try:
        assert SCORERS.get("test-max-attention") is MaxAttention
        f = features([[0.1, 0.7, 0.2]], [0, 0, 1], [True, True])
        assert torch.allclose(MaxAttention().sentence_scores(f), torch.tensor([[0.7, 0.2]]))
    finally:
        SCORERS.unregister("test-max-attention")


def test_turn_shares_aggregate_sentences_then_normalise():
    scores = np.array([0.2, 0.1, np.nan, 0.3, -0.5, 0.9])
    turns = np.array([0, 0, 1, 2, 3, 5])
    got = turn_shares(scores, turns, before=5, aggregate="max")
    # turn 1 was never scored (no entry); turn 3 is negative (share 0); turn 5 is not before 5
    assert set(got) == {0, 2, 3}
    assert got[0] == pytest.approx(0.2 / 0.5) and got[2] == pytest.approx(0.3 / 0.5)
    assert got[3] == 0.0
    summed = turn_shares(scores, turns, before=5, aggregate="sum")
    assert summed[0] == pytest.approx(0.3 / 0.6)
    assert turn_shares(np.array([-1.0, np.nan]), np.array([0, 1]), before=3) == {0: 0.0}


def test_a_new_scorer_with_settings_is_one_class_and_from_settings():
    @register_scorer
    class Sharpened(BaseScorer):
        """Average attention raised to a power read from the settings (here: the seed)."""

        name = "test-sharpened"

        def __init__(self, power: int = 1):
            self.power = power

        @classmethod
        def from_settings(cls, settings, loaded):
            return cls(power=settings.seed)

        def sentence_scores(self, features):
            return sentence_sum(features.token_attn, features) ** self.power

        def parameters(self):
            return {"power": self.power}

    try:
        scorer = make_scorer("test-sharpened", TraceSettings(seed=2), None)
        assert isinstance(scorer, Sharpened) and scorer.parameters() == {"power": 2}
        f = features([[0.1, 0.2, 0.3]], [0, 0, 1], [True, True])
        assert torch.allclose(scorer.sentence_scores(f), torch.tensor([[0.09, 0.09]]))
    finally:
        SCORERS.unregister("test-sharpened")


def test_make_scorer_reads_the_settings_through_each_class():
    at = make_scorer("attntrace", TraceSettings(scorers={"attntrace": AttnTraceSettings(
        top_tokens=2, subsamples=4, keep=0.5)}), None)
    assert isinstance(at, AttnTrace) and at.parameters() == {
        "top_tokens": 2, "subsamples": 4, "keep": 0.5}
    assert isinstance(make_scorer("avg-attention", TraceSettings(), None), AverageAttention)
    with pytest.raises(InputError, match="unknown scorer 'nope'"):
        make_scorer("nope", TraceSettings(), None)
    with pytest.raises(InputError, match="attntrace needs"):
        AttnTraceSettings(keep=0)
    with pytest.raises(InputError, match=r"scorers\['attntrace'\] must be AttnTraceSettings"):
        make_scorer("attntrace", TraceSettings(scorers={"attntrace": AblationSettings()}), None)
