"""Finding a model's quote in a turn's text, and the offsets it has there.

Offsets are never taken from the model: they are computed here from the quoted text. A quote
is looked up exactly first; if that fails, both texts are normalised and compared, and the
match is mapped back to offsets in the original text, so that ``text[start:end]`` is always
the turn's own characters. The normalisation (the only one allowed, documented in
docs/annotate.md):

1. Unicode NFKC, character by character (full-width forms, ligatures, non-breaking spaces);
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


def normalise(text: str) -> tuple[str, list[int]]:
    """The normalised text and, for each of its characters, the index it came from."""
    out: list[str] = []
    where: list[int] = []
    in_space = False
    for i, ch in enumerate(text):
        for c in unicodedata.normalize("NFKC", ch).translate(_PUNCT).casefold():
            if c.isspace():
                if in_space:
                    continue
                in_space = True
                c = " "
            else:
                in_space = False
            out.append(c)
            where.append(i)
    return "".join(out), where


def find_quote(text: str, quote: str) -> tuple[int, int] | None:
    """``(start, end)`` of ``quote`` in ``text`` (exact, else normalised), or None."""
    if not quote.strip():
        return None
    start = text.find(quote)
    if start >= 0:
        return start, start + len(quote)
    norm_text, where = normalise(text)
    norm_quote = normalise(quote)[0].strip()
    if not norm_quote:
        return None
    at = norm_text.find(norm_quote)
    if at < 0:
        return None
    return where[at], where[at + len(norm_quote) - 1] + 1
