"""Every code block of the README and the documentation site runs, so that an example cannot
rot: shell blocks as bash (`set -e`) in a sandbox holding the bundled sample (`raw/sample/`)
and `examples/`, Python blocks in a fresh interpreter there, JSON blocks parsed. The blocks of
one file run in order in one sandbox, so a block may use what an earlier one wrote.

A comment right above a block says how it runs when it is not plain:

* ``<!-- docs-test: model -->``: it loads the model, or reads what a block that does wrote (the
  test carries the ``model`` marker);
* ``<!-- docs-test: hub -->``: it talks to the Hub; run against the tests' HTTP-level Hub
  double (tests/support/fake_hub.py) through ``HF_ENDPOINT``, with a token;
* ``<!-- docs-test: openai -->``: it calls an OpenAI-compatible LLM API (annotation); run
  against the tests' HTTP-level OpenAI double (tests/support/annotate_fakes.py) through
  ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``; the double proposes no span, so the LLM phases
  run end to end and the candidates are the lineage annotator's;
* ``<!-- docs-test: not run: REASON -->``: it cannot run here (it installs, sets a machine
  up, needs upstream data, an LLM endpoint or reviewers); the reason is required.

Blocks without a language, or marked ``text``, are output and diagrams, not code.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CODE = {"bash": "shell", "sh": "shell", "console": "shell", "python": "python", "json": "json"}
MARKER = re.compile(r"<!--\s*docs-test:\s*(.*?)\s*-->", re.S)
FENCE = re.compile(r"^```(\S*)\s*$")


@dataclass
class Block:
    file: Path
    line: int
    lang: str
    code: str
    marker: str  # "", "model", "hub", "openai" or "not run: REASON"

    @property
    def id(self) -> str:
        return f"{self.file.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    lines = path.read_text(encoding="utf-8").split("\n")
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        above = "\n".join(lines[max(0, i - 4):i])
        marks = MARKER.findall(above) if above.rstrip().endswith("-->") else []
        marker = " ".join(marks[-1].split()) if marks else ""
        if m[1] in CODE:
            out.append(Block(path, i + 1, m[1], "\n".join(lines[i + 1:end]) + "\n", marker))
        i = end + 1
    return out


ALL = [b for f in FILES for b in blocks(f)]


def _param(b: Block):
    marks = [pytest.mark.model] if b.marker == "model" else []
    if b.lang != "json" and not b.marker.startswith("not run"):
        # A file's blocks run in order in one sandbox: on one xdist worker, else a block on
        # another would run every earlier block again (tests/support/parallel.py).
        marks.append(pytest.mark.xdist_group(f"docs:{b.file.name}"))
    return pytest.param(b, id=b.id, marks=marks)


_sandboxes: dict[Path, Path] = {}


@pytest.fixture(scope="module")
def sandbox_root(tmp_path_factory):
    return tmp_path_factory.mktemp("docs")


def _sandbox(root: Path, file: Path) -> Path:
    """One folder per documentation file: the sample and the examples, links resolved."""
    if file not in _sandboxes:
        box = root / file.stem
        (box / "raw").mkdir(parents=True)
        shutil.copytree(ROOT / "raw" / "sample", box / "raw" / "sample", symlinks=False)
        shutil.copytree(ROOT / "examples", box / "examples", symlinks=False)
        _sandboxes[file] = box
    return _sandboxes[file]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AZURE_OPENAI_ENDPOINT", "HF_TOKEN",
                        "LABEL_STUDIO_URL", "LABEL_STUDIO_API_KEY")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env["COLUMNS"] = "100"
    return {**env, **extra}


def _test_module(name: str, path: Path):
    """A module of the tests' doubles, loaded by path (the test folders are not packages)."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up
        spec.loader.exec_module(module)
    return sys.modules[name]


def _fake_hub():
    return _test_module("_docs_fake_hub", ROOT / "tests" / "support" / "fake_hub.py").FakeHub()


def _fake_openai():
    path = ROOT / "tests" / "support" / "annotate_fakes.py"
    return _test_module("_docs_fake_openai", path).FakeOpenAI()


_done: set[str] = set()


def _run(block: Block, box: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    cmd = (["bash", "-euo", "pipefail", "-c", block.code] if CODE[block.lang] == "shell"
           else [sys.executable, "-c", block.code])
    res = subprocess.run(cmd, cwd=box, env=env, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, f"{block.id} failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    _done.add(block.id)
    return res


def test_every_code_block_is_collected_and_every_skip_says_why():
    assert len(ALL) >= 20 and any(b.file.name == "README.md" for b in ALL)
    for b in ALL:
        assert (b.marker in ("", "model", "hub", "openai")
                or b.marker.startswith("not run: ")), b.id
        if b.marker.startswith("not run"):
            assert len(b.marker) > len("not run: ") + 20, f"{b.id}: say why it cannot run"


@pytest.mark.slow
@pytest.mark.parametrize("block", [_param(b) for b in ALL])
def test_code_block_runs(block: Block, sandbox_root):
    if block.marker.startswith("not run"):
        return  # reasoned above; checked by the test before
    if block.lang == "json":  # a JSON value, or JSON Lines (a submission)
        try:
            json.loads(block.code)
        except json.JSONDecodeError:
            for line in filter(str.strip, block.code.splitlines()):
                json.loads(line)
        return
    box = _sandbox(sandbox_root, block.file)
    # Earlier plain blocks of the file first (and for a model block, earlier model blocks), if
    # a selection (-m, -k) left them out: a block may use what they wrote.
    rerun = ("", "model") if block.marker == "model" else ("",)
    for earlier in ALL:
        if (earlier.file == block.file and earlier.line < block.line
                and earlier.marker in rerun and earlier.lang != "json"
                and earlier.id not in _done):
            _run(earlier, box, _env())
    _done.add(block.id)
    env = _env()
    double = None
    if block.marker == "hub":
        double = _fake_hub().__enter__()
        env.update(HF_ENDPOINT=double.url, HF_TOKEN="hf_docs_test_token_0123456789")
    elif block.marker == "openai":
        double = _fake_openai().__enter__()
        env.update(OPENAI_BASE_URL=double.base_url, OPENAI_API_KEY="sk-docs-test-0123456789")
    try:
        res = _run(block, box, env)
    finally:
        if double is not None:
            double.__exit__(None, None, None)
    if block.marker == "openai":
        assert double.chat_requests(), f"{block.id} sent the LLM double no request"
    if block.file.name == "README.md" and "print(" in block.code:
        assert "turn " in res.stdout, f"{block.id} printed no graph:\n{res.stdout}"
