"""The Tracer takes a message too long for the model's context without rendering or
tokenising it (a 4 MB message took 8 s of tokenising): it is past the context, answered in a
context window when asked; the turns before it are run as before."""

from __future__ import annotations

import pytest

from mtcabench.errors import InputError
from mtcabench.evaluate import Tracer

pytestmark = pytest.mark.model


def test_a_huge_message_is_refused_before_tokenising(loaded, monkeypatch):
    tracer = Tracer(loaded)
    tracer.add({"role": "user", "content": "Hello there."})
    rendered = []
    real = tracer._render_with

    def spy(turn):
        rendered.append(turn.index)
        return real(turn)

    monkeypatch.setattr(tracer, "_render_with", spy)
    tracer.add({"role": "assistant", "content": "word " * 1_200_000})
    tracer.add({"role": "assistant", "content": "Done."})  # after a past turn: past too
    assert rendered == [] and len(tracer.turns) == 3 and tracer.stats.past_turns == 2
    assert tracer.layout.num_tokens == tracer.stats.tokens < 100  # the first turn only
    # A span after 6 MB: beyond any window, refused before anything is tokenised.
    with pytest.raises(InputError, match=r"turn 2: too-long: the text up to the span is "
                                         r"6,000,0\d\d characters, at least [\d,]+ tokens, "
                                         r"more than 4 times the 8192-token limit"):
        tracer.explain(2, "Done")


def test_a_lone_surrogate_is_the_input_error_not_the_tokenizers(tiny_loaded):
    """Half of a UTF-16 pair in a message made the tokenizer raise a TypeError."""
    import mtcabench

    lone = "My order \ud83d is R-1."
    tracer = Tracer(tiny_loaded)
    tracer.add({"role": "user", "content": "Hello there."})
    with pytest.raises(InputError, match="message 1: a lone surrogate"):
        tracer.add({"role": "user", "content": lone})
    assert len(tracer.turns) == 1
    with pytest.raises(InputError, match="message 0: a lone surrogate"):
        mtcabench.explain([{"role": "user", "content": lone},
                           {"role": "assistant", "content": "Order R-1 noted."}],
                          model=tiny_loaded)
