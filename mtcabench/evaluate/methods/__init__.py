"""The evaluator's methods room: from turn shares to provenance graphs.

The registry of methods (:mod:`._methods`: Tokengeist and flat, over any base scorer), the
backward search itself (:mod:`._tokengeist`, a pure function of a turn-share function), the
model-free floors (:mod:`._baselines`) and the attribution of one conversation that ``trace``
and ``explain`` share (:mod:`._conversation`). A new method is one module here with its
``@register_method`` class, listed in ``_methods.BUILT_IN`` (name -> module, imported on
first lookup).
"""
