"""The evaluator's option values are checked before any work, each where it is declared (the
run's seed in TraceSettings, a scorer's own options in its settings dataclass): a negative or
huge seed, ablation passes past the stated bound, a NaN or infinite ablation alpha, each one
line with exit code 3 (no model loaded, no benchmark read, nothing written)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode
from mtcabench.evaluate import AblationSettings, AT2Settings, AttnTraceSettings, TraceSettings
from mtcabench.evaluate._settings import MAX_ABLATION_PASSES, SettingsError
from mtcabench.io import MAX_SEED

runner = CliRunner()


@pytest.mark.parametrize("settings, field, value, words", [
    (TraceSettings, "seed", -1, "seed must be 0 or more"),
    (TraceSettings, "seed", MAX_SEED + 1, "seed must be"),
    (AblationSettings, "passes", MAX_ABLATION_PASSES + 1, "ablation passes must be"),
    (AblationSettings, "passes", 100_000_000, "ablation passes must be"),
    (AblationSettings, "passes", 1, "ablation passes must be"),
    (AblationSettings, "alpha", math.nan, "ablation alpha"),
    (AblationSettings, "alpha", math.inf, "ablation alpha"),
    (AblationSettings, "alpha", -0.1, "ablation alpha"),
    (AblationSettings, "keep", math.nan, "ablation keep"),
    (AttnTraceSettings, "subsamples", 100_000, "AttnTrace subsamples"),
    (AT2Settings, "weights", "", "AT2 weights: an empty path"),
    (AT2Settings, "weights", "  ", "AT2 weights: an empty path"),
])
def test_out_of_range_settings_are_refused(settings, field, value, words):
    with pytest.raises(SettingsError, match=words):
        settings(**{field: value})


def test_settings_in_range_are_kept():
    s = TraceSettings(seed=MAX_SEED, scorers={"ablation": AblationSettings(
        passes=MAX_ABLATION_PASSES, alpha=0.0)})
    a = s.scorer_settings("ablation", AblationSettings)
    assert (s.seed, a.passes, a.alpha) == (MAX_SEED, MAX_ABLATION_PASSES, 0.0)


@pytest.mark.parametrize("args, words", [
    (["--seed", "-1"], "seed must be"),
    (["--ablation-passes", "100000000"], "ablation passes must be"),
    (["--ablation-alpha", "nan"], "ablation alpha"),
    (["--ablation-alpha", "inf"], "ablation alpha"),
    (["--at2-weights", ""], "AT2 weights: an empty path"),
    (["--at2-weights", "no-such-weights.json"], "--at2-weights: no-such-weights.json: no such file"),
])
def test_trace_refuses_bad_option_values_before_any_work(tmp_path, args, words):
    res = runner.invoke(app, ["trace", "-b", str(tmp_path / "no-benchmark"), "--method",
                              "recency", "--out", str(tmp_path / "o.jsonl"), *args])
    assert res.exit_code == ExitCode.BAD_INPUT, res.output
    assert words in res.output and "Traceback" not in res.output
    assert not (tmp_path / "o.jsonl").exists()


@pytest.mark.parametrize("weights, words", [
    ("", "AT2 weights: an empty path"),  # was read as the folder "." once the model had loaded
    (".", "--at2-weights: .: is a folder, expected a file"),
])
def test_explain_refuses_an_at2_weights_path_before_the_model_loads(monkeypatch, weights, words):
    from mtcabench.evaluate.attribution import _loading

    def no_model(*args, **kwargs):
        raise AssertionError("the model was loaded before the weights path was checked")

    monkeypatch.setattr(_loading, "load_model", no_model)
    refund = Path(__file__).parents[1] / "transcripts" / "examples" / "refund_agent.json"
    res = runner.invoke(app, ["explain", str(refund), "--scorer", "at2", "--at2-weights",
                              weights])
    assert res.exit_code == ExitCode.BAD_INPUT, res.output
    lines = [x for x in res.output.splitlines() if x.strip()]
    assert len(lines) == 1 and words in lines[0], res.output


def test_score_refuses_a_negative_seed(tmp_path):
    res = runner.invoke(app, ["score", str(tmp_path / "s.jsonl"), "-b", str(tmp_path),
                              "--seed", "-1"])
    assert res.exit_code == ExitCode.BAD_INPUT, res.output
    assert "seed must be" in res.output and "Traceback" not in res.output
