"""AT2 weights: learning from ablations on our conversations, the file, and its use in trace."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mtcabench.benchmark import load_benchmark
from mtcabench.errors import InputError
from mtcabench.evaluate import AT2Settings, TraceSettings, learn_at2_weights, load_weights, trace_benchmark
from mtcabench.evaluate.attribution._at2 import PACKAGED_WEIGHTS, fit_weights, mean_correlation, weights_for

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def learned(loaded, sample_benchmark, tmp_path_factory):
    bench = load_benchmark(sample_benchmark)
    out = tmp_path_factory.mktemp("at2") / "weights.json"
    result = learn_at2_weights(loaded, list(bench.conversations.values()), bench.spans_by_conversation(),
                               out, masks=6, iterations=200, heldout=0.34, progress=False)
    return out, result


def test_learned_weights_fit_the_ablations_better_than_uniform(learned, sample_benchmark):
    out, _ = learned
    w = load_weights(out)
    assert (w.num_layers, w.num_heads) == (30, 9) and w.model == "smollm2-135m-instruct"
    assert np.abs(np.array(w.weights)).sum() == pytest.approx(1.0)
    t = w.training
    assert t["conversations"] == 2 and t["heldout_conversations"] == 1 and t["masks"] == 6
    # which conversations, by id: a study checks that none is one it tests on
    assert len(t["conversation_ids"]) == 2 and len(t["heldout_conversation_ids"]) == 1
    assert sorted(t["conversation_ids"] + t["heldout_conversation_ids"]) == sorted(
        load_benchmark(sample_benchmark).conversations)
    assert t["queries"] > 5
    assert t["train_correlation_learned"] > t["train_correlation_uniform"]
    assert t["heldout_correlation_learned"] is not None


def test_fit_recovers_a_planted_head(tmp_path):
    rng = np.random.default_rng(0)
    data = []
    for _ in range(20):
        x = rng.normal(size=(16, 6))
        data.append((x, 3.0 * x[:, 4] + 0.01 * rng.normal(size=16)))
    w = fit_weights(data, 6, iterations=400)
    assert np.argmax(np.abs(w)) == 4 and w[4] > 0.8
    assert mean_correlation(w, data) > 0.99 > mean_correlation(np.full(6, 1 / 6), data)


def test_trace_with_a_weights_file(loaded, learned, sample_benchmark, tmp_path):
    out = tmp_path / "at2.jsonl"
    trace_benchmark(sample_benchmark, {"flat": out}, model=loaded, scorer="at2",
                    settings=TraceSettings(scorers={"at2": AT2Settings(weights=str(learned[0]))}), progress=False)
    header = json.loads(out.read_text().splitlines()[0])
    assert header["parameters"]["scorer_parameters"]["weights"].startswith("weights.json@sha256:")


def test_the_default_model_has_shipped_weights(loaded):
    path = PACKAGED_WEIGHTS["smollm2-135m-instruct"]
    weights, label = weights_for(loaded, None)
    assert weights.shape == (30, 9) and label.startswith(path.name)
    assert load_weights(path).training["queries"] > 0


@pytest.mark.parametrize("content, message", [
    (None, "no such AT2 weights file"),
    ("{not json", "not JSON"),
    (json.dumps({"kind": "at2-weights", "model": "m", "num_layers": 2, "num_heads": 3,
                 "weights": [[0.1] * 3] * 2}), "2 layers x 3 heads"),
    (json.dumps({"kind": "at2-weights", "model": "m", "num_layers": 2, "num_heads": 3,
                 "weights": [[0.1] * 3]}), "weights are"),
    (json.dumps({"kind": "submission", "method": "flat"}), "expected 'at2-weights'"),
])
def test_bad_weights_files_are_named(loaded, tmp_path, content, message):
    path = tmp_path / "w.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(InputError, match=message) as err:
        weights_for(loaded, path)
    assert str(path) in err.value.message


def test_a_deeply_nested_weights_file_is_one_line(tmp_path):
    # Read with io's parser: a depth limit and the line, not a RecursionError.
    path = tmp_path / "w.json"
    path.write_text('{"weights":\n' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(InputError, match=r"w\.json:2: not JSON \(nested more than 200 levels"):
        load_weights(path)
