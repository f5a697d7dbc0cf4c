"""Evidence inside a turn, for the HTML pages: the predicted edges' best sentences as ranges
of their parent turn's text, quoted in a table and highlighted (score on hover) in the text."""

from __future__ import annotations

import html
import re

from mtcabench.model import Conversation, ScoredSentence

Pair = tuple[int, int]


def _one_line(text: str, limit: int) -> str:
    flat = re.sub(r"\s+", " ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "\u2026"


def best_quote(evidence: dict[Pair, list[ScoredSentence]], conversation: Conversation,
               pair: Pair, limit: int = 160) -> str:
    """The edge's best evidence sentence, quoted from its parent ('' if it has none)."""
    best = evidence.get(pair)
    if not best:
        return ""
    x = best[0]
    return f"\u201c{_one_line(conversation.turns[pair[1]].text[x.start:x.end], limit)}\u201d"


def evidence_marks(evidence: dict[Pair, list[ScoredSentence]],
                   conversation: Conversation) -> dict[int, list[tuple[int, int, str]]]:
    """Per parent turn, the ranges to highlight with their hover text, in order: every edge's
    sentences; a range that several edges share once; a range overlapping an earlier one, or
    outside the turn's text, left out (a submission's offsets are not trusted to nest)."""
    found: dict[tuple[int, int, int], list[str]] = {}
    for (child, parent), sentences in sorted(evidence.items(), reverse=True):
        size = len(conversation.turns[parent].text)
        for rank, x in enumerate(sentences, 1):
            if 0 <= x.start < x.end <= size:
                found.setdefault((parent, x.start, x.end), []).append(
                    f"evidence #{rank} of edge {child}\u2192{parent}: score {x.score:.3g}")
    out: dict[int, list[tuple[int, int, str]]] = {}
    for (parent, start, end), why in sorted(found.items()):
        kept = out.setdefault(parent, [])
        if not kept or start >= kept[-1][1]:
            kept.append((start, end, "; ".join(why)))
    return out


def highlight(text: str, marks: list[tuple[int, int, str]]) -> str:
    """``text`` escaped, each mark's range in ``<mark class="evidence" title="...">``."""
    out, pos = [], 0
    for start, end, title in marks:
        out.append(html.escape(text[pos:start]))
        out.append(f'<mark class="evidence" title="{html.escape(title)}">'
                   f"{html.escape(text[start:end])}</mark>")
        pos = end
    out.append(html.escape(text[pos:]))
    return "".join(out)
