"""A new base scorer or method is one new file plus its registration (docs/evaluate.md).

Each test writes the new module into a temporary package, registers it the documented way, and
checks, in a fresh interpreter, that the command line lists it and a run uses it; nothing in
mtcabench/ is edited.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import mtcabench

ROOT = Path(mtcabench.__file__).resolve().parent.parent


def run_python(code: str, extra_path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), str(extra_path), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=env, timeout=300)


def test_a_new_scorer_module_is_listed_and_built_without_importing_it_first(tmp_path):
    (tmp_path / "my_scorers.py").write_text(textwrap.dedent("""
        from mtcabench.evaluate import BaseScorer, register_scorer

        @register_scorer
        class Uniform(BaseScorer):
            name = "uniform"

            def sentence_scores(self, features):
                import torch
                return torch.ones(len(features.token_attn), len(features.present))
    """))
    out = run_python("""
        import sys
        from mtcabench.evaluate.attribution import _base
        _base.SCORERS.lazy["uniform"] = "my_scorers"          # the registration line
        from mtcabench.evaluate import TraceSettings, make_scorer, scorer_names
        assert "uniform" in scorer_names()
        assert "my_scorers" not in sys.modules, "listing the scorers imported the module"
        from typer.testing import CliRunner
        from mtcabench.cli import app
        help_text = CliRunner().invoke(app, ["trace", "--help"], terminal_width=400).output
        assert "uniform" in help_text, help_text
        # the command line read its settings (none) from the module, without torch
        assert "my_scorers" in sys.modules and "torch" not in sys.modules
        scorer = make_scorer("uniform", TraceSettings(), None)
        assert type(scorer).__name__ == "Uniform"
        print("ok")
    """, tmp_path)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


@pytest.mark.slow  # a few seconds: a fresh interpreter or a whole run
def test_a_new_method_is_listed_and_traced(tmp_path, sample_benchmark):
    (tmp_path / "my_methods.py").write_text(textwrap.dedent("""
        from mtcabench.evaluate import Method, register_method, target_graph
        from mtcabench.model import Role

        @register_method
        class LatestUser(Method):
            name = "latest-user"
            uses_model = False

            def graph(self, conversation, span, shares, search):
                user = max((t.index for t in conversation.turns[: span.turn]
                            if t.role is Role.USER), default=None)
                return target_graph(span.turn, [] if user is None else [user])
    """))
    sub = tmp_path / "latest.jsonl"
    out = run_python(f"""
        import my_methods                                      # the registration
        from typer.testing import CliRunner
        from mtcabench.cli import app
        runner = CliRunner()
        help_text = runner.invoke(app, ["explain", "--help"], terminal_width=400).output
        assert "latest-user" in help_text, help_text
        res = runner.invoke(app, ["trace", "-b", {str(sample_benchmark)!r}, "--method",
                                  "latest-user", "-o", {str(sub)!r}])
        assert res.exit_code == 0, res.output
        print("ok")
    """, tmp_path)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
    lines = sub.read_text().splitlines()
    assert '"method":"latest-user"' in lines[0].replace(" ", "")
    assert len(lines) > 1 and all('"edges"' in x for x in lines[1:])
