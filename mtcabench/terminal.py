"""Untrusted text on the terminal: what a user's file, a server or a path holds, made safe.

Every piece of text the tool did not write itself (a conversation or span id, a method name,
a transcript's turn, a file name, a server's answer) goes through one of two functions
before it reaches a rich console, a table, a tree or a progress bar:

* :func:`plain` strips what a terminal would act on: escape sequences (CSI such as a
  clear-screen, OSC such as an OSC 52 clipboard write, DCS/APC/PM/SOS strings, two-character
  ESC sequences), the other C0 and C1 control characters and DEL, and the bidirectional
  overrides that make text read differently from what it is. A line break and a tab are kept
  (``newlines=False`` shows a line break as ``\\n``, for one-line messages).
* :func:`shown` is :func:`plain` escaped for rich markup, for text placed inside a markup
  string or a table cell: ``[/]`` in a method name prints as ``[/]`` instead of raising
  MarkupError after the files were written.

Text handed to rich as a ``Text`` (never parsed as markup) needs :func:`plain` only.

The same text written into a Markdown document (the dataset card, a ``.score.md`` report) goes
through :func:`markdown` (and :func:`markdown_code` inside backticks): a name is data there
as in the HTML pages, never markup.
"""

from __future__ import annotations

import html
import re
from typing import Any

from rich.markup import escape

#: Escape sequences, longest form first: CSI, OSC (ended by BEL or ST, or unterminated),
#: DCS/SOS/PM/APC strings, then any other two-character ESC sequence and a lone ESC.
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?"
    r"|\x1b\][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[PX^_][^\x1b\x9c]*(?:\x1b\\|\x9c)?"
    r"|\x9b[0-?]*[ -/]*[@-~]?"  # 8-bit CSI
    r"|\x9d[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"  # 8-bit OSC
    r"|\x1b[\s\S]?"
)
#: Control characters other than line break and tab; DEL; C1; bidi overrides and isolates.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def plain(text: Any, *, newlines: bool = True) -> str:
    """``text`` without anything a terminal would act on (see the module)."""
    out = _CONTROLS.sub("", _ESCAPES.sub("", str(text)))
    return out if newlines else out.replace("\n", "\\n")


def shown(text: Any, *, newlines: bool = True) -> str:
    """:func:`plain`, escaped for rich markup (for markup strings and table cells)."""
    return escape(plain(text, newlines=newlines))


#: What Markdown (CommonMark with GitHub's tables and strike-through) reads as markup: the
#: backslash itself, code, emphasis, links and images, a table cell's end, strike-through, and
#: an underscore that can open or close emphasis (one inside a word, ``medical_triage``, cannot).
_MARKDOWN = re.compile(r"[\\`*\[\]|~]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def markdown(text: Any) -> str:
    """``text`` for a Markdown document, on one line: :func:`plain`, HTML escaped (``<script>``
    and ``<img onerror>`` are shown, not run, as in the HTML pages) and Markdown's own markup
    characters escaped with a backslash (a ``|`` does not end a table cell)."""
    escaped = html.escape(plain(text, newlines=False), quote=False)
    return _MARKDOWN.sub(lambda m: "\\" + m.group(), escaped)


def markdown_code(text: Any) -> str:
    """``text`` as inline code in Markdown: in backticks when it holds no backtick and no
    ``|`` (a code span cannot escape the one, and a table cell ends at the other even inside
    one), else as :func:`markdown` text."""
    shown = plain(text, newlines=False)
    return f"`{shown}`" if shown and not {"`", "|"} & set(shown) else markdown(text)
