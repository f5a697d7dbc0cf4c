"""The CLI reference page and the base scorers' table, generated from the code itself.

An MkDocs hook (mkdocs.yml: ``hooks``): in ``docs/cli.md`` the marker line
``<!-- cli-reference -->`` is replaced by the ``--help`` of ``mtcabench`` and of every group
and command, in the order ``mtcabench --help`` lists them, as click renders them for an
80-column terminal; in any page, ``<!-- scorer-table -->`` is replaced by the table of the
registered base scorers (``mtcabench.evaluate.scorer_table``: each scorer's own row, options
and capabilities). So the pages cannot drift from the code.

``python scripts/docs_cli.py`` prints the generated Markdown.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

MARKER = "<!-- cli-reference -->"
SCORER_MARKER = "<!-- scorer-table -->"
WIDTH = 80


def _walk(command, path: list[str], parent):
    # typer.Context is click's Context (typer is declared; click comes with it).
    ctx = typer.Context(command, info_name=path[-1], parent=parent, terminal_width=WIDTH,
                        max_content_width=WIDTH)
    yield path, command, ctx
    if hasattr(command, "list_commands"):  # a group
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from _walk(sub, [*path, name], ctx)


def reference() -> str:
    """Every command's help as Markdown: one section per command, its help verbatim."""
    import typer.main

    from mtcabench.cli import app

    root = typer.main.get_command(app)
    parts = []
    for path, command, ctx in _walk(root, ["mtcabench"], None):
        level = "#" * min(len(path) + 1, 4)
        parts.append(f"{level} `{' '.join(path)}`\n\n```text\n{command.get_help(ctx).rstrip()}\n```\n")
    return "\n".join(parts)


def scorers() -> str:
    """The registered base scorers as a Markdown table."""
    from mtcabench.evaluate import scorer_table

    return scorer_table()


def on_page_markdown(markdown: str, page, config, files) -> str:  # MkDocs hook
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, reference())
    if SCORER_MARKER in markdown:
        markdown = markdown.replace(SCORER_MARKER, scorers())
    return markdown


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    print(reference())
