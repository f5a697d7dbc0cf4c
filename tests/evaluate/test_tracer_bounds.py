"""The Tracer refuses a message too long for the model's context before rendering or
tokenising it, as explain does (a 4 MB message took 8 s of tokenising to be refused), and
keeps the turns before it."""

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
    with pytest.raises(InputError, match="at least .* tokens, beyond the"):
        tracer.add({"role": "assistant", "content": "word " * 800_000})
    assert rendered == [] and len(tracer.turns) == 1


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
