"""Splitting a turn's text into sentences, the units that base scorers score.

Sentences cover the turn's text without gaps: each runs from its first non-blank character
to the start of the next sentence, so that every token of the text belongs to one sentence
and a dropped sentence (context subsampling, ablation) takes its trailing blank with it.
A sentence ends after ``.``, ``!`` or ``?`` followed by white space, and at every line break
(tool-call lines and JSON tool results thereby become units of their own).
"""

from __future__ import annotations

import re

_BOUNDARY = re.compile(r"(?<=[.!?])\s+|\n+")


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Character ranges ``[start, end)`` of the sentences of ``text``, in order, gap-free."""
    starts: list[int] = []
    pos = 0
    for m in _BOUNDARY.finditer(text):
        if text[pos : m.start()].strip():
            starts.append(pos)
        pos = m.end()
    if text[pos:].strip():
        starts.append(pos)
    if not starts:
        return []
    # Leading blanks of the text belong to the first sentence.
    starts[0] = 0
    ends = starts[1:] + [len(text)]
    return list(zip(starts, ends))
