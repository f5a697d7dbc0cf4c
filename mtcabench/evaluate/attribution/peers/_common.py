"""What every peer scorer shares: the sources of a query, the package import, the loop."""

from __future__ import annotations

import contextlib
import importlib
from abc import abstractmethod
from typing import TYPE_CHECKING, Any

import numpy as np

from mtcabench.evaluate.attribution._base import BaseScorer

if TYPE_CHECKING:
    from mtcabench.evaluate.attribution._engine import Query
    from mtcabench.evaluate.attribution._render import RenderedConversation


def import_peer(module: str, package: str) -> Any:
    """The peer's module, or a ValueError naming how to install it (one line, exit code 3)."""
    try:
        with _no_nltk_download():
            return importlib.import_module(module)
    except ImportError as exc:
        raise ValueError(f"needs the package {package} ({exc}); install the peers' environment "
                         "with scripts/setup_peers.sh and run there") from None


@contextlib.contextmanager
def _no_nltk_download():
    """Skip ``nltk.download`` while a peer imports.

    context-cite and at2 call ``nltk.download("punkt_tab")`` when imported: a network fetch
    into ``~/nltk_data`` on every import, and offline an error printed into the run's log. The
    peers are given our sentences, never NLTK's splitter, so the tokenizer is not needed.
    """
    try:
        import nltk  # noqa: PLC0415 - the peers' venv only
    except ImportError:  # no nltk, no download to skip
        nltk = None
    if nltk is None:
        yield
        return
    saved = nltk.download
    nltk.download = lambda *args, **kwargs: True
    try:
        yield
    finally:
        nltk.download = saved


def sources(rendered: RenderedConversation, query: Query) -> list[int]:
    """The query's sources: every sentence of the turns before its turn (our partition)."""
    return [i for i, s in enumerate(rendered.sentences) if s.turn < query.turn]


class PeerScorer(BaseScorer):
    """A peer package run once per query; subclasses say how (:meth:`query_scores`)."""

    def score_conversation(self, loaded, rendered, queries, droppable, drops):
        scores = np.full((len(queries), len(rendered.sentences)), np.nan)
        passes = 0
        for i, q in enumerate(queries):
            src = sources(rendered, q)
            a, b = rendered.full.span_tokens(q.turn, q.start, q.end)
            if not src or b <= a:
                continue
            values, n = self.query_scores(loaded, rendered, q, src)
            scores[i, src] = values
            passes += n
        return scores, passes

    @abstractmethod
    def query_scores(self, loaded, rendered: RenderedConversation, query: Query,
                     src: list[int]) -> tuple[np.ndarray, int]:
        """Scores of ``src`` for ``query`` from the package, and the forward passes it ran."""

    def sentence_scores(self, features):  # pragma: no cover - score_conversation replaces it
        raise NotImplementedError("a peer scorer runs its package, not the attention passes")
