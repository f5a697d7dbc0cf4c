"""`--scorer ablation` against MadryLab's context-cite package, with the same masks (peers venv)."""

from __future__ import annotations

import numpy as np
import pytest

from mtcabench.evaluate import (
    AblationSettings,
    Attributor,
    Query,
    TraceSettings,
    make_scorer,
    render_conversation,
    trace_conversation,
)
from mtcabench.evaluate.attribution._ablation import ablation_outputs, lasso, surrogate_scores
from mtcabench.model import BenchmarkSpan, Conversation, Role, TargetSpan, Turn

pytestmark = pytest.mark.model

CONTEXT = ("The flight AB123 leaves Paris at 9:40. It lands in Rome at 11:50. The reservation id "
           "is XK92PL. Mia Chen booked it on May 3. Her seat is 14C.\nThe fare was 240 euros. "
           "Baggage is not included.")
RESPONSE = "Your reservation XK92PL is for flight AB123, leaving Paris at 9:40."


def test_our_lasso_is_context_cites_solver():
    from context_cite.solver import LassoRegression

    rng = np.random.default_rng(3)
    masks = rng.random((32, 20)) < 0.5
    outputs = masks[:, :4] @ np.array([6.0, -2.0, 3.0, 0.5]) + rng.normal(scale=0.3, size=32)
    want, want_b = LassoRegression(0.01).fit(masks, outputs, 7)
    got, got_b = lasso(masks, outputs / 7, 0.01)
    # scikit-learn stops at its own tolerance (1e-4 on the duality gap); ours is tighter
    assert np.abs(got * 7 - want).max() < 1e-3 * np.abs(want).max()
    assert abs(got_b * 7 - want_b) < 1e-3 * np.abs(want).max()


def test_ablation_matches_context_cite_with_the_same_masks(loaded):
    from context_cite import ContextCiter
    from context_cite.context_partitioner import BaseContextPartitioner
    from context_cite.utils import aggregate_logit_probs

    conv = Conversation(id="cc/1", source="test", domain="test", turns=[
        Turn(index=0, role=Role.USER, content=CONTEXT),
        Turn(index=1, role=Role.ASSISTANT, content=RESPONSE)])
    rendered = render_conversation(conv, loaded.tokenizer)
    user = [i for i, s in enumerate(rendered.sentences) if s.turn == 0]
    ranges = [(rendered.sentences[i].start, rendered.sentences[i].end) for i in user]

    class OurSentences(BaseContextPartitioner):
        """Our sentences; an ablated context cuts them out exactly as our layouts do."""

        @property
        def num_sources(self):
            return len(ranges)

        def split_context(self):
            pass

        def get_source(self, i):
            return self.context[slice(*ranges[i])]

        def get_context(self, mask=None):
            out, pos = [], 0
            for (a, b), kept in zip(ranges, np.ones(len(ranges), bool) if mask is None else mask):
                if not kept:
                    out.append(self.context[pos:a])
                    pos = b
            return "".join([*out, self.context[pos:]])

    # the package's own prompt (template "{context}", one user message) and its own masks
    cc = ContextCiter(loaded.model, loaded.tokenizer, CONTEXT, "", prompt_template="{context}",
                      partitioner=OurSentences(CONTEXT), num_ablations=8)
    _, prompt = cc._get_prompt_ids(return_prompt=True)
    cc._cache["output"] = prompt + RESPONSE  # the response is given, not generated
    n_prompt = len(cc._get_prompt_ids())
    assert cc._get_prompt_ids() + cc._response_ids == rendered.full.input_ids[
        : n_prompt + len(cc._response_ids)]  # the same tokens as our rendering
    want = cc.get_attributions(verbose=False)
    drops = [frozenset(s for s, kept in zip(user, m) if not kept) for m in cc._masks]
    query = Query("answer", 1, 0, len(RESPONSE))
    data = ablation_outputs(loaded, rendered, [query], user, drops)
    # the same outputs per mask (float32 logits; ours from a cached prefix)
    assert np.abs(data.outputs[0] - aggregate_logit_probs(cc._logit_probs)).max() < 1e-3
    got = surrogate_scores(data, rendered, [query], 0.01)[0, user]
    assert np.abs(got - want).max() < 2e-3 * np.abs(want).max()
    assert np.argmax(got) == np.argmax(want)


def test_the_peer_scorer_runs_the_package_as_a_flat_method(loaded, sample_conversations):
    conv = min(sample_conversations, key=lambda c: sum(len(t.text) for t in c.turns))
    turn = max(t.index for t in conv.turns if t.role is Role.ASSISTANT and t.text)
    text = conv.turns[turn].text
    span = TargetSpan(turn=turn, start=0, end=len(text), text=text)
    bspan = BenchmarkSpan.model_construct(id="s", conversation_id=conv.id, span=span)
    settings = TraceSettings(scorers={"ablation": AblationSettings(passes=2)})
    scorer = make_scorer("peer-contextcite", settings, loaded)
    res = trace_conversation(Attributor(loaded, scorer), conv, [bspan], ["flat"], settings)
    assert res.forward_passes == 2  # the package's passes, per span
    edges = res.entries["flat"][0].edges
    assert all(e.child == turn and e.parent < turn for e in edges)


def test_turn_level_ablation_matches_context_cite_on_a_multi_turn_conversation(loaded):
    """Our turn-level design (`--scorer ablation`) on a conversation of five turns: the
    package, given our rendering of each ablated conversation as its prompt and its own
    masks over the four turns before the answer, computes the same outputs per mask and,
    with its own solver, the same weight per turn."""
    from context_cite import ContextCiter
    from context_cite.context_partitioner import BaseContextPartitioner
    from context_cite.utils import aggregate_logit_probs

    from mtcabench.evaluate.attribution._ablation import turn_columns

    conv = Conversation(id="cc/turns", source="test", domain="test", turns=[
        Turn(index=0, role=Role.SYSTEM, content="You are the agent of an airline. Be brief."),
        Turn(index=1, role=Role.USER, content=CONTEXT),
        Turn(index=2, role=Role.ASSISTANT, content="Thank you. What would you like to know?"),
        Turn(index=3, role=Role.USER, content="Which flight is it, and when does it leave?"),
        Turn(index=4, role=Role.ASSISTANT, content=RESPONSE)])
    rendered = render_conversation(conv, loaded.tokenizer)
    full = rendered.full
    droppable = [i for i, s in enumerate(rendered.sentences) if s.turn < 4]
    columns = turn_columns(rendered, droppable)
    assert len(columns) == 4  # one source per turn, the assistant's turn among them

    def drop_of(mask) -> frozenset[int]:
        return frozenset(droppable[j] for c, kept in zip(columns, mask) if not kept for j in c)

    answer_start, _ = full.span_tokens(4, 0, len(RESPONSE))
    answer_end = full.chars_of(4, 0, len(RESPONSE))[1]

    class Turns(BaseContextPartitioner):
        """The four turns before the answer as the sources (the prompt is ours, below)."""

        @property
        def num_sources(self):
            return len(columns)

        def split_context(self):
            pass

        def get_source(self, i):
            return conv.turns[i].text

        def get_context(self, mask=None):
            return ""

    class OurConversation(ContextCiter):
        """The package on our rendering: the prompt of a mask is the ablated conversation up
        to the answer's first token, as our passes feed it."""

        def _get_prompt_ids(self, mask=None, return_prompt=False):
            layout = rendered.layout(drop_of(np.ones(len(columns), bool) if mask is None
                                             else mask))
            start = layout.span_tokens(4, 0, len(RESPONSE))[0]
            ids = list(layout.input_ids[:start])
            return (ids, layout.text[: layout.offsets[start, 0]]) if return_prompt else ids

    cc = OurConversation(loaded.model, loaded.tokenizer, "", "", partitioner=Turns(""),
                         num_ablations=16)
    cc._cache["output"] = full.text[:answer_end]  # the answer is given, not generated
    assert cc._get_prompt_ids() + cc._response_ids == full.input_ids[
        : answer_start + len(cc._response_ids)]
    want = cc.get_attributions(verbose=False)
    drops = [drop_of(m) for m in cc._masks]
    query = Query("answer", 4, 0, len(RESPONSE))
    data = ablation_outputs(loaded, rendered, [query], droppable, drops)
    assert np.abs(data.outputs[0] - aggregate_logit_probs(cc._logit_probs)).max() < 1e-3
    got = surrogate_scores(data, rendered, [query], 0.01, columns)[0]
    per_turn = np.array([got[droppable[c[0]]] for c in columns])
    for c in columns:  # every sentence of a turn carries the turn's weight
        assert np.all(got[[droppable[j] for j in c]] == got[droppable[c[0]]])
    assert np.abs(per_turn - want).max() < 2e-3 * max(np.abs(want).max(), 1e-9)
    assert np.argmax(per_turn) == np.argmax(want)
