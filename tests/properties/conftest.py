"""Settings of the property-based suite (hypothesis): modest example counts, no deadline.

The machine is shared and has 2 cores: each property runs ``MTCABENCH_HYPOTHESIS_EXAMPLES``
examples (default 100), with no per-example deadline (timings vary with load), and writes no
example database into the checkout. A failure prints the smallest input found and the seed
(``--hypothesis-seed=N`` reruns it).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "mtcabench",
    max_examples=int(os.environ.get("MTCABENCH_HYPOTHESIS_EXAMPLES", "100")),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("mtcabench")
