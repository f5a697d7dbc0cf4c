"""benchmarks/ holds scripts, not a library: no module outside it imports from it (the package,
the tests, scripts/ and examples/ alike; what several scripts share is a module of the package,
e.g. mtcabench.studies, or test support in tests/support), and the scripts use the package's
public names only (an underscored module or name is the package's to change)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"
OUTSIDE = ("mtcabench", "tests", "scripts", "examples")


def _python_files(*folders: str) -> list[Path]:
    return sorted(p for f in folders for p in (ROOT / f).rglob("*.py")
                  if "__pycache__" not in p.parts)


def _imported(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, dotted module) of every absolute import, and of every name taken from one
    (``from a import b`` gives ``a`` and ``a.b``)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.lineno, node.module))
            out += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return out


def _loads_from_benchmarks(tree: ast.Module) -> list[int]:
    """Lines that build a path into the benchmarks folder (``ROOT / "benchmarks"``): to put it
    on sys.path or load a script from it by file name."""
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)
            and isinstance(node.right, ast.Constant) and node.right.value == "benchmarks"]


def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


@pytest.mark.slow  # a few seconds: a fresh interpreter or a whole run
def test_no_module_outside_benchmarks_imports_from_it():
    scripts = {p.stem for p in BENCHMARKS.glob("*.py")} | {"benchmarks"}
    found = []
    for path in _python_files(*OUTSIDE):
        if path == Path(__file__).resolve():
            continue  # names the folder to list its scripts
        rel, tree = path.relative_to(ROOT), _parse(path)
        found += [f"{rel}:{line}: imports {mod}" for line, mod in _imported(tree)
                  if mod.split(".")[0] in scripts]
        found += [f"{rel}:{line}: loads code from benchmarks/"
                  for line in _loads_from_benchmarks(tree)]
    assert not found, "\n".join(found)


#: Scripts that time the package's own stages, and so name them: the private modules each may
#: patch timers into (it breaks when they change, and says so by failing, which is the point).
PROFILERS = {"trace_cost.py": "mtcabench.evaluate."}


def test_benchmarks_use_only_the_packages_public_names():
    found = []
    for path in _python_files("benchmarks"):
        rel = path.relative_to(ROOT)
        timed = PROFILERS.get(path.name)
        for line, mod in _imported(_parse(path)):
            parts = mod.split(".")
            if timed and mod.startswith(timed):
                continue
            if parts[0] == "mtcabench" and any(p.startswith("_") for p in parts[1:]):
                found.append(f"{rel}:{line}: {mod}")
        # code run in a subprocess, written as a string
        text = path.read_text(encoding="utf-8")
        found += [f"{rel}: {line.strip()}" for line in text.splitlines()
                  if "from mtcabench." in line and ("._" in line.split(" import ")[0])]
    assert not found, "private names of the package:\n" + "\n".join(found)


def test_the_profiler_still_finds_every_stage_it_times():
    """trace_cost.py patches timers into the package's private stages by name: a renamed stage
    must fail here, not hours into a cost run (as plan_windows, once fit_window, did)."""
    import subprocess
    import sys

    code = ("import runpy; s = runpy.run_path('benchmarks/trace_cost.py', run_name='probe'); "
            "restore = s['instrument'](s['Profile']()); restore(); print('ok')")
    got = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert got.returncode == 0 and got.stdout.strip() == "ok", got.stderr[-2000:]


def test_the_cost_script_keeps_the_conversations_ids_names(sample_benchmark):
    """trace_cost.py --ids: only the named conversations, in the selection's order; a name not
    in the selection is refused with one line naming it (not a run over fewer)."""
    import runpy

    import pytest

    from mtcabench.benchmark import load_benchmark

    script = runpy.run_path(str(ROOT / "benchmarks" / "trace_cost.py"), run_name="probe")
    bench = load_benchmark(sample_benchmark)
    order = list(bench.spans_by_conversation())
    assert len(order) >= 2
    kept = script["pick"](bench, None, False, None, 1, {order[-1], order[0]})
    assert list(kept.spans_by_conversation()) == [order[0], order[-1]]
    assert {s.conversation_id for s in kept.spans} == {order[0], order[-1]}
    with pytest.raises(SystemExit, match=r"--ids: 1 of the conversations named are not in "
                                         r"the selection \(.*\), e.g. 'no-such-conversation'"):
        script["pick"](bench, None, False, None, 1, {order[0], "no-such-conversation"})
