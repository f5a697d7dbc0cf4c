"""examples/online_agent.py end to end against the embedded llama.cpp server (SmolLM2): an
agent loop with a tool, every message traced online, the answer's values explained."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mtcabench.model import Role
from mtcabench.transcripts import read_transcript

pytestmark = [pytest.mark.llm_server, pytest.mark.model, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


def test_online_agent_example(tmp_path):
    transcript = tmp_path / "run.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"}
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "online_agent.py"),
                           "--transcript", str(transcript)], capture_output=True, text=True,
                          timeout=600, env=env, cwd=tmp_path, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    # the loop: system, user, the tool call, its result, the answer, each printed as it came
    conv = read_transcript(transcript)
    assert [t.role for t in conv.turns] == [Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.TOOL,
                                            Role.ASSISTANT]
    (call,) = conv.turns[2].tool_calls
    assert call.name == "get_order" and re.fullmatch(r"[A-Z]-\d{4}", call.arguments["order_id"])
    assert conv.call_turn(3) == 2 and call.arguments["order_id"] in conv.turns[3].content
    assert " 2 assistant get_order(" in out and " 3 tool " in out
    # the answer explained: one tree per value (or the whole answer), rooted at turn 4
    roots = [x for x in out.splitlines() if x.startswith("turn 4 assistant  tokengeist")]
    assert roots, out
    assert "Where the values of the answer (turn 4)" in out or "holds no value" in out
    # every token processed once while adding, no forward pass for the answers, no crop
    stats = re.search(r"tracer: 5 turns, (\d+) tokens, (\d+) forward pass\(es\) over (\d+) "
                      r"tokens while adding them, 0 for the (\d+) answer\(s\); 0 crops", out)
    assert stats, out[-1500:]
    assert stats.group(1) == stats.group(3) and int(stats.group(4)) == len(roots)
