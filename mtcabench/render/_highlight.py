"""Evidence inside a turn, for the HTML pages: the predicted edges' best sentences as ranges
of their parent turn's text, quoted in a table and highlighted in the text (score on hover,
shade graded by score, only the sentences that carry weight)."""

from __future__ import annotations

import html

from mtcabench.model import Conversation, ScoredSentence
from mtcabench.render._drawing import Pair, one_line


def best_quote(evidence: dict[Pair, list[ScoredSentence]], conversation: Conversation,
               pair: Pair, limit: int = 160) -> str:
    """The edge's best evidence sentence, quoted from its parent ('' if it has none)."""
    best = evidence.get(pair)
    if not best:
        return ""
    x = best[0]
    return f"\u201c{one_line(conversation.turns[pair[1]].text[x.start:x.end], limit)}\u201d"


#: An evidence sentence is highlighted when its score is at least this share of its edge's
#: best sentence: the rest carries little of the edge ("Hi!" beside the line that holds the
#: value) and would only paint the page.
WEIGHT_FLOOR = 0.5


def evidence_marks(evidence: dict[Pair, list[ScoredSentence]],
                   conversation: Conversation) -> dict[int, list[tuple[int, int, str, float]]]:
    """Per parent turn, the ranges to highlight with their hover text and their weight, in
    order. Every edge's sentences that carry weight (score at least ``WEIGHT_FLOOR`` times
    the edge's best); a range that several edges share once, at its best score; a range
    overlapping an earlier one, or outside the turn's text, left out (a submission's offsets
    are not trusted to nest). The weight (0 to 1) is the range's score over the best score on
    the page, so that the shade says how much the range counts."""
    found: dict[tuple[int, int, int], list[str]] = {}
    score: dict[tuple[int, int, int], float] = {}
    for (child, parent), sentences in sorted(evidence.items(), reverse=True):
        size = len(conversation.turns[parent].text)
        top = max((x.score for x in sentences), default=0.0)
        for rank, x in enumerate(sentences, 1):
            if 0 <= x.start < x.end <= size and x.score >= WEIGHT_FLOOR * top:
                key = (parent, x.start, x.end)
                found.setdefault(key, []).append(
                    f"evidence #{rank} of edge {child}\u2192{parent}: score {x.score:.3g}")
                score[key] = max(score.get(key, 0.0), x.score)
    best = max(score.values(), default=0.0)
    out: dict[int, list[tuple[int, int, str, float]]] = {}
    for (parent, start, end), why in sorted(found.items()):
        kept = out.setdefault(parent, [])
        if not kept or start >= kept[-1][1]:
            weight = score[parent, start, end] / best if best > 0 else 1.0
            kept.append((start, end, "; ".join(why), weight))
    return out


def highlight(text: str, marks: list[tuple[int, int, str, float]]) -> str:
    """``text`` escaped, each mark's range in ``<mark class="evidence" title="...">``, its
    shade of green graded by its weight (see :func:`evidence_marks`)."""
    out, pos = [], 0
    for start, end, title, weight in marks:
        alpha = 0.15 + 0.7 * min(max(weight, 0.0), 1.0)
        out.append(html.escape(text[pos:start]))
        out.append(f'<mark class="evidence" title="{html.escape(title)}" '
                   f'style="background:rgba(46,139,87,{alpha:.2f})" data-weight="{weight:.2f}">'
                   f"{html.escape(text[start:end])}</mark>")
        pos = end
    out.append(html.escape(text[pos:]))
    return "".join(out)
