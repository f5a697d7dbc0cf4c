"""`peer-flashtrace`: the flashtrace package on our rendering and sentences (peers venv)."""

from __future__ import annotations

import numpy as np
import pytest

from mtcabench.evaluate import Query, TraceSettings, make_scorer, render_conversation
from mtcabench.model import Conversation, Role, Turn

pytestmark = pytest.mark.model


def test_flashtrace_scores_our_sentences_once_per_query(loaded):
    context = ("The flight AB123 leaves Paris at 9:40. It lands in Rome at 11:50. The reservation "
               "id is XK92PL. Mia Chen booked it on May 3. Her seat is 14C.")
    response = "Your reservation XK92PL is for flight AB123."
    conv = Conversation(id="ft/1", source="test", domain="test", turns=[
        Turn(index=0, role=Role.USER, content=context),
        Turn(index=1, role=Role.ASSISTANT, content=response)])
    rendered = render_conversation(conv, loaded.tokenizer)
    scorer = make_scorer("peer-flashtrace", TraceSettings(), loaded)
    scores, passes = scorer.score_conversation(loaded, rendered, [Query("a", 1, 0, len(response))],
                                               [], [frozenset()])
    user = [i for i, s in enumerate(rendered.sentences) if s.turn == 0]
    assert passes == 1 and np.isfinite(scores[0, user]).all()
    assert np.isnan(scores[0, [i for i in range(len(rendered.sentences)) if i not in user]]).all()
    # the answer repeats the reservation id and the flight: their sentences lead
    top2 = {user[i] for i in np.argsort(-scores[0, user])[:2]}
    assert top2 == {user[0], user[2]}


def test_flashtrace_multi_hop_setting_reaches_the_package(loaded):
    from mtcabench.evaluate import SCORERS

    settings_cls = SCORERS.get("peer-flashtrace").Settings
    conv = Conversation(id="ft/2", source="test", domain="test", turns=[
        Turn(index=0, role=Role.USER, content="The code is XK92PL. The gate is B12."),
        Turn(index=1, role=Role.ASSISTANT, content="Code XK92PL, gate B12.")])
    rendered = render_conversation(conv, loaded.tokenizer)
    query = [Query("a", 1, 0, len(conv.turns[1].text))]
    got = {}
    for hops in (1, 3):
        scorer = make_scorer("peer-flashtrace", TraceSettings(
            scorers={"peer-flashtrace": settings_cls(hops=hops)}), loaded)
        assert scorer.parameters()["hops"] == hops
        got[hops], passes = scorer.score_conversation(loaded, rendered, query, [], [frozenset()])
        assert passes == 1
    user = [i for i, s in enumerate(rendered.sentences) if s.turn == 0]
    assert np.isfinite(got[3][0, user]).all()
    assert not np.allclose(got[1][0, user], got[3][0, user])  # the hops change the scores
    with pytest.raises(ValueError, match="hops must be 0 to 16"):
        settings_cls(hops=-1)
