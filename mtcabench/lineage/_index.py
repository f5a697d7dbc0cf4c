"""Where a value can stand: an inverted index of one conversation's turns, so that tracing
reads the few turns that may hold a value instead of every earlier turn (linear, not
quadratic, in the length of a conversation).

The index only narrows the search: every turn it names is still checked with the rules'
own matching (``Tracer.find``), so results are those of a full scan. It is sound because a
standalone occurrence of a value always contains one of its *probes* as a whole token:

* a token is a maximal run of alphanumerics (``str.isalnum``), compared case-folded;
* an exact form or folded spelling that stands alone begins at a token boundary and every
  run of its alphanumerics except the last is followed by a non-alphanumeric character, so
  each of those runs (the last too when it is the only one) is a whole token of the text;
  the probe is the rarest of them in the conversation;
* values matched through the normalisers (v2 dates, times, amounts, counts) are found by
  the (kind, key) of the turn's mentions instead;
* a form without any alphanumeric (rare) has no probe: every turn is a candidate for it.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import defaultdict
from typing import TYPE_CHECKING

from mtcabench.lineage._normalise import folded_pattern, match_key
from mtcabench.lineage._values import Value

if TYPE_CHECKING:  # pragma: no cover
    from mtcabench.lineage._vocabulary import Vocabulary

#: A maximal run of alphanumerics: ``[^\W_]`` is exactly ``str.isalnum`` per character.
_RUN = re.compile(r"[^\W_]+")


def fold(token: str) -> str:
    """A token compared without case: every pair of characters that ``re.IGNORECASE``
    treats as equal folds to the same text (``casefold`` joins "ς" and "σ", "ſ" and "s",
    the Kelvin sign and "k"; the dotted and dotless i are joined by hand)."""
    return token.casefold().replace("i\u0307", "i").replace("\u0131", "i")


def runs(text: str) -> list[str]:
    return _RUN.findall(text)


class TurnIndex:
    """The tokens and mentions of every turn of a conversation, and the turns of each."""

    def __init__(self, vocab: Vocabulary):
        self.vocab = vocab
        self.normalised = vocab.rules.normalised
        self.n = len(vocab.turns)
        self._turn_tokens: list[set[str]] = []
        self._postings: dict[str, list[int]] = defaultdict(list)  # token -> turns, ascending
        self._mention_postings: dict[tuple[str, str], list[int]] = defaultdict(list)
        self._turn_mentions: list[set[tuple[str, str]]] = []
        for t, turn in enumerate(vocab.turns):
            tokens = {fold(r) for r in runs(turn.text)}
            self._turn_tokens.append(tokens)
            for tok in tokens:
                self._postings[tok].append(t)
            keys: set[tuple[str, str]] = set()
            if self.normalised:
                keys = {(m.kind, m.key) for m in vocab.mentions(t)}
                for k in keys:
                    self._mention_postings[k].append(t)
            self._turn_mentions.append(keys)
        # the conversation's values by probe, for "which values may stand in turn t"
        self._order = {key: i for i, key in enumerate(vocab.values)}
        self._by_probe: dict[str, list[str]] = defaultdict(list)
        self._by_mention: dict[tuple[str, str], list[str]] = defaultdict(list)
        self._everywhere: list[str] = []
        for key, value in vocab.values.items():
            wanted = self._mention_key(value)
            if wanted is not None:
                self._by_mention[wanted].append(key)
                continue
            probes = self.probes(value)
            if probes is None:
                self._everywhere.append(key)
            for p in probes or ():
                self._by_probe[p].append(key)

    def _mention_key(self, value: Value) -> tuple[str, str] | None:
        return match_key(value) if self.normalised else None

    def _probe(self, text: str) -> str | None:
        found = [fold(r) for r in runs(text)]
        if not found:
            return None
        eligible = found if len(found) == 1 else found[:-1]
        return min(eligible, key=lambda tok: len(self._postings.get(tok, ())))

    def probes(self, value: Value) -> set[str] | None:
        """One probe per spelling the rules may match (None: a spelling without any)."""
        spellings = list(value.forms)
        if self.normalised and folded_pattern(value) is not None:
            spellings.append(value.key)
        out: set[str] = set()
        for text in spellings:
            probe = self._probe(text)
            if probe is None:
                return None
            out.add(probe)
        return out

    def turns_of(self, value: Value) -> list[int]:
        """The turns (ascending) where ``value`` may stand anywhere in the text: a superset of
        those where ``Tracer.find`` finds it."""
        wanted = self._mention_key(value)
        if wanted is not None:
            return self._mention_postings.get(wanted, [])
        probes = self.probes(value)
        if probes is None:
            return list(range(self.n))
        if len(probes) == 1:
            return self._postings.get(next(iter(probes)), [])
        return sorted({t for p in probes for t in self._postings.get(p, ())})

    def keys_in(self, t: int) -> list[str]:
        """The conversation's values that may stand in turn ``t``, in the vocabulary's order
        (a superset of those ``Tracer.find`` finds there)."""
        found: set[str] = set(self._everywhere)
        for tok in self._turn_tokens[t]:
            found.update(self._by_probe.get(tok, ()))
        for k in self._turn_mentions[t]:
            found.update(self._by_mention.get(k, ()))
        return sorted(found, key=self._order.__getitem__)


def before(turns: list[int], child: int) -> list[int]:
    """The turns of an ascending list that come before ``child``."""
    return turns[:bisect_left(turns, child)]
