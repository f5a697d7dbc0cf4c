"""`mtcabench explain`, `mtcabench.explain` and `mtcabench.Tracer` where the eval extra is not
installed (what `pip install mtcabench` gives): a model-free method works, and anything that
needs the model is one line naming the extra, never `No module named 'torch'` alone."""

from __future__ import annotations

from pathlib import Path

from mtcabench.errors import ExitCode
from tests.support.no_extra import cli_without_eval_extra, run_without_eval_extra

REFUND = Path(__file__).parents[1] / "transcripts" / "examples" / "refund_agent.json"
NAMED = "needs torch, which is not installed: pip install 'mtcabench[eval]'"


def test_explain_names_the_extra_with_and_without_out(tmp_path):
    for extra in ([], ["--out", str(tmp_path / "out")]):
        res = cli_without_eval_extra("explain", str(REFUND), *extra)
        assert res.returncode == ExitCode.BAD_INPUT, res.stderr[-2000:]
        lines = [x for x in (res.stdout + res.stderr).splitlines() if x.strip()]
        assert lines == [f"error: the evaluator {NAMED}"], lines
    assert not (tmp_path / "out").exists()
    res = cli_without_eval_extra("explain", str(REFUND), "--method", "recency")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "recency" in res.stdout and "refund_agent: 1 span(s), 0 tokens" in res.stderr


def test_the_python_api_names_the_extra():
    res = run_without_eval_extra('''
import mtcabench
messages = [{"role": "user", "content": "My order is R-1."},
            {"role": "assistant", "content": "Order R-1 noted."}]
print(mtcabench.explain(messages, method="recency"))
for what in ("mtcabench.Tracer", "mtcabench.explain(messages)"):
    try:
        eval(what)
    except ImportError as exc:  # as libraries raise for a missing optional dependency
        print(what, type(exc).__name__, exc.name, exc, sep=" | ")
''')
    assert res.returncode == 0, res.stderr[-2000:]
    assert "└── turn 0 user  1.00  My order is R-1." in res.stdout
    for what in ("mtcabench.Tracer", "mtcabench.explain(messages)"):
        assert f"{what} | MissingExtra | torch | the evaluator {NAMED}" in res.stdout, \
            res.stdout
