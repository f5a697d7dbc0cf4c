"""``peer-flashtrace``: the ``flashtrace`` package (FlashTrace's information-flow attribution).

The package attributes a target text to the tokens of a prompt string. Here the prompt is our
rendering up to the query (no template of its own: ``use_chat_template=False``) and the target
the query's text; its per-prompt-token scores are summed over our sentences (a token belongs
to the sentence holding its first character), one package call (one forward pass with hooks)
per query. Attention is recomputed by the package (``recompute_attention=True``), so the model's
own fast attention needs no change. ``hops`` is the package's multi-hop recursion (its
``trace(hops=...)``, default 1): the output's attribution is propagated again through what the
output reads of its own tokens; its authors' experiments run 3 (wbopan/flashtrace,
exp/exp4/run_exp.py, ``--n_hops``), sink the whole output and no reasoning span, as here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mtcabench.evaluate._settings import SettingsError
from mtcabench.evaluate.attribution._base import register_scorer, setting
from mtcabench.evaluate.attribution.peers._common import PeerScorer, import_peer


@dataclass(frozen=True)
class FlashTraceSettings:
    """The package's own setting (``--peer-flashtrace-*``)."""

    method: str = setting("flashtrace", "FlashTrace: the package's attribution method "
                          "(its trace(method=...)).")
    hops: int = setting(1, "FlashTrace: multi-hop recursions of its attribution "
                        "(its trace(hops=...)).")

    def __post_init__(self):
        if isinstance(self.hops, bool) or not isinstance(self.hops, int) or not 0 <= self.hops <= 16:
            raise SettingsError(f"peer-flashtrace hops must be 0 to 16, got {self.hops!r}")


@register_scorer
class PeerFlashTrace(PeerScorer):
    """FlashTrace through its own package, once per query (module docstring)."""

    name = "peer-flashtrace"
    summary = "FlashTrace's information-flow attribution through its own package (`flashtrace`)"
    passes_per_conversation = "one per query"
    offline_only = "it runs its package once per query"
    Settings = FlashTraceSettings

    def __init__(self, settings: FlashTraceSettings | None = None):
        import_peer("flashtrace", "flashtrace==0.1.1")
        super().__init__(settings)
        self.method, self.hops = self.settings.method, self.settings.hops

    def query_scores(self, loaded, rendered, query, src):
        import_peer("flashtrace", "flashtrace==0.1.1")
        from flashtrace import FlashTrace  # noqa: PLC0415 - the peers' venv only
        full = rendered.full
        a, _ = full.span_tokens(query.turn, query.start, query.end)
        prompt = full.text[: int(full.offsets[a, 0])]
        target = rendered.conversation.turns[query.turn].text[query.start:query.end]
        tracer = FlashTrace(loaded.model, loaded.tokenizer, recompute_attention=True,
                                       use_chat_template=False)
        result = tracer.trace(prompt=prompt, target=target, method=self.method, hops=self.hops)
        enc = loaded.tokenizer(prompt, add_special_tokens=False, return_offsets_mapping=True)
        starts = np.asarray(enc["offset_mapping"], dtype=np.int64).reshape(-1, 2)[:, 0]
        token_scores = np.asarray(result.scores, dtype=np.float64)
        n = min(len(starts), len(token_scores))
        out = np.zeros(len(src))
        for j, s in enumerate(src):
            lo, hi = full.sentence_chars[s]
            inside = (starts[:n] >= lo) & (starts[:n] < hi)
            out[j] = token_scores[:n][inside].sum()
        return out, 1

    def parameters(self) -> dict[str, Any]:
        return {"package": "flashtrace==0.1.1", "method": self.method, "hops": self.hops}
