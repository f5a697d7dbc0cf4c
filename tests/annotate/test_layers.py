"""The layers of mtcabench/annotate: each imports only the ones below it (imports made inside
functions count), and no module is over about 400 lines."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import mtcabench.annotate

PACKAGE = Path(mtcabench.annotate.__file__).parent
#: What each layer may import from mtcabench besides itself.
ALLOWED = {
    # registry: the one registry helper (ground layer), which providers and phases use.
    "llm": ("mtcabench.errors", "mtcabench.io", "mtcabench.redact", "mtcabench.registry",
            "mtcabench.services"),
    "phases": ("mtcabench.annotate.llm", "mtcabench.errors", "mtcabench.graph", "mtcabench.io",
               "mtcabench.model", "mtcabench.registry", "mtcabench.resources"),
    # io: the one JSON parser; errors: a refused input names its file and record
    "lineage": ("mtcabench.errors", "mtcabench.graph", "mtcabench.io", "mtcabench.model"),
}


def imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return {m for m in found if m.split(".")[0] == "mtcabench"}


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_a_layer_imports_only_what_is_below_it(layer):
    own = f"mtcabench.annotate.{layer}"
    bad = {}
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        wrong = {m for m in imports(path) if not (m == own or m.startswith(own + ".")) and
                 not any(m == a or m.startswith(a + ".") for a in ALLOWED[layer])}
        if wrong:
            bad[str(path.relative_to(PACKAGE))] = sorted(wrong)
    assert not bad, bad


def test_no_module_is_over_about_400_lines():
    long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 400}
    assert not long, long


@pytest.mark.slow  # a few seconds: a fresh interpreter or a whole run
def test_the_transport_and_the_options_do_not_import_the_sdk_until_a_request_is_made():
    import subprocess
    import sys

    code = ("import sys, mtcabench.cli, mtcabench.annotate, mtcabench.annotate.options; "
            "print('openai' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
