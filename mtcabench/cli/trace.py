"""`mtcabench trace`, `trace-merge` and `at2-learn`: the reference evaluator's commands.

Every default is read from the evaluator (the options shared with ``explain`` are declared in
:mod:`mtcabench.cli._evaluator`, and the base scorers' own options are generated there from
their settings), whose settings import no torch, so `mtcabench --help` and
runs of model-free methods stay light; torch is imported only when a command runs a model.
"""

from __future__ import annotations

from pathlib import Path

import typer

from mtcabench.cli import _evaluator as ev
from mtcabench.errors import InputError, needs_extra
from mtcabench.evaluate import AT2_LEARN, RAY, TraceSettings
from mtcabench.progress import err_console
from mtcabench.terminal import shown

_TRACE = TraceSettings()
#: The placeholder of ``--out`` that names one file per method.
METHOD_FIELD = "{method}"


def method_outputs(methods: list[str], outs: list[Path]) -> dict[str, Path]:
    """The submission each method writes: one ``--out`` per ``--method`` (paired in order), or
    one ``--out`` holding ``{method}``, which becomes each method's name."""
    for m in methods:
        if methods.count(m) > 1:
            raise InputError(f"--method {m} given twice")
    if len(outs) == 1 and METHOD_FIELD in str(outs[0]):
        return {m: Path(str(outs[0]).replace(METHOD_FIELD, m)) for m in methods}
    if len(outs) != len(methods):
        raise InputError(
            f"{len(methods)} methods ({', '.join(methods)}) and {len(outs)} --out: give one --out "
            f"per --method, in the same order, or one --out with {METHOD_FIELD} in it "
            f"(e.g. --out runs/{METHOD_FIELD}.jsonl)")
    return dict(zip(methods, outs))


def trace(
    benchmark: str = typer.Option(..., "--benchmark", "-b",
                                  help="Benchmark folder (or release folder / Hub id)."),
    out: list[Path] = typer.Option(..., "--out", "-o", help="Submission file to write (JSONL): "
                                   "one per --method, in the same order, or one with "
                                   f"{METHOD_FIELD} in its name (e.g. runs/{METHOD_FIELD}.jsonl)."),
    method: list[str] = ev.method("repeat to run several in one pass (one submission each)."),
    scorer: str = ev.scorer(),
    model: str = ev.model(),
    top_k: int = ev.top_k(),
    threshold: float = ev.threshold(),
    d_max: int = ev.d_max(),
    alpha: float = ev.alpha(),
    match_values: bool = ev.match_values(),
    open_system: float | None = ev.open_system(),
    named_values: bool = ev.named_values(),
    value_origin: bool = ev.value_origin(),
    turn_aggregate: str = typer.Option(_TRACE.turn_aggregate,
                                       help="Sentence to turn scores: max or sum."),
    max_tokens: int | None = ev.max_tokens(
        "a span past it is attributed in a context window of the conversation (earlier "
        "turns shortened; docs/evaluate.md)."),
    window_room: float = ev.window_room(),
    seed: int = ev.seed(),
    verify_edges: bool = ev.verify_edges(),
    shard: str | None = typer.Option(None, help="K/N: trace only shard K of N (numbered from "
                                     "1, by conversation); join with `trace-merge`."),
    device: str = ev.device(),
    dtype: str = ev.dtype(),
    ray: bool = typer.Option(False, "--ray", help="Run on Ray Data (extra `ray`)."),
    ray_address: str | None = typer.Option(None, help="Ray cluster address (default: local)."),
    ray_workers: int = typer.Option(RAY.workers, help="Ray: model replicas (actors)."),
    ray_gpus_per_worker: float = typer.Option(RAY.gpus_per_worker, help="Ray: GPUs per worker."),
    scorer_settings: dict | None = None,
) -> None:
    """Attribute every benchmark span with one or more methods; write one submission each."""
    if ray and shard:
        raise InputError("--shard and --ray exclude each other (Ray spreads the work itself)")
    outputs = method_outputs(method, out)
    settings = TraceSettings(
        search=ev.search_settings(top_k, threshold, d_max, alpha, match_values, open_system,
                                  named_values, value_origin),
        turn_aggregate=turn_aggregate, max_tokens=max_tokens, window_room=window_room,
        seed=seed,
        scorers=scorer_settings or {}, verify_edges=verify_edges,
    )
    with needs_extra("the evaluator"):
        if ray:
            from mtcabench.evaluate import trace_with_ray

            report = trace_with_ray(benchmark, outputs, model=model, scorer=scorer,
                                    settings=settings, workers=ray_workers,
                                    gpus_per_worker=ray_gpus_per_worker, device=device,
                                    dtype=dtype, address=ray_address)
        else:
            from mtcabench.evaluate import trace_benchmark

            report = trace_benchmark(benchmark, outputs, model=model, scorer=scorer,
                                     settings=settings, shard=shard, device=device, dtype=dtype)
    for m, path in report.outputs.items():
        windowed = report.windowed_by_method.get(m, 0)
        err_console.print(f"wrote {report.spans} spans ({report.skipped_by_method[m]} skipped"
                          + (f", {windowed} in a context window" if windowed else "")
                          + f") to {shown(path)} ({shown(m)})")
    if report.windowed:
        shares = ", ".join(f"{d} {w}/{n}" for d, (w, n) in report.windowed_by_domain.items() if w)
        err_console.print(f"spans past the model's context, attributed in a context window: "
                          f"{shares}", markup=False)
    err_console.print(f"{report.conversations} conversations, {report.forward_passes} forward "
                      f"passes, {report.wall_s:.1f} s")


def trace_merge(
    shards: list[Path] = typer.Argument(..., help="Shard submissions (all N of them)."),
    out: Path = typer.Option(..., "--out", "-o", help="Merged submission to write (not one of "
                             "the shards)."),
) -> None:
    """Join the submissions of `trace --shard K/N` runs into one."""
    from mtcabench.evaluate import merge_shards

    n = merge_shards(shards, out)
    err_console.print(f"merged {len(shards)} shards: {n} spans -> {shown(out)}")


def at2_learn(
    benchmark: str = typer.Option(..., "--benchmark", "-b", help="Benchmark whose conversations "
                                  "(and spans) give the ablation data."),
    out: Path = typer.Option(..., "--out", "-o", help="Weights file to write (JSON)."),
    model: str = ev.model(),
    conversations: int | None = typer.Option(None, help="Use at most this many conversations."),
    masks: int = typer.Option(AT2_LEARN.masks, help="Random ablation masks per conversation "
                              "(forward passes)."),
    keep: float = typer.Option(AT2_LEARN.keep, help="Probability that an ablation keeps a "
                               "sentence."),
    iterations: int = typer.Option(AT2_LEARN.iterations, help="Optimiser steps."),
    heldout: float = typer.Option(AT2_LEARN.heldout, help="Fraction of conversations held out "
                                  "for reporting."),
    max_tokens: int | None = typer.Option(_TRACE.max_tokens, help="Token limit (default: model "
                                          "context)."),
    seed: int = typer.Option(AT2_LEARN.seed, help="Seed of masks, split and optimiser."),
    device: str = ev.device(),
) -> None:
    """Learn AT2's per-head weights for a model from ablations on the benchmark's conversations."""
    from mtcabench.evaluate import learn_at2_from_benchmark

    with needs_extra("the evaluator"):
        result = learn_at2_from_benchmark(
            benchmark, out, model=model, conversations=conversations, masks=masks, keep=keep,
            iterations=iterations, heldout=heldout, max_tokens=max_tokens, seed=seed,
            device=device)
    t = result.training
    err_console.print(
        f"wrote {shown(out)}: {t['queries']} queries from {t['conversations']} conversations; mean "
        f"correlation on training data {t['train_correlation_uniform']:.3f} (uniform) -> "
        f"{t['train_correlation_learned']:.3f} (learned)")


def register(app: typer.Typer) -> None:
    app.command("trace")(ev.with_scorer_options(trace))
    app.command("trace-merge")(trace_merge)
    app.command("at2-learn")(at2_learn)
