"""The evaluator's runners room: a whole benchmark, traced and written as submissions.

What every runner shares (:mod:`._run`: the run check, headers, the finish), the local runner
with resume and shards (:mod:`._trace`), joining shards (:mod:`._merge`), Ray Data
(:mod:`._ray`), learning AT2's weights on a benchmark (:mod:`._learn`) and trace-only
benchmarks for timing (:mod:`._smoke`).
"""
