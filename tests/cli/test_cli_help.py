"""`mtcabench --help` for a newcomer: the entry points first (explain, demo), the stages in
pipeline order, and every group's command list gives each description whole, never cut
mid-phrase with "..." (click's default at the terminal's width)."""

from __future__ import annotations

import re

import pytest
import typer.main
from typer.testing import CliRunner

from mtcabench.cli import app

runner = CliRunner()


def _commands(output: str) -> list[tuple[str, str]]:
    """(name, description) of the Commands section, wrapped lines joined."""
    section = output.split("Commands:", 1)[1]
    rows: list[list[str]] = []
    for line in section.splitlines():
        if m := re.match(r"^  (\S+)\s{2,}(.*)$", line):
            rows.append([m[1], m[2]])
        elif line.startswith("    ") and rows:
            rows[-1][1] += " " + line.strip()
    return [(a, b) for a, b in rows]


def test_root_help_lists_explain_first_then_the_pipeline():
    res = runner.invoke(app, ["--help"], terminal_width=80)
    assert res.exit_code == 0, res.output
    names = [n for n, _ in _commands(res.output)]
    assert names[:2] == ["explain", "demo"]
    pipeline = ["raw", "ingest", "annotate", "review", "release", "trace", "score", "view"]
    assert [n for n in names if n in pipeline] == pipeline


@pytest.mark.slow  # a few seconds: a fresh interpreter or a whole run
def test_no_group_cuts_a_description_mid_phrase():
    root = typer.main.get_command(app)
    groups = [[]] + [[name] for name, cmd in root.commands.items() if hasattr(cmd, "commands")]
    assert len(groups) > 4
    for path in groups:
        res = runner.invoke(app, [*path, "--help"], terminal_width=80)
        assert res.exit_code == 0, res.output
        rows = _commands(res.output)
        assert rows, path
        for name, text in rows:
            assert not text.endswith("..."), (path, name, text)
            assert text.endswith((".", ")")) or text[-1].isalnum(), (path, name, text)
