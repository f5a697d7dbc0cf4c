"""The evaluator's online room: tracing inside an agent loop.

:class:`~mtcabench.evaluate.online._tracer.Tracer` keeps the model's key/value cache between
turns (:mod:`._state` holds what it keeps) and answers any span without another forward
pass; :mod:`._scorers` says how a head-weighted base scorer runs online.
"""
