"""`mtcabench trace`, `trace-merge` and `at2-learn`: the reference evaluator's commands."""

from __future__ import annotations

from pathlib import Path

import typer

from mtcabench.errors import MtcaError
from mtcabench.progress import err_console


def _evaluator():
    """The evaluator package, or one clear line when its extra is not installed."""
    try:
        import mtcabench.evaluate as evaluate
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] in {"torch", "transformers", "gguf", "accelerate"}:
            raise MtcaError(f"the evaluator needs {exc.name}, which is not installed: "
                            "pip install 'mtcabench[eval]'") from None
        raise
    return evaluate

# Defaults live in mtcabench.evaluate._trace.TraceSettings; repeated here as literals so that
# `mtcabench --help` does not import torch. A test checks that the two agree.
DEFAULTS = dict(top_k=3, threshold=0.05, d_max=6, alpha=0.5, turn_aggregate="max", seed=0,
                attntrace_top_tokens=5, attntrace_subsamples=30, attntrace_keep=0.4)


def trace(
    benchmark: str = typer.Option(..., "--benchmark", "-b",
                                  help="Benchmark folder (or release folder / Hub id)."),
    out: Path = typer.Option(..., "--out", "-o", help="Submission file to write (JSONL)."),
    method: str = typer.Option("tokengeist", help="tokengeist or flat."),
    scorer: str = typer.Option("avg-attention", help="Base scorer: avg-attention, attntrace, at2."),
    model: str = typer.Option("smollm2-135m-instruct", help="Model: the default SmolLM2 "
                              "(from its GGUF), a .gguf file, a model folder or a Hub id."),
    top_k: int = typer.Option(DEFAULTS["top_k"], help="Turns kept per node (highest scores)."),
    threshold: float = typer.Option(DEFAULTS["threshold"], help="Least turn share (scores are "
                                    "normalised to sum to 1 over the preceding turns) to keep."),
    d_max: int = typer.Option(DEFAULTS["d_max"], help="Tokengeist: most content edges on a "
                              "path from the target."),
    alpha: float = typer.Option(DEFAULTS["alpha"], help="Relative pruning: keep an edge scoring "
                                "at least alpha times the best edge out of the same node."),
    turn_aggregate: str = typer.Option(DEFAULTS["turn_aggregate"],
                                       help="Sentence to turn scores: max or sum."),
    max_tokens: int | None = typer.Option(None, help="Token limit (default: the model's "
                                             "context); spans beyond it are recorded as skipped."),
    seed: int = typer.Option(DEFAULTS["seed"], help="Seed of AttnTrace's context subsampling."),
    attntrace_top_tokens: int = typer.Option(DEFAULTS["attntrace_top_tokens"],
                                             help="AttnTrace: top-K tokens averaged per sentence."),
    attntrace_subsamples: int = typer.Option(DEFAULTS["attntrace_subsamples"],
                                             help="AttnTrace: context subsamples (forward passes)."),
    attntrace_keep: float = typer.Option(DEFAULTS["attntrace_keep"],
                                         help="AttnTrace: fraction of sentences kept per subsample."),
    at2_weights: Path | None = typer.Option(None, help="AT2 per-head weights (default: the "
                                               "shipped file for the default model)."),
    shard: str | None = typer.Option(None, help="K/N: trace only shard K of N (numbered from "
                                        "1, by conversation); join with `trace-merge`."),
    device: str = typer.Option("auto", help="auto, cpu, cuda, cuda:1, ..."),
    dtype: str = typer.Option("auto", help="auto (float32 on CPU, bfloat16 on GPU), float32, "
                              "bfloat16, float16."),
    ray: bool = typer.Option(False, "--ray", help="Run on Ray Data (extra `ray`)."),
    ray_address: str | None = typer.Option(None, help="Ray cluster address (default: local)."),
    ray_workers: int = typer.Option(1, help="Ray: model replicas (actors)."),
    ray_gpus_per_worker: float = typer.Option(0, help="Ray: GPUs per worker."),
) -> None:
    """Attribute every benchmark span with Tokengeist or the flat baseline; write a submission."""
    from mtcabench.errors import InputError

    evaluate = _evaluator()
    TraceSettings, trace_benchmark = evaluate.TraceSettings, evaluate.trace_benchmark

    if ray and shard:
        raise InputError("--shard and --ray exclude each other (Ray spreads the work itself)")
    settings = TraceSettings(
        top_k=top_k, threshold=threshold, d_max=d_max, alpha=alpha,
        turn_aggregate=turn_aggregate, max_tokens=max_tokens, seed=seed,
        attntrace_top_tokens=attntrace_top_tokens, attntrace_subsamples=attntrace_subsamples,
        attntrace_keep=attntrace_keep, at2_weights=str(at2_weights) if at2_weights else None,
    )
    if ray:
        trace_with_ray = _evaluator().trace_with_ray

        report = trace_with_ray(benchmark, {method: out}, model=model, scorer=scorer,
                                settings=settings, workers=ray_workers,
                                gpus_per_worker=ray_gpus_per_worker, device=device, dtype=dtype,
                                address=ray_address)
    else:
        report = trace_benchmark(benchmark, {method: out}, model=model, scorer=scorer,
                                 settings=settings, shard=shard, device=device, dtype=dtype)
    err_console.print(
        f"wrote {report.spans} spans ({report.skipped} skipped) to {out}: "
        f"{report.conversations} conversations, {report.forward_passes} forward passes, "
        f"{report.wall_s:.1f} s")


def trace_merge(
    shards: list[Path] = typer.Argument(..., help="Shard submissions (all N of them)."),
    out: Path = typer.Option(..., "--out", "-o", help="Merged submission to write."),
) -> None:
    """Join the submissions of `trace --shard K/N` runs into one."""
    merge_shards = _evaluator().merge_shards

    n = merge_shards(shards, out)
    err_console.print(f"merged {len(shards)} shards: {n} spans -> {out}")


def at2_learn(
    benchmark: str = typer.Option(..., "--benchmark", "-b", help="Benchmark whose conversations "
                                  "(and spans) give the ablation data."),
    out: Path = typer.Option(..., "--out", "-o", help="Weights file to write (JSON)."),
    model: str = typer.Option("smollm2-135m-instruct", help="Model to learn the weights for."),
    conversations: int | None = typer.Option(None, help="Use at most this many conversations."),
    masks: int = typer.Option(32, help="Random ablation masks per conversation (forward passes)."),
    keep: float = typer.Option(0.5, help="Probability that an ablation keeps a sentence."),
    iterations: int = typer.Option(1000, help="Optimiser steps."),
    heldout: float = typer.Option(0.2, help="Fraction of conversations held out for reporting."),
    max_tokens: int | None = typer.Option(None, help="Token limit (default: model context)."),
    seed: int = typer.Option(0, help="Seed of masks, split and optimiser."),
    device: str = typer.Option("auto", help="auto, cpu, cuda, ..."),
) -> None:
    """Learn AT2's per-head weights for a model from ablations on the benchmark's conversations."""
    from mtcabench.benchmark import load_benchmark
    evaluate = _evaluator()
    learn_at2_weights, load_model = evaluate.learn_at2_weights, evaluate.load_model
    from mtcabench.evaluate._trace import group_spans

    bench = load_benchmark(benchmark)
    by_conv = group_spans(bench)
    ids = list(by_conv) + [c for c in bench.conversations if c not in by_conv]
    convs = [bench.conversations[c] for c in ids[:conversations]]
    result = learn_at2_weights(load_model(model, device=device), convs, by_conv, out, masks=masks,
                               keep=keep, iterations=iterations, heldout=heldout, seed=seed,
                               max_tokens=max_tokens)
    t = result.training
    err_console.print(
        f"wrote {out}: {t['queries']} queries from {t['conversations']} conversations; mean "
        f"correlation on training data {t['train_correlation_uniform']:.3f} (uniform) -> "
        f"{t['train_correlation_learned']:.3f} (learned)")


def register(app: typer.Typer) -> None:
    app.command("trace")(trace)
    app.command("trace-merge")(trace_merge)
    app.command("at2-learn")(at2_learn)
