"""The Ray Data runner on a local Ray runtime (CPU): same submission as the local run."""

from __future__ import annotations

import json

import pytest

pytestmark = [pytest.mark.model, pytest.mark.slow]


@pytest.fixture(scope="module")
def local_ray():
    import ray  # the `ray` extra; a missing install fails here, loudly

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def test_ray_run_equals_local_run(local_ray, loaded, sample_benchmark, tmp_path):
    from mtcabench.evaluate import SearchSettings, TraceSettings, trace_benchmark, trace_with_ray

    settings = TraceSettings(search=SearchSettings(top_k=2))
    ray_out = {m: tmp_path / f"ray-{m}.jsonl" for m in ("tokengeist", "flat")}
    report = trace_with_ray(sample_benchmark, ray_out, settings=settings, workers=1,
                            cpus_per_worker=1)
    local_out = {m: tmp_path / f"local-{m}.jsonl" for m in ray_out}
    trace_benchmark(sample_benchmark, local_out, model=loaded, settings=settings, progress=False)
    # one pass per conversation, and the sink probe once in the one worker (one policy)
    assert report.conversations == 3 and report.forward_passes == 4
    for m in ray_out:
        ray_lines = [json.loads(x) for x in ray_out[m].read_text().splitlines()]
        local_lines = [json.loads(x) for x in local_out[m].read_text().splitlines()]
        assert ray_lines[1:] == local_lines[1:]
        assert ray_lines[0]["notes"]["runner"] == "ray"
        for key in ("method", "scorer", "model", "parameters", "benchmark"):
            assert ray_lines[0][key] == local_lines[0][key]
