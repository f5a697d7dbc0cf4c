"""``at2-learn`` as a function: AT2's per-head weights learned on a benchmark's conversations.

The benchmark gives the ablation data (its spans and the assistant turns of its
conversations, conversations with spans first); the recipe itself is
:func:`mtcabench.evaluate.attribution._at2.learn_weights`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from mtcabench.benchmark import load_benchmark
from mtcabench.evaluate._settings import (
    AT2_LEARN,
    DEFAULT_DEVICE,
    MAX_ABLATION_PASSES,
    TraceSettings,
)
from mtcabench.evaluate.attribution._loading import DEFAULT_MODEL
from mtcabench.evaluate.runners._run import input_files
from mtcabench.errors import InputError
from mtcabench.io import check_outputs_are_not_inputs, seed_problem

if TYPE_CHECKING:
    from mtcabench.evaluate.attribution._at2 import At2Weights


def learn_at2_from_benchmark(
    benchmark: str, out: Path, *, model: str = DEFAULT_MODEL, conversations: int | None = None,
    masks: int = AT2_LEARN.masks, keep: float = AT2_LEARN.keep,
    iterations: int = AT2_LEARN.iterations, heldout: float = AT2_LEARN.heldout,
    max_tokens: int | None = TraceSettings().max_tokens, seed: int = AT2_LEARN.seed,
    device: str = DEFAULT_DEVICE,
) -> At2Weights:
    """Learn the weights for ``model`` from (at most ``conversations``) conversations of the
    benchmark and write them to ``out``; checked before the model loads."""
    if (why := seed_problem(seed)) is not None:
        raise InputError(f"--{why}")
    if not 2 <= masks <= MAX_ABLATION_PASSES or not 0 < keep < 1:
        raise InputError(f"--masks must be 2 to {MAX_ABLATION_PASSES} and --keep between 0 and "
                         f"1, got {masks} and {keep}")
    if not 0 <= heldout < 1 or iterations < 1:
        raise InputError(f"--heldout must be in [0, 1) and --iterations at least 1, got "
                         f"{heldout} and {iterations}")
    bench = load_benchmark(benchmark)
    check_outputs_are_not_inputs(input_files(bench), [out])
    by_conv = bench.spans_by_conversation()
    ids = list(by_conv) + [c for c in bench.conversations if c not in by_conv]
    convs = [bench.conversations[c] for c in ids[:conversations]]
    from mtcabench.evaluate.attribution._at2 import learn_weights  # imports torch
    from mtcabench.evaluate.attribution._loading import load_model

    return learn_weights(load_model(model, device=device), convs, by_conv, out, masks=masks,
                         keep=keep, iterations=iterations, heldout=heldout, seed=seed,
                         max_tokens=max_tokens)
