"""The ablation base scorer (``--scorer ablation``): ContextCite's random ablations and linear
surrogate, with the passes planned once per conversation, over whole turns.

ContextCite (Cohen-Wang et al., 2024) leaves out random subsets of the context's sources, runs
the model on each ablated context, and fits a sparse linear model (LASSO) from "which sources
were kept" to the log-probability of the attributed text; a source's weight is its score. It
is causal (it measures what removing a source does), where attention scores are correlational.
Run per span and per recursion step as the package does, it costs its passes again and again;
here the passes belong to the conversation:

- the sources are the *turns* before the last query (system, user, tool and assistant turns
  alike: an assistant turn is a source of later queries); each of ``passes`` forward passes
  leaves out a random set of them, and the design is balanced: every turn is kept in exactly
  ``round(passes * keep)`` passes (a random choice of which, per turn, seeded per
  conversation). A sentence-level design gave a query in a turn of *n* sentences a read only
  in the passes that kept all *n* (an assistant turn of 7-17 sentences was never read, so the
  recursion could not pass through it) and a LASSO of 60-132 sentence columns against a
  handful of reads; by turns, every query is read in ``round(passes * keep)`` passes (the
  target's turn, never left out, in all) and its LASSO has one column per earlier turn;
- every query (target span or a whole intermediate turn or part of one) whose own turn was
  kept in a pass reads its logit-probability from it (``log p - log(1 - p)``, ``p`` the
  probability of its tokens, as ContextCite);
- one more pass over the whole conversation keeps the keys and values of every token; a pass
  then starts from the first token where its input differs from the whole conversation's (its
  first left-out turn) and reuses the cached prefix, so it recomputes only what changed;
  queries before that token keep the whole pass's values;
- per query, LASSO (ContextCite's solver: standardised masks, ``alpha`` 0.01, the output divided
  by the query's token count) over the turns before the query's turn gives each turn's weight,
  which every sentence of the turn carries (the evidence of an ablation edge is its turn: a
  turn-level design cannot say which sentence in it mattered; with ``--turn-aggregate max``
  the turn's share is its weight's).

So the cost is ``passes + 1`` forward passes per conversation, whatever the number of spans,
intermediate turns or recursion steps. :func:`ablation_outputs` and :func:`surrogate_scores`
also take sentence-level designs (each sentence its own column), which
tests/peers/test_contextcite.py checks against the package with its own masks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from mtcabench.evaluate._settings import MAX_ABLATION_PASSES, SettingsError
from mtcabench.evaluate.attribution._base import BaseScorer, register_scorer, setting
from mtcabench.evaluate.attribution._passes import new_cache, passes_for, token_logprobs

if TYPE_CHECKING:
    from mtcabench.evaluate.attribution._engine import Query
    from mtcabench.evaluate.attribution._loading import LoadedModel
    from mtcabench.evaluate.attribution._render import Layout, RenderedConversation


def lasso(x: np.ndarray, y: np.ndarray, alpha: float, *, iterations: int = 20_000,
          tol: float = 1e-12) -> tuple[np.ndarray, float]:
    """Weights and bias minimising ``|y - X w - b|^2 / (2n) + alpha |w|_1`` on standardised
    columns, returned on the original scale (scikit-learn's ``StandardScaler`` + ``Lasso``, as
    ContextCite's solver), by accelerated proximal gradient (FISTA). Constant columns get 0."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, p = x.shape
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    xs = (x - mean) / scale
    yc = y - y.mean()
    w = np.zeros(p)
    if p and n:
        lipschitz = float(np.linalg.norm(xs, 2) ** 2) / n
        if lipschitz > 0:
            z, t = w.copy(), 1.0
            step = 1.0 / lipschitz
            for _ in range(iterations):
                grad = xs.T @ (xs @ z - yc) / n
                u = z - step * grad
                w_new = np.sign(u) * np.maximum(np.abs(u) - step * alpha, 0.0)
                t_new = (1 + np.sqrt(1 + 4 * t * t)) / 2
                z = w_new + (t - 1) / t_new * (w_new - w)
                done = np.max(np.abs(w_new - w), initial=0.0) <= tol
                w, t = w_new, t_new
                if done:
                    break
    coef = w / scale
    bias = float(y.mean() - mean @ coef)
    return coef, bias


def logit_prob(token_logprobs: np.ndarray) -> float:
    """``log p - log(1 - p)`` of a text from its tokens' log-probabilities (ContextCite's output)."""
    lp = min(float(np.sum(token_logprobs)), -1e-12)
    return lp - float(np.log(-np.expm1(lp)))


class PrefixRunner:
    """Token log-probabilities of ablated layouts, reusing the whole layout's key/value cache.

    The whole pass (:meth:`__init__`) runs the full token sequence up to ``last`` once and keeps
    every layer's keys and values; :meth:`logprobs` runs an ablated sequence from its first
    token that differs (a pass recomputes only from its first left-out sentence). The passes
    go through the model's pass service, which may start the whole pass from a stored prefix;
    ``store`` tokens of the whole input are that prefix (a system prompt).
    """

    def __init__(self, model, input_ids: Sequence[int], rows: np.ndarray, *, store: int = 0):
        self.passes = passes_for(model)
        self.ids = np.asarray(input_ids, dtype=np.int64)
        #: Tokens run by :meth:`logprobs` so far (the whole pass not counted).
        self.fed_tokens = 0
        rows = np.unique(rows[rows > 0])
        import torch  # noqa: PLC0415 - torch only when a pass runs (the CLI reads the settings)

        end = int(rows.max()) + 1 if len(rows) else 1
        res = self.passes.forward(self.ids[:end], logits_at=rows - 1,
                                  reuse=int(rows.min()) - 1 if len(rows) else 0,
                                  store=min(store, end))
        self._kv = [(layer.keys, layer.values) for layer in res.cache.layers]
        labels = torch.as_tensor(self.ids[rows], device=res.logits.device)
        self.base = dict(zip(rows.tolist(), token_logprobs(res.logits, labels), strict=True))

    def logprobs(self, input_ids: Sequence[int], rows: np.ndarray) -> dict[int, float]:
        """Log-probability of the token at each of ``rows`` (positions of ``input_ids``, > 0)."""
        ids = np.asarray(input_ids, dtype=np.int64)
        rows = np.unique(rows[rows > 0])
        if not len(rows):
            return {}
        n = min(len(ids), len(self.ids))
        diff = np.flatnonzero(ids[:n] != self.ids[:n])
        same = int(diff[0]) if len(diff) else n  # tokens 0..same-1 equal the whole pass's
        out = {int(r): self.base[int(r)] for r in rows if r < same and int(r) in self.base}
        todo = np.array([r for r in rows if int(r) not in out], dtype=np.int64)
        if not len(todo):
            return out
        start = min(same, int(todo.min()) - 1)
        import torch  # noqa: PLC0415 - as above

        # The whole pass's keys and values up to the first token that differs (none when the
        # very first does: a plain pass then).
        cache = new_cache([(k[:, :, :start], v[:, :, :start]) for k, v in self._kv]
                          if start > 0 else None)
        res = self.passes.forward(ids[: int(todo.max()) + 1], cache=cache, logits_at=todo - 1,
                                  reuse=int(todo.min()) - 1)
        self.fed_tokens += int(todo.max()) + 1 - res.start
        labels = torch.as_tensor(ids[todo], device=res.logits.device)
        out.update(zip(todo.tolist(), token_logprobs(res.logits, labels), strict=True))
        return out


@dataclass
class AblationData:
    """Per query: the passes it read (``masks[k, j]``: sentence ``droppable[j]`` kept in pass
    k) and its logit-probability in each (NaN where its own text was left out)."""

    droppable: list[int]
    masks: np.ndarray  # [passes, droppable] bool
    outputs: np.ndarray  # [queries, passes] float, NaN = not read
    tokens: np.ndarray  # [queries] token count of each query


def ablation_outputs(loaded: LoadedModel, rendered: RenderedConversation, queries: list[Query],
                     droppable: list[int], drops: list[frozenset[int]]) -> AblationData:
    """Every query's logit-probability under each ablation (see the module docstring)."""
    full = rendered.full
    own = [_own_sentences(rendered, q) for q in queries]
    rows_full = [np.arange(*full.span_tokens(q.turn, q.start, q.end)) for q in queries]
    runner = PrefixRunner(loaded.model, full.input_ids,
                          np.concatenate([*rows_full, np.zeros(0, np.int64)]),
                          store=rendered.shared_prefix)
    outputs = np.full((len(queries), len(drops)), np.nan)
    index = {s: j for j, s in enumerate(droppable)}
    masks = np.ones((len(drops), len(droppable)), dtype=bool)
    for k, drop in enumerate(drops):
        masks[k, [index[s] for s in drop if s in index]] = False
        layout: Layout = rendered.layout(drop)
        alive = [i for i, q in enumerate(queries) if not (own[i] & drop)]
        rows = {i: np.arange(*layout.span_tokens(queries[i].turn, queries[i].start,
                                                 queries[i].end)) for i in alive}
        rows = {i: r[r > 0] for i, r in rows.items() if len(r[r > 0])}
        if not rows:
            continue
        lp = runner.logprobs(layout.input_ids, np.concatenate(list(rows.values())))
        for i, r in rows.items():
            outputs[i, k] = logit_prob(np.array([lp[int(t)] for t in r]))
    tokens = np.array([max(len(r[r > 0]), 1) for r in rows_full])
    return AblationData(droppable, masks, outputs, tokens)


def _own_sentences(rendered: RenderedConversation, q: Query) -> frozenset[int]:
    """The sentences holding a query's own text (if one is left out, the query is not read)."""
    return frozenset(i for i, s in enumerate(rendered.sentences)
                     if s.turn == q.turn and s.start < q.end and s.end > q.start)


def surrogate_scores(data: AblationData, rendered: RenderedConversation, queries: list[Query],
                     alpha: float, columns: list[list[int]] | None = None) -> np.ndarray:
    """``[queries, sentences]``: per query, LASSO weights over the columns before its turn
    (NaN elsewhere, and for a query read in fewer than two passes).

    ``columns`` groups positions in ``data.droppable`` that the design always keeps or leaves
    out together (one turn's sentences); every sentence of a column carries its weight. By
    default every droppable sentence is a column of its own (ContextCite's design)."""
    if columns is None:
        columns = [[j] for j in range(len(data.droppable))]
    scores = np.full((len(queries), len(rendered.sentences)), np.nan)
    turns = np.array([rendered.sentences[data.droppable[c[0]]].turn for c in columns],
                     dtype=np.int64)
    first = np.array([c[0] for c in columns], dtype=np.int64)
    for i, q in enumerate(queries):
        read = ~np.isnan(data.outputs[i])
        cols = np.flatnonzero(turns < q.turn)
        if read.sum() < 2 or not len(cols):
            continue
        n_tok = float(data.tokens[i])
        w, _ = lasso(data.masks[np.ix_(read, first[cols])].astype(np.float64),
                     data.outputs[i, read] / n_tok, alpha)
        for c, weight in zip(cols, w, strict=True):
            scores[i, [data.droppable[j] for j in columns[c]]] = weight * n_tok
    return scores


def balanced_masks(units: int, passes: int, keep: float, rng: np.random.Generator) -> np.ndarray:
    """``[passes, units]`` keep masks where every unit is kept in exactly ``round(passes *
    keep)`` passes (at least 1, at most ``passes - 1``: a unit always kept or always left out
    has no effect to measure); which passes, a random choice per unit."""
    kept = min(max(round(passes * keep), 1), passes - 1)
    column = np.arange(passes) < kept
    if not units:
        return np.ones((passes, 0), dtype=bool)
    return np.stack([rng.permutation(column) for _ in range(units)], axis=1)


def turn_columns(rendered: RenderedConversation, droppable: list[int]) -> list[list[int]]:
    """The positions in ``droppable`` of each turn's sentences, turn by turn."""
    by_turn: dict[int, list[int]] = {}
    for j, s in enumerate(droppable):
        by_turn.setdefault(rendered.sentences[s].turn, []).append(j)
    return [by_turn[t] for t in sorted(by_turn)]


@dataclass(frozen=True)
class AblationSettings:
    """The ablation scorer's own settings (``--ablation-*``), checked when built: a value out
    of range is one line (exit code 3) before any model loads."""

    passes: int = setting(32, "ablation: random ablations per conversation (forward passes, "
                          "plus one).")
    keep: float = setting(0.5, "ablation: probability that a pass keeps a sentence.")
    alpha: float = setting(0.01, "ablation: LASSO's L1 weight (ContextCite's 0.01).")

    def __post_init__(self):
        if (isinstance(self.passes, bool) or not isinstance(self.passes, int)
                or not 2 <= self.passes <= MAX_ABLATION_PASSES):
            raise SettingsError(f"ablation passes must be 2 to {MAX_ABLATION_PASSES} (forward "
                                f"passes per conversation), got {self.passes}")
        if not 0 < self.keep < 1:  # NaN fails every comparison: refused too
            raise SettingsError(f"ablation keep must be between 0 and 1, got {self.keep}")
        if not (isinstance(self.alpha, (int, float)) and math.isfinite(self.alpha)
                and self.alpha >= 0):
            raise SettingsError("ablation alpha (LASSO's L1 weight) must be a finite number "
                                f"at least 0, got {self.alpha}")


@register_scorer
class Ablation(BaseScorer):
    """ContextCite's ablations and LASSO surrogate over whole turns, ``passes`` per
    conversation (module docstring)."""

    name = "ablation"
    Settings = AblationSettings
    summary = ("ContextCite (Cohen-Wang et al. 2024) over whole turns: each of `passes` passes "
               "leaves out a random set of the turns before the last query, assistant turns "
               "included, every turn kept in exactly `round(passes x keep)` passes (seeded by "
               "`--seed`); per query, LASSO (`alpha`, ContextCite's solver) from \"which turns "
               "were kept\" to the query's logit-probability; every sentence of a turn carries "
               "its turn's weight")
    passes_per_conversation = "passes + 1, whatever the number of spans and steps"
    evidence = "turn"
    offline_only = ("it reads log-probabilities of ablated contexts, and a key/value cache "
                    "holds one context only")
    #: Every unit of a turn carries the turn's weight: pooled, a segment keeps it once.
    additive = False
    #: Assistant turns are sources of later queries: they are left out too.
    drops_assistant = True

    def __init__(self, settings: AblationSettings | None = None, **fields: Any):
        super().__init__(AblationSettings(**fields) if settings is None else settings)

    def plan_conversation(self, rendered, droppable, rng):
        s = self.settings
        columns = turn_columns(rendered, droppable)
        masks = balanced_masks(len(columns), s.passes, s.keep, rng)
        return [frozenset(droppable[j] for c, kept in zip(columns, row, strict=True)
                          if not kept for j in c) for row in masks]

    def score_conversation(self, loaded, rendered, queries, droppable, drops):
        data = ablation_outputs(loaded, rendered, queries, droppable, drops)
        scores = surrogate_scores(data, rendered, queries, self.settings.alpha,
                                  turn_columns(rendered, droppable))
        return scores, len(drops) + 1

    def sentence_scores(self, features):  # pragma: no cover - score_conversation replaces it
        raise NotImplementedError("the ablation scorer reads log-probabilities, not attention")

    def parameters(self) -> dict[str, Any]:
        return {**super().parameters(), "solver": "lasso", "output": "logit-prob",
                "sources": "turns", "design": "balanced"}


def edge_drops(loaded: LoadedModel, rendered: RenderedConversation,
               edges: list[tuple[Query, int]]) -> tuple[dict[tuple[object, int], float], int]:
    """Edge verification: per ``(child query, parent turn)``, how much the child's
    log-probability drops when the parent turn is left out (positive: the parent helped).

    One pass over the whole conversation (its key/value cache kept), then one pass per
    distinct parent, run from the parent's first token on. Returns the drops by
    ``(query.key, parent)`` and the forward passes run.
    """
    if not edges:
        return {}, 0
    full = rendered.full
    children = {q.key: q for q, _ in edges}
    rows_full = {k: np.arange(*full.span_tokens(q.turn, q.start, q.end)) for k, q in
                 children.items()}
    rows_full = {k: r[r > 0] for k, r in rows_full.items()}
    runner = PrefixRunner(loaded.model, full.input_ids,
                          np.concatenate([*rows_full.values(), np.zeros(0, np.int64)]),
                          store=rendered.shared_prefix)
    base = {k: sum(runner.base[int(t)] for t in r) for k, r in rows_full.items()}
    drops: dict[tuple[object, int], float] = {}
    parents = sorted({p for _, p in edges})
    for p in parents:
        layout = rendered.layout(rendered.turn_sentences(p))
        keys = sorted({q.key for q, parent in edges if parent == p}, key=str)
        rows = {k: np.arange(*layout.span_tokens(children[k].turn, children[k].start,
                                                 children[k].end)) for k in keys}
        rows = {k: r[r > 0] for k, r in rows.items()}
        lp = runner.logprobs(layout.input_ids,
                             np.concatenate([*rows.values(), np.zeros(0, np.int64)]))
        for k, r in rows.items():
            drops[k, p] = base[k] - sum(lp[int(t)] for t in r)
    return drops, 1 + len(parents)
