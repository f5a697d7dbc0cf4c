"""The lock file setup.sh installs from is in step with what pyproject.toml declares.

A dependency added to pyproject.toml without rerunning scripts/lock.sh is missing from every
fresh environment while a developer's older .venv still has it (hypothesis once reached CI
this way). scripts/pins.py --check-lock, run by setup.sh first, catches it.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _pins(pyproject: Path, lock: Path):
    spec = importlib.util.spec_from_file_location("pins_under_test", ROOT / "scripts" / "pins.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.PYPROJECT, module.LOCK = pyproject, lock
    return module


def test_the_committed_lock_holds_every_declared_dependency():
    pins = _pins(ROOT / "pyproject.toml", ROOT / "scripts" / "locks" / "project.txt")
    assert pins.lock_problems() == []


def test_a_missing_or_differently_pinned_dependency_is_named(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        '[project]\nname = "mtcabench"\ndependencies = ["typer>=0.9", "rich"]\n'
        '[project.optional-dependencies]\ntest = ["hypothesis==6.170.15", "torch==2.13.0"]\n',
        encoding="utf-8")
    lock = tmp_path / "project.txt"
    lock.write_text("typer==0.15.1\n    # via mtcabench\nhypothesis==6.1.0\n", encoding="utf-8")
    problems = _pins(pyproject, lock).lock_problems()
    assert problems == [
        "rich (declared in dependencies) is not in project.txt",
        "hypothesis is pinned to 6.170.15 in [test] but locked at 6.1.0",
    ]  # torch is installed outside the lock, from its CPU wheel


def test_setup_s_lock_check_passes_on_the_checkout():
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "pins.py"), "--check-lock"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
