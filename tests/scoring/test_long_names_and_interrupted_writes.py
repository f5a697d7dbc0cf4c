"""score and show under issue 22's hostile inputs: long names, ids that start with a dot, a
full disk and Ctrl-C near the end (the five files of a run appear together or not at all)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode
from mtcabench.io import NAME_MAX

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()
FIVE = [".score.json", ".score.md", ".spans.jsonl"]


def error_line(text: str) -> str:
    assert "Traceback" not in text, text
    errors = [line for line in text.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and text.strip().endswith(errors[0]), text
    return errors[0]


def test_a_submission_with_a_long_file_name_is_scored(bench, submissions, tmp_path):
    folder, _ = bench
    sub = tmp_path / ("t" * 245 + ".jsonl")  # 251 bytes: legal, but not with .score.json
    sub.write_bytes(submissions[0].read_bytes())
    res = runner.invoke(app, ["score", str(sub), "-b", str(folder), "-o", str(tmp_path / "o"),
                              "--no-plot"])
    assert res.exit_code == 0, res.output
    names = sorted(os.listdir(tmp_path / "o"))
    assert len(names) == 3 and all(len(n.encode()) <= NAME_MAX for n in names), names
    assert {n[n.index("."):] for n in names} == set(FIVE)
    report = json.loads(next((tmp_path / "o").glob("*.score.json")).read_text())
    assert next(r for r in report["rows"] if r["breakdown"] == "overall")["spans"] == 8


def _long_benchmark(folder: Path, tmp_path: Path, old: str, new: str) -> Path:
    """The test benchmark with conversation ``old`` renamed ``new`` (its span ids with it)."""
    out = tmp_path / "long-bench"
    out.mkdir()
    for name in ("conversations.jsonl", "spans.jsonl"):
        text = (folder / name).read_text(encoding="utf-8")
        (out / name).write_text(text.replace(json.dumps(old)[1:-1], json.dumps(new)[1:-1]),
                                encoding="utf-8")
    return out


def test_show_draws_a_span_whose_id_is_long_and_starts_with_a_dot(bench, tmp_path):
    folder, ids = bench
    old_conv = ids["s1-price"].split("#")[0]
    new_conv = "." + "x" * 300  # a 300-character id that would make a hidden page
    long_bench = _long_benchmark(folder, tmp_path, old_conv, new_conv)
    sid = ids["s1-price"].replace(old_conv, new_conv)
    res = runner.invoke(app, ["show", sid, "-b", str(long_bench), "-o", str(tmp_path / "pics"),
                              "--text", "none"])
    assert res.exit_code == 0, res.output
    pages = os.listdir(tmp_path / "pics")
    assert len(pages) == 1 and pages[0].endswith(".html"), pages
    assert not pages[0].startswith(".") and len(pages[0].encode()) <= NAME_MAX, pages


def test_show_of_an_unknown_300_character_id_is_one_line(bench, tmp_path):
    folder, _ = bench
    res = runner.invoke(app, ["show", "y" * 300, "-b", str(folder), "-o", str(tmp_path)])
    assert res.exit_code == ExitCode.BAD_INPUT, res.output
    assert "is not in the benchmark" in error_line(res.output)


def test_score_on_a_full_disk_leaves_none_of_its_files(bench, submissions, tmp_path, small_disk):
    folder, _ = bench
    # How much a whole run writes, measured: the small disk then holds about half of it, so
    # the first files fit and a later one does not.
    res = runner.invoke(app, ["score", str(submissions[0]), "-b", str(folder), "-o",
                              str(tmp_path / "whole")])
    assert res.exit_code == 0, res.output
    total = sum(p.stat().st_size for p in (tmp_path / "whole").iterdir())
    assert len(os.listdir(tmp_path / "whole")) == 5
    proc, left = small_disk.run(["score", str(submissions[0]), "-b", str(folder), "-o",
                                 str(small_disk.path / "score")], size_kb=max(8, total // 2048))
    assert proc.returncode == ExitCode.NO_SPACE, proc.stderr
    assert "no space left on device" in error_line(proc.stderr)
    assert left == [], left


# Ctrl-C while the chart is drawn, the last of the five files: the three written before it
# must not be left without it.
_INTERRUPTED = textwrap.dedent("""
    import os, signal, sys
    import mtcabench.scoring.plots as plots
    original = plots.plot_by_dependency_type
    def interrupted(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)
        return original(*args, **kwargs)
    plots.plot_by_dependency_type = interrupted
    from mtcabench.cli import main
    sys.argv = ["mtcabench", *sys.argv[1:]]
    main()
""")


@pytest.mark.slow
def test_ctrl_c_near_the_end_of_score_leaves_none_of_its_files(bench, submissions, tmp_path):
    folder, _ = bench
    out = tmp_path / "score"
    out.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", _INTERRUPTED, "score", str(submissions[0]),
                           "-b", str(folder), "-o", str(out)], env=env, capture_output=True,
                          text=True, timeout=300,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.returncode == 130, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert os.listdir(out) == [], os.listdir(out)


def test_show_on_a_full_disk_leaves_none_of_its_pages(bench, tmp_path, small_disk):
    folder, ids = bench
    spans = [ids["s1-price"], ids["s2-remaining"], ids["s3-time"]]
    res = runner.invoke(app, ["show", *spans, "-b", str(folder), "-o", str(tmp_path / "pics"),
                              "--text", "none"])
    assert res.exit_code == 0, res.output
    sizes = sorted(p.stat().st_size for p in (tmp_path / "pics").iterdir())
    assert len(sizes) == 3
    # Room for the first page or two, not for all three.
    size_kb = max(4, (sum(sizes) - sizes[0] // 2) // 1024 // 4 * 4)
    proc, left = small_disk.run(["show", *spans, "-b", str(folder), "-o",
                                 str(small_disk.path / "pics"), "--text", "none"],
                                size_kb=size_kb)
    assert proc.returncode == ExitCode.NO_SPACE, (size_kb, sizes, proc.stderr)
    assert "no space left on device" in error_line(proc.stderr)
    assert left in ([], ["pics"]), left
