"""The evaluator's attribution room: from a causal LM to turn shares.

A model (:mod:`._loading`), a conversation rendered into its tokens and sentences
(:mod:`._render`, :mod:`._sentences`), the attention features of one forward pass
(:mod:`._attention`), the base scorers that turn them into sentence scores (:mod:`._base`: the
interface and the registry; :mod:`._scorers`: average attention, AttnTrace, AT2; :mod:`._at2`:
AT2's per-head weights) and the engine that runs the passes and aggregates sentences into turn
shares (:mod:`._engine`). A new base scorer is one module here (the class and its
settings dataclass) plus its line in ``_base.SCORERS``' lazy table. Outside ``mtcabench.evaluate``, use the names that
``mtcabench.evaluate`` exports, never these private modules.
"""
