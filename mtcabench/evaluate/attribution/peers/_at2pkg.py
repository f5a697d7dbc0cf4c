"""``peer-at2``: MadryLab's ``at2`` package (AT2) with our per-head weights, on our rendering.

An ``at2`` attribution task over our rendered conversation, cut after the query's turn: its
sources are our sentences' token ranges, its target the query's tokens; the package's
``AttentionFeatureExtractor`` (``model_type="llama"``: SmolLM2 is a Llama) and a
``LinearScoreEstimator`` holding the same weights as ``--scorer at2`` (the shipped file for the
default model, or ``--at2-weights``) score them: one forward pass (with hidden states) per
query. The package reads the attention *of the position before* each target token (the one
that predicts it); ``--scorer at2`` reads the target tokens' own rows. tests/peers measures what
that one-token shift changes and checks that, shifted alike, the two agree.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mtcabench.evaluate.attribution._base import register_scorer
from mtcabench.evaluate.attribution._scorers import AT2Settings
from mtcabench.evaluate.attribution.peers._common import PeerScorer, import_peer


def at2_scores(loaded, rendered, query, src: list[int], weights) -> np.ndarray:
    """The package's AT2 score of each source sentence ``src`` for ``query``."""
    import_peer("at2", "at2==0.0.1")
    from at2.attribution.attributors import ScoreEstimationAttributor  # noqa: PLC0415
    from at2.attribution.features import AttentionFeatureExtractor  # noqa: PLC0415
    from at2.attribution.score_estimators import LinearScoreEstimator  # noqa: PLC0415
    from at2.tasks.base import AttributionTask  # noqa: PLC0415

    full = rendered.full
    end_char = rendered.segments[query.turn][1]
    text = full.text[:end_char]
    target = full.span_tokens(query.turn, query.start, query.end)
    ranges = []
    for s in src:  # our partition: a token straddling two sentences belongs to one
        toks = full.sentence_tokens(s)
        ranges.append((int(toks.min()), int(toks.max()) + 1) if len(toks) else (0, 0))

    class OurTask(AttributionTask):
        @property
        def input_text(self):
            return text[: int(full.offsets[target[0], 0])]

        def _get_source_token_ranges(self):
            return ranges

        @property
        def target_token_range(self):
            return target

    task = OurTask(loaded.model, loaded.tokenizer)
    task._cache["text"] = text
    ids = task.get_tokens()["input_ids"]
    if list(ids) != list(full.input_ids[: len(ids)]):
        raise ValueError("at2's tokens of the rendering differ from ours")
    n_layers, n_heads = weights.shape
    extractor = AttentionFeatureExtractor(n_layers, n_heads, model_type="llama")
    estimator = LinearScoreEstimator(extractor)
    estimator.linear.weight.data[:] = weights.reshape(1, -1).to(estimator.linear.weight.dtype)
    attributor = ScoreEstimationAttributor(task, estimator)
    return np.asarray(attributor.get_attribution_scores(), dtype=np.float64)


@register_scorer
class PeerAT2(PeerScorer):
    """AT2 through its own package, once per query, with our weights (module docstring)."""

    name = "peer-at2"
    #: The same weights as ``--scorer at2``: its ``--at2-*`` options.
    Settings = AT2Settings
    settings_of = "at2"
    summary = "AT2 through its own package (`at2`), once per query, with the `--at2-weights`"
    passes_per_conversation = "one per query"
    offline_only = "it runs its package once per query"

    def __init__(self, weights, source: str = "", settings: AT2Settings | None = None):
        import_peer("at2", "at2==0.0.1")
        super().__init__(settings)
        self.weights, self.source = weights.float(), source

    @classmethod
    def from_settings(cls, settings, loaded):
        from mtcabench.evaluate.attribution._at2 import weights_for  # noqa: PLC0415 - torch

        own = cls.settings_in(settings)
        weights, label = weights_for(loaded, own.weights)
        return cls(weights, label, own)

    def query_scores(self, loaded, rendered, query, src):
        return at2_scores(loaded, rendered, query, src, self.weights), 1

    def parameters(self) -> dict[str, Any]:
        return {"package": "at2==0.0.1", "weights": self.source}
