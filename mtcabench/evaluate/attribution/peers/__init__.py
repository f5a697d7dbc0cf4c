"""The attribution methods' own packages, run as base scorers on our rendering and sentences.

Each module wraps one peer package (imported lazily: the packages live in the peers' virtual
environment, ``scripts/setup_peers.sh``, not in the default set-up) as a :class:`BaseScorer`
that runs the package once per query, as a researcher runs it per attributed text: under
``--method flat`` that is the peer method itself, under ``--method tokengeist`` the peer is
Tokengeist's base scorer (one call per recursion step with ``naive``; per intermediate turn
otherwise). Every peer sees the same sources (the sentences of the turns before the query, our
partition) in the same token sequence (our chat-template rendering), and its sentence scores
become turn shares by our aggregation.

- ``peer-contextcite`` (:mod:`._contextcite`): MadryLab's ``context-cite``;
- ``peer-at2`` (:mod:`._at2pkg`): MadryLab's ``at2`` with our per-head weights;
- ``peer-flashtrace`` (:mod:`._flashtrace`): ``flashtrace``.
"""
