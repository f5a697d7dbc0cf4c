"""Finding a model's quote in a turn's text, and the offsets it has there.

Offsets are never taken from the model: they are computed here from the quoted text. A quote
is looked up exactly first; if that fails, both texts are normalised and compared, and the
match is mapped back to offsets in the original text, so that ``text[start:end]`` is always
the turn's own characters. The normalisation (the only one allowed, documented in
docs/annotate.md):

1. Unicode NFKC, one character with its combining marks at a time (full-width forms,
   ligatures, non-breaking spaces; a quote in NFD, "e" + U+0301, matches "é" in NFC and the
   other way round);
2. curly quotes and apostrophes to straight ones, en and em dashes to ``-``;
3. case folded;
4. every run of whitespace to one space, and the quote's own ends stripped.

Nothing else (no punctuation or markdown dropped, no JSON unescaping): a paraphrase is not a
quote. When a quote occurs more than once, the first occurrence is taken.
"""

from __future__ import annotations

import unicodedata

_PUNCT = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"',
    "\u2013": "-", "\u2014": "-", "\u2212": "-",
})


def _clusters(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each base character with the combining marks after it: NFKC
    composes "e" + U+0301 into "é" only when it sees both (a quote in NFD matches NFC text)."""
    out: list[tuple[int, int]] = []
    for i, ch in enumerate(text):
        if out and unicodedata.combining(ch) and out[-1][1] == i:
            out[-1] = (out[-1][0], i + 1)
        else:
            out.append((i, i + 1))
    return out


def normalise(text: str) -> tuple[str, list[int]]:
    """The normalised text and, for each of its characters, the index it came from (the
    first of the characters it was normalised from)."""
    norm, starts, _ = _normalise(text)
    return norm, starts


def _normalise(text: str) -> tuple[str, list[int], list[int]]:
    """The normalised text and, for each of its characters, where the characters it came
    from start and end in ``text``."""
    out: list[str] = []
    where: list[int] = []
    ends: list[int] = []
    in_space = False
    for i, j in _clusters(text):
        for c in unicodedata.normalize("NFKC", text[i:j]).translate(_PUNCT).casefold():
            if c.isspace():
                if in_space:
                    continue
                in_space = True
                c = " "
            else:
                in_space = False
            out.append(c)
            where.append(i)
            ends.append(j)
    return "".join(out), where, ends


def find_quote(text: str, quote: str) -> tuple[int, int] | None:
    """``(start, end)`` of ``quote`` in ``text`` (exact, else normalised), or None."""
    if not quote.strip():
        return None
    start = text.find(quote)
    if start >= 0:
        return start, start + len(quote)
    norm_text, where, ends = _normalise(text)
    norm_quote = normalise(quote)[0].strip()
    if not norm_quote:
        return None
    at = norm_text.find(norm_quote)
    if at < 0:
        return None
    return where[at], ends[at + len(norm_quote) - 1]
