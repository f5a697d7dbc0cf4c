"""`show` on long graphs: linear in the edges, and stopping it leaves no hidden file (issue 12)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.chain_data import chain_benchmark

from mtcabench.scoring.show import draw_spans, render_dot, render_mermaid

ROOT = Path(__file__).resolve().parents[2]


def test_a_5000_edge_graph_draws_quickly(tmp_path):
    sid = chain_benchmark(tmp_path / "bench", 5000)
    t0 = time.perf_counter()
    views, paths = draw_spans([sid], tmp_path / "bench", tmp_path / "bench" / "sub.jsonl",
                              tmp_path / "out")
    render_mermaid(views[0])
    render_dot(views[0])
    seconds = time.perf_counter() - t0
    # Linear: well under 2 s on the development machine (it took minutes when quadratic);
    # the bound leaves room for a loaded machine.
    assert seconds < 8, seconds
    page = paths[0].read_text(encoding="utf-8")
    assert page.count('class="edge gold') == 5000 and page.count('class="edge pred') == 5000
    assert views[0].kind((5000, 4999)) == "both" and views[0].kind((4999, 4998)) == "missed"
    assert views[0].kind((4999, 4997)) == "extra"


# Run `mtcabench show` with its drawing held up while the picture's temporary file is open,
# so that the signal arrives mid-write every time (no race with a fast machine).
_HELD_SHOW = """
import pathlib, sys, time
from mtcabench.cli import main
from mtcabench.scoring import show
marker, draw = pathlib.Path(sys.argv[1]), show.render_html
def held(view):
    marker.write_text("drawing")
    time.sleep(120)
    return draw(view)
show.render_html = held
sys.argv = ["mtcabench", *sys.argv[2:]]
main()
"""


@pytest.mark.slow
def test_stopping_show_mid_draw_leaves_no_hidden_file(tmp_path):
    sid = chain_benchmark(tmp_path / "bench", 200)
    out, marker = tmp_path / "out", tmp_path / "drawing"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", _HELD_SHOW, str(marker), "show", sid, "-b",
                             str(tmp_path / "bench"), "-s", str(tmp_path / "bench" / "sub.jsonl"),
                             "-o", str(out), "--text", "none"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert proc.poll() is None, f"show ended before drawing: {proc.stderr.read()}"
            assert time.monotonic() < deadline, "show never started drawing"
            time.sleep(0.02)
        assert list(out.glob(".*.tmp")), "the picture's temporary file should be open now"
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM
    assert list(out.iterdir()) == []
