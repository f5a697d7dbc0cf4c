"""Running mtcabench as ``pip install mtcabench`` gives it, without the ``eval`` extra: a fresh
interpreter in which torch, transformers, gguf and accelerate cannot be imported (a finder at
the head of ``sys.meta_path`` refuses them), instead of a virtual environment of its own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_BLOCK = '''
import sys
class _NoEvalExtra:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"torch", "transformers", "gguf", "accelerate"}:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, _NoEvalExtra())
'''


def run_without_eval_extra(code: str, *, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``code`` (Python) in a fresh interpreter without the eval extra, from the checkout."""
    return subprocess.run([sys.executable, "-c", _BLOCK + code], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def cli_without_eval_extra(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``mtcabench ARGS`` without the eval extra."""
    return run_without_eval_extra(
        f"sys.argv = ['mtcabench', *{list(map(str, args))!r}]\n"
        "from mtcabench.cli import main\nmain()\n", timeout=timeout)
