"""``peer-contextcite``: MadryLab's ``context-cite`` package (ContextCite) on our rendering.

The package builds its prompt from a template and a context string; here its prompt is our
rendering instead (``ContextCiter._get_prompt_ids`` gives the ablated conversation's tokens up
to the query, with the left-out sentences cut as :meth:`RenderedConversation.layout` cuts them),
its sources are our sentences (a partitioner over them) and the response is the query's tokens.
Its own code then draws the masks, runs the ablations and fits its LASSO: ``passes`` forward
passes per query, none shared. ``mtcabench --scorer ablation`` is the same estimator with the
passes shared by the conversation's queries (tests/peers checks the two agree).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mtcabench.evaluate.attribution._ablation import AblationSettings
from mtcabench.evaluate.attribution._base import register_scorer
from mtcabench.evaluate.attribution.peers._common import PeerScorer, import_peer


def context_citer(loaded, rendered, query, src: list[int], *, passes: int, keep: float,
                  alpha: float):
    """A ``ContextCiter`` over our rendering: sources ``src`` (sentence ids), the query's tokens
    as the response."""
    cc = import_peer("context_cite", "context-cite==0.0.4")
    from context_cite.context_partitioner import BaseContextPartitioner  # noqa: PLC0415
    from context_cite.solver import LassoRegression  # noqa: PLC0415

    full = rendered.full
    sentences = rendered.sentences
    texts = [rendered.conversation.turns[sentences[s].turn].text[sentences[s].start:
                                                                   sentences[s].end] for s in src]

    class OurSentences(BaseContextPartitioner):
        @property
        def num_sources(self) -> int:
            return len(src)

        def split_context(self) -> None:
            pass

        def get_source(self, index: int) -> str:
            return texts[index]

        def get_context(self, mask=None) -> str:  # the package only asks for the prompt ids
            return self.context

    a, b = full.span_tokens(query.turn, query.start, query.end)
    response = list(full.input_ids[a:b])

    class OurCiter(cc.ContextCiter):
        def _get_prompt_ids(self, mask=None, return_prompt=False):
            drop = set() if mask is None else {s for s, kept in zip(src, mask, strict=True)
                                               if not kept}
            layout = rendered.layout(drop)
            start = layout.span_tokens(query.turn, query.start, query.end)[0]
            ids = list(layout.input_ids[:start])
            return (ids, layout.text) if return_prompt else ids

        @property
        def _response_ids(self):
            return response

    citer = OurCiter(loaded.model, loaded.tokenizer, "", "", num_ablations=passes,
                     ablation_keep_prob=keep, solver=LassoRegression(alpha),
                     partitioner=OurSentences(""))
    return citer


@register_scorer
class PeerContextCite(PeerScorer):
    """ContextCite through its own package, once per query (module docstring)."""

    name = "peer-contextcite"
    #: The same budget as ``--scorer ablation``: its ``--ablation-*`` options.
    Settings = AblationSettings
    settings_of = "ablation"
    summary = ("ContextCite through its own package (`context-cite`), once per query, with "
               "the `--ablation-*` budget")
    passes_per_conversation = "passes per query"
    offline_only = "it runs its package's ablations per query"

    def __init__(self, settings: AblationSettings | None = None, **fields: Any):
        import_peer("context_cite", "context-cite==0.0.4")
        super().__init__(AblationSettings(**fields) if settings is None else settings)
        self.passes, self.keep, self.alpha = (self.settings.passes, self.settings.keep,
                                              self.settings.alpha)

    def query_scores(self, loaded, rendered, query, src):
        citer = context_citer(loaded, rendered, query, src, passes=self.passes, keep=self.keep,
                              alpha=self.alpha)
        weights, _ = citer._get_attributions_for_ids_range(0, len(citer._response_ids))
        return np.asarray(weights, dtype=np.float64), self.passes

    def parameters(self) -> dict[str, Any]:
        return {"package": "context-cite==0.0.4", "passes": self.passes, "keep": self.keep,
                "alpha": self.alpha}
