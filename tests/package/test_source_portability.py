"""The package compiles on every Python it declares (3.10 and newer): no string constant of
its source holds a lone surrogate. A docstring quoting ``\\uD800`` unescaped is one, and
Python 3.13's compiler refuses the module (`import mtcabench.io` failed there)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "mtcabench"


def test_no_string_constant_holds_a_lone_surrogate():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                try:
                    node.value.encode("utf-8")
                except UnicodeEncodeError:
                    found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert not found, f"lone surrogates in string constants (escape the backslash): {found}"
