"""The evaluator's runners room: a whole benchmark, traced and written as submissions.

What every runner shares (:mod:`._run`: the run check, headers, the finish), the local runner
with resume and shards (:mod:`._trace`), joining shards (:mod:`._merge`), Ray Data
(:mod:`._ray`) and learning AT2's weights on a benchmark (:mod:`._learn`). Trace-only
benchmarks for timing are test support (tests/support/smoke.py), not part of the package.
"""
