"""AT2's per-head weights: the file format, loading, and learning them from ablations.

AT2 scores a source by a weighted sum over attention heads of the attention mass the
attributed text puts on it. The published weights live on the Hugging Face Hub for a few
models; ``mtcabench at2-learn`` learns them for any model from ablation data on our own
conversations, following the AT2 recipe:

- queries: the benchmark's target spans and the conversations' assistant turns;
- features: one forward pass per conversation gives, for every query, layer, head and context
  sentence, the attention mass (as AT2's feature extractor does);
- ablations: ``masks`` random masks per conversation keep each sentence of the exogenous
  turns with probability ``keep``; one forward pass per mask gives every query's
  sequence logit-probability, ``log p - log(1 - p)`` with ``p`` the probability of its tokens
  (AT2's output);
- fit: weights ``w`` such that ``sum_s (2 m_s - 1) w . f_s`` correlates with the outputs
  across masks (AT2's Pearson-correlation loss, Adam, cosine schedule), then L1-normalised.

Assistant sentences are never ablated, so that every query keeps its own text in every pass
and one pass serves all queries of a conversation.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from pydantic import Field, ValidationError

from mtcabench.errors import InputError
from mtcabench.evaluate.attribution._attention import query_features
from mtcabench.evaluate.attribution._passes import passes_for, token_logprobs
from mtcabench.evaluate.attribution._loading import DEFAULT_MODEL, LoadedModel
from mtcabench.evaluate.attribution._render import render_conversation
from mtcabench.evaluate._settings import AT2_LEARN
from mtcabench.io import JSONError, atomic_write, format_validation_error, loads
from mtcabench.model import Record, Role
from mtcabench.progress import progress_bar

#: Weights learned for the default model, shipped with the package (see docs/evaluate.md).
PACKAGED_WEIGHTS = {DEFAULT_MODEL: Path(__file__).parent / "at2_weights" / f"{DEFAULT_MODEL}.json"}


class At2Weights(Record):
    """Per-head AT2 weights for one model shape."""

    KIND: ClassVar[str] = "at2-weights"

    model: str = Field(description="Model the weights were learned on.")
    num_layers: int = Field(ge=1, description="Layers of that model.")
    num_heads: int = Field(ge=1, description="Attention heads per layer.")
    weights: list[list[float]] = Field(description="weights[layer][head], L1-normalised.")
    training: dict[str, Any] = Field(default_factory=dict, description="How they were learned.")
    created_at: datetime | None = None

    def tensor(self) -> torch.Tensor:
        t = torch.tensor(self.weights, dtype=torch.float32)
        if t.shape != (self.num_layers, self.num_heads):
            raise ValueError(f"weights are {tuple(t.shape)}, header says "
                             f"({self.num_layers}, {self.num_heads})")
        return t


def load_weights(path: str | Path) -> At2Weights:
    """Read a weights file; a malformed one is an InputError naming the file."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such AT2 weights file; learn one with `mtcabench at2-learn`")
    try:
        w = At2Weights.model_validate(loads(path.read_bytes()))
        w.tensor()
    except JSONError as exc:
        raise InputError.at(path, f"not JSON ({exc.reason})", line=exc.line) from None
    except ValidationError as exc:
        raise InputError(f"{path}: {format_validation_error(exc)}") from None
    except ValueError as exc:
        raise InputError(f"{path}: {exc}") from None
    return w


def weights_for(loaded: LoadedModel, path: str | Path | None) -> tuple[torch.Tensor, str]:
    """The weights tensor for ``loaded`` and a label (path and sha256) for the submission."""
    if path is None:
        path = PACKAGED_WEIGHTS.get(loaded.name)
        if path is None:
            raise InputError(f"--scorer at2 needs --at2-weights for model {loaded.name} (weights "
                             "are learned per model): run `mtcabench at2-learn` first")
    w = load_weights(path)
    config = loaded.model.config
    shape = (int(config.num_hidden_layers), int(config.num_attention_heads))
    if (w.num_layers, w.num_heads) != shape:
        raise InputError(f"{path}: weights for {w.num_layers} layers x {w.num_heads} heads "
                         f"(model {w.model}), but {loaded.name} has {shape[0]} x {shape[1]}")
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
    return w.tensor(), f"{Path(path).name}@sha256:{digest}"


# --------------------------------------------------------------------------- learning


def _logit_prob(model, input_ids: list[int], rows: list[np.ndarray], store: int = 0) -> list[float]:
    """AT2's output per query: log p - log(1 - p), p the probability of the query's tokens
    (``store``: the input's first tokens are the conversation's shared prefix)."""
    last = max(int(r.max()) for r in rows if len(r))
    ids = np.asarray(input_ids[: last + 1], dtype=np.int64)
    union = np.unique(np.concatenate([r for r in rows if len(r)]))
    union = union[union > 0]  # the very first token has no prediction
    res = passes_for(model).forward(ids, logits_at=union - 1, reuse=int(union[0]) - 1,
                                    store=min(store, len(ids)))
    tok_lp = np.asarray(token_logprobs(res.logits, torch.as_tensor(ids[union],
                                                                   device=res.logits.device)))
    result = []
    for r in rows:
        lp = float(tok_lp[np.searchsorted(union, r[r > 0])].sum()) if len(r) else 0.0
        lp = min(lp, -1e-12)
        result.append(lp - float(np.log(-np.expm1(lp))))
    return result


def ablation_data(
    loaded: LoadedModel,
    conversations: list,
    spans_by_conversation: dict[str, list],
    *,
    masks: int = AT2_LEARN.masks,
    keep: float = AT2_LEARN.keep,
    seed: int = AT2_LEARN.seed,
    max_tokens: int | None = None,
    progress: bool = True,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per query: ``(features [masks, layers*heads], outputs [masks])`` as AT2 trains on."""
    limit = min(max_tokens or loaded.context_length, loaded.context_length)
    data: list[tuple[np.ndarray, np.ndarray]] = []
    rng = np.random.default_rng(seed)
    with progress_bar("at2 ablations", len(conversations) * (masks + 1),
                      enabled=progress) as bar:
        for conv in conversations:
            queries = [(s.span.turn, s.span.start, s.span.end)
                       for s in spans_by_conversation.get(conv.id, [])]
            queries += [(t.index, 0, len(t.text)) for t in conv.turns
                         if t.role is Role.ASSISTANT and t.text and t.index > 0]
            rendered = render_conversation(conv, loaded.tokenizer)
            full = rendered.full
            queries = [q for q in queries if full.span_tokens(*q)[1] <= limit
                       and full.span_tokens(*q)[1] > full.span_tokens(*q)[0]]
            if not queries:
                bar.advance(masks + 1)
                continue
            last = max(q[0] for q in queries)
            droppable = [i for i, s in enumerate(rendered.sentences)
                         if s.turn < last and conv.turns[s.turn].role is not Role.ASSISTANT]
            rows = [np.arange(*full.span_tokens(*q)) for q in queries]
            n_s = len(rendered.sentences)
            feats = query_features(loaded.model, full.input_ids, rows, full.token_sentence, n_s,
                                   with_heads=True, store=rendered.shared_prefix)
            hs = feats.head_sentence.flatten(1, 2).double().numpy()  # [Q, L*H, S]
            bar.advance()
            m = rng.random((masks, len(droppable))) < keep  # True: kept
            outputs = np.zeros((len(queries), masks))
            for j in range(masks):
                layout = rendered.layout(d for d, k in zip(droppable, m[j]) if not k)
                q_rows = [np.arange(*layout.span_tokens(*q)) for q in queries]
                # Only a layout that starts as the full one has the conversation's prefix.
                prefix = rendered.shared_prefix
                keeps = layout.input_ids[:prefix] == full.input_ids[:prefix]
                outputs[:, j] = _logit_prob(loaded.model, layout.input_ids, q_rows,
                                            store=prefix if keeps else 0)
                bar.advance()
            sign = (m.astype(np.float64) * 2 - 1)  # [masks, D]
            turns = np.array([rendered.sentences[d].turn for d in droppable])
            for qi, q in enumerate(queries):
                ctx = turns < q[0]  # only sentences before the query's turn can matter
                x = sign[:, ctx] @ hs[qi][:, np.asarray(droppable)[ctx]].T  # [masks, F]
                data.append((x, outputs[qi]))
    return data


def _pearson_loss(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    p = pred - pred.mean(dim=1, keepdim=True)
    t = target - target.mean(dim=1, keepdim=True)
    corr = (p * t).mean(1) / (p.pow(2).mean(1).sqrt() * t.pow(2).mean(1).sqrt() + 1e-8)
    return -corr.mean()


def mean_correlation(weights: np.ndarray, data: list[tuple[np.ndarray, np.ndarray]]) -> float | None:
    """Mean Pearson correlation between predicted and actual ablation outputs (None: no data)."""
    if not data:
        return None
    x = torch.as_tensor(np.stack([d[0] for d in data]))
    y = torch.as_tensor(np.stack([d[1] for d in data]))
    return float(-_pearson_loss(x @ torch.as_tensor(weights, dtype=x.dtype), y))


def fit_weights(
    data: list[tuple[np.ndarray, np.ndarray]], num_features: int, *,
    iterations: int = AT2_LEARN.iterations, lr: float = 1e-2, seed: int = AT2_LEARN.seed,
) -> np.ndarray:
    """Weights maximising the mean Pearson correlation (AT2's trainer), L1-normalised."""
    usable = [d for d in data if np.std(d[1]) > 1e-9 and np.abs(d[0]).sum() > 0]
    if not usable:
        raise InputError("no usable ablation data (every query's output was constant); "
                         "use more conversations or masks")
    torch.manual_seed(seed)
    x = torch.as_tensor(np.stack([d[0] for d in usable]), dtype=torch.float64)
    y = torch.as_tensor(np.stack([d[1] for d in usable]), dtype=torch.float64)
    # Features differ in scale by orders of magnitude between heads; scale them for Adam.
    scale = x.abs().mean(dim=(0, 1)).clamp_min(1e-12)
    w = torch.full((num_features,), 1.0 / num_features, dtype=torch.float64)
    w = (w * scale).requires_grad_(True)
    opt = torch.optim.Adam([w], lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=iterations)
    for _ in range(iterations):
        opt.zero_grad()
        loss = _pearson_loss(x @ (w / scale), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_([w], 1.0)
        opt.step()
        sched.step()
    out = (w / scale).detach().numpy()
    return out / max(np.abs(out).sum(), 1e-12)


def learn_weights(
    loaded: LoadedModel,
    conversations: list,
    spans_by_conversation: dict[str, list],
    out: str | Path,
    *,
    masks: int = AT2_LEARN.masks,
    keep: float = AT2_LEARN.keep,
    iterations: int = AT2_LEARN.iterations,
    heldout: float = AT2_LEARN.heldout,
    seed: int = AT2_LEARN.seed,
    max_tokens: int | None = None,
    progress: bool = True,
) -> At2Weights:
    """Learn AT2 weights for ``loaded`` and write them to ``out`` (atomically)."""
    if not conversations:
        raise InputError("at2-learn needs at least one conversation")
    order = np.random.default_rng(seed).permutation(len(conversations))
    n_held = round(len(conversations) * heldout) if len(conversations) > 1 else 0
    held_ids = {conversations[i].id for i in order[:n_held]}
    train_c = [c for c in conversations if c.id not in held_ids]
    held_c = [c for c in conversations if c.id in held_ids]
    kw = dict(masks=masks, keep=keep, seed=seed, max_tokens=max_tokens, progress=progress)
    train = ablation_data(loaded, train_c, spans_by_conversation, **kw)
    held = ablation_data(loaded, held_c, spans_by_conversation, **kw) if held_c else []
    config = loaded.model.config
    n_l, n_h = int(config.num_hidden_layers), int(config.num_attention_heads)
    w = fit_weights(train, n_l * n_h, iterations=iterations, seed=seed)
    uniform = np.full(n_l * n_h, 1.0 / (n_l * n_h))
    result = At2Weights(
        model=loaded.name,
        num_layers=n_l,
        num_heads=n_h,
        weights=w.reshape(n_l, n_h).tolist(),
        training={
            "conversations": len(train_c),
            "heldout_conversations": len(held_c),
            # Which ones: a study checks that none of them is one it tests on.
            "conversation_ids": [c.id for c in train_c],
            "heldout_conversation_ids": [c.id for c in held_c],
            "queries": len(train),
            "masks": masks,
            "keep": keep,
            "iterations": iterations,
            "seed": seed,
            "train_correlation_uniform": mean_correlation(uniform, train),
            "train_correlation_learned": mean_correlation(w, train),
            "heldout_correlation_uniform": mean_correlation(uniform, held),
            "heldout_correlation_learned": mean_correlation(w, held),
        },
        created_at=datetime.now(timezone.utc),
    )
    with atomic_write(out) as fh:
        fh.write(json.dumps(result.model_dump(mode="json"), indent=1) + "\n")
    return result
