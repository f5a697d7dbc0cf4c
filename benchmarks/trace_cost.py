"""The cost of `trace` at benchmark scale: per conversation, against one plain forward pass over
the same tokens, side by side in one run, and where trace's time goes.

For each conversation of the run (see below), inside the real runner
(:func:`~mtcabench.evaluate.trace_benchmark`, Tokengeist and flat, the default scorer and
settings, every conversation once for both methods), measured one beside the other (their
order alternates from one conversation to the next):

(a) **one plain pass**: the model over the conversation's rendered tokens up to its last span's
    end (what the trace needs; capped at the model's context), the model's own sdpa attention,
    no hook, no prefix reused: the least any attribution needs;
(b) **trace**: the runner's unit of work for the conversation (render, context windows, the
    sink probe, the hooked pass, turn shares, both methods' search, the entries), its model
    calls and the tokens they computed and read from the prefix cache.

Printed: one line per conversation, then per conversation on average: (a), (b) and b/a; the
same with the runner's own costs around the conversations (checks, headers, writing the
submissions) and with the model load added (a process loads it once: a command's cost from
outside); where (b)'s time goes (model forward, the attention rows the hooks recompute, the
prefix step, the sink probe, rendering, context windows, scores to shares, the search, I/O);
peak resident memory; and whether every entry equals those of ``--compare`` (a file that
``--save`` wrote, e.g. at another commit): edges equal, scores within 1e-5.

Each ``--repeats`` starts with the pass service emptied (no prefix, no sink probe result kept),
as a new process would. Which conversations:

- default: the held-out conversations (``--split test``: the split rule's test tasks, trials 0
  and 1) of the real TauBench airline runs (gpt-4o-airline.json, read by the reader that
  ``mtcabench ingest taubench`` runs), in file order, two spans each (the first sentence of the
  last two answers);
- ``--release PATH``: the conversations of ``--split`` in a release, with all their spans (values
  and claims), of ``--source``/``--domain`` (``all``: every one).

``--ids FILE`` keeps only the conversations FILE names, one id per line (e.g. those a cost
log records as windowed, measured again after a change to the windows).
``--conversations N`` keeps the first N (``--shortest``: the N shortest); without it, all of them
(the whole split of a release: hours on a CPU). ``--stride K`` first keeps every K-th
conversation in the order read (a systematic sample of a whole split, every domain and agent
in its share).

**A whole split over several runs** (``--log FILE``): each conversation's row (its times,
calls, tokens, domain, the process's largest resident memory so far) is appended to FILE as it
is measured, and a rerun leaves out the conversations FILE holds; ``--log FILE --summary``
prints the figures of what it holds, no model (each run starts with an empty prefix cache, as a
new process does: the summary counts the processes):

    nohup nice -n 19 .venv/bin/python benchmarks/trace_cost.py --release \\
        runs/benchmark/release/2.1.0 --split test --source all --domain all \\
        --log benchmarks/results/cost/test-2.1.jsonl > runs/cost.log 2>&1 &
    python benchmarks/trace_cost.py --release runs/benchmark/release/2.1.0 --split test \\
        --source all --domain all --log benchmarks/results/cost/test-2.1.jsonl --summary

**On a GPU, at the size of a real agent's model** (``--architecture``): no weights of 7-8B can
reach the lent machine, and cost does not depend on weight values, so the model is a randomly
initialised one of that architecture (:data:`ARCHITECTURES`: Qwen2.5-7B's and Llama-3.1-8B's
layer, head and width counts; bfloat16 on a GPU), with the default model's tokenizer and chat
template (its 49,152-token vocabulary in place of theirs: the embedding is a lookup and the
pass computes the last position's logits only, so the difference is small). The graphs are
meaningless; the time and memory are those of the architecture:

    python benchmarks/trace_cost.py --architecture qwen2.5-7b --device cuda --conversations 8
    python benchmarks/trace_cost.py --architecture tiny --conversations 2   # a CPU smoke run

    python benchmarks/trace_cost.py --conversations 4 --shortest --save runs/cost-before.json
    python benchmarks/trace_cost.py --conversations 4 --shortest --compare runs/cost-before.json
    python benchmarks/trace_cost.py --release runs/benchmark/release/2.1.0 --split test \\
        --source all --domain all
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from contextlib import contextmanager
from functools import wraps
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]  # this checkout's mtcabench

from _memory import PeakRss, rss_mib  # noqa: E402
from tests.support.paths import taubench_airline_path  # noqa: E402
from tests.support.smoke import answer_spans  # noqa: E402

from mtcabench.benchmark import Benchmark, load_benchmark  # noqa: E402
from mtcabench.benchmark import split_of  # noqa: E402
from mtcabench.errors import InputError  # noqa: E402
from mtcabench.ingest import read_taubench  # noqa: E402
from mtcabench.studies import append_cost_row, cost_log_rows, cost_summary  # noqa: E402

TOL = 1e-5
METHODS = ("tokengeist", "flat")

#: Architectures ``--architecture`` builds with random weights: transformers config class and
#: its sizes (from the published configs), and the context the run gives it.
ARCHITECTURES = {
    "qwen2.5-7b": ("Qwen2Config", dict(
        hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
        num_key_value_heads=4, rms_norm_eps=1e-6, rope_theta=1_000_000.0,
        max_position_embeddings=32768, tie_word_embeddings=False), 32768),
    "llama-3.1-8b": ("LlamaConfig", dict(
        hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
        num_key_value_heads=8, rms_norm_eps=1e-5, rope_theta=500_000.0,
        max_position_embeddings=131072, tie_word_embeddings=False), 32768),
    # a few MB: runs the same code on a CPU in seconds (a smoke run of the script)
    "tiny": ("LlamaConfig", dict(
        hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=8192), 8192),
}


# --------------------------------------------------------------------------- the conversations


def held_out(args) -> Benchmark:
    """The run's conversations and spans (see the module docstring)."""
    if args.release:
        bench = load_benchmark(args.release)
        keep = {cid for cid, c in bench.conversations.items()
                if split_of(cid) == args.split
                and args.source in ("all", c.source) and args.domain in ("all", c.domain)}
        spans = [s for s in bench.spans if s.conversation_id in keep]
        return Benchmark({c: bench.conversations[c] for c in keep}, spans, bench.origin)
    path = taubench_airline_path()
    if path is None:
        raise SystemExit("error: the TauBench airline runs (gpt-4o-airline.json) are not here: "
                         "set MTCABENCH_TAUBENCH_AIRLINE, run `mtcabench raw fetch`, or give "
                         "--release")
    convs, spans = {}, []
    for conv in read_taubench(path):
        if split_of(conv.id) != args.split:
            continue
        got = answer_spans(conv, args.spans)
        if got:
            convs[conv.id] = conv
            spans += got
    return Benchmark(convs, spans, str(path))


def random_model(name: str, device: str):
    """A randomly initialised model of :data:`ARCHITECTURES` ``name`` on ``device``, with the
    default model's tokenizer, as the evaluator takes a loaded model."""
    import torch
    import transformers

    from mtcabench.evaluate import LoadedModel, load_model

    kind, sizes, context = ARCHITECTURES[name]
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu" and name != "tiny":
        raise SystemExit(f"error: --architecture {name} holds billions of weights: give it a "
                         "GPU (--device cuda), or try the script with --architecture tiny")
    tokenizer = load_model(device="cpu").tokenizer
    config = getattr(transformers, kind)(vocab_size=len(tokenizer), **sizes)
    config._attn_implementation = "sdpa"
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    torch.manual_seed(0)
    with torch.device(device):
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=dtype)
    model.eval().requires_grad_(False)
    return LoadedModel(model=model, tokenizer=tokenizer, name=f"random {name}",
                       context_length=context, chat_template=tokenizer.chat_template)


def pick(bench: Benchmark, n: int | None, shortest: bool, tokenizer, stride: int = 1,
         only: set[str] | None = None) -> Benchmark:
    """The conversations ``only`` names (all: None), every ``stride``-th of them, then the first
    ``n`` (the ``n`` shortest up to their last span)."""
    by_conv = bench.spans_by_conversation()
    if only is not None:
        if missing := only - set(by_conv):
            raise SystemExit(f"error: --ids: {len(missing)} of the conversations named are "
                             "not in the selection (--release, --split, --source, --domain), "
                             f"e.g. {sorted(missing)[0]!r}")
        by_conv = {c: v for c, v in by_conv.items() if c in only}
    order = list(by_conv)[::stride]
    if shortest:
        order.sort(key=lambda c: sum(len(t.text) for t in
                                     bench.conversations[c].turns[:last_turn(by_conv[c]) + 1]))
    keep = order[:n] if n else order
    spans = [s for c in keep for s in by_conv[c]]
    return Benchmark({c: bench.conversations[c] for c in keep}, spans, bench.origin)


def last_turn(spans) -> int:
    return max(s.span.turn for s in spans)


def plain_ids(loaded, conversation, spans) -> list[int]:
    """The tokens a plain pass runs over: the rendering up to the last span's end, capped at
    the model's context."""
    from mtcabench.evaluate import render_conversation

    full = render_conversation(conversation, loaded.tokenizer, upto=last_turn(spans)).full
    end = max(full.span_tokens(s.span.turn, s.span.start, s.span.end)[1] for s in spans)
    return list(full.input_ids[: max(1, min(end, loaded.context_length))])


# --------------------------------------------------------------------------- the profile


class Profile:
    """Wall time by category, each second to the innermost category running (self time)."""

    def __init__(self):
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.stack: list[str] = []
        self.last = 0.0
        self.enabled = True

    @contextmanager
    def section(self, category: str, keep: tuple[str, ...] = ()):
        """Time the block under ``category``; inside one of ``keep``, under that one."""
        if not self.enabled or (self.stack and self.stack[-1] in keep):
            yield
            return
        now = time.perf_counter()
        if self.stack:
            self.seconds[self.stack[-1]] += now - self.last
        self.stack.append(category)
        self.calls[category] += 1
        self.last = now
        try:
            yield
        finally:
            now = time.perf_counter()
            self.seconds[self.stack.pop()] += now - self.last
            self.last = now

    def wrap(self, fn: Callable, category: str, keep: tuple[str, ...] = ()) -> Callable:
        @wraps(fn)
        def timed(*args, **kwargs):
            with self.section(category, keep):
                return fn(*args, **kwargs)
        return timed


SINK = "sink probe"
FORWARD = "model forward"
ROWS = "attention rows (hooks, after the pass)"


def instrument(profile: Profile) -> Callable[[], None]:
    """Patch the evaluator's stages with timers; returns the function that undoes it."""
    import mtcabench.evaluate.attribution._attention as attention
    import mtcabench.evaluate.attribution._engine as engine
    import mtcabench.evaluate.attribution._passes as passes
    import mtcabench.evaluate.methods._conversation as conversation
    import mtcabench.evaluate.runners._trace as runner
    import mtcabench.io as io

    undo: list[tuple[object, str, object]] = []

    def patch(owner, name, new):
        undo.append((owner, name, getattr(owner, name)))
        setattr(owner, name, new)

    forward = passes.Passes.forward

    def timed_forward(self, input_ids, **kwargs):
        on_layer = kwargs.get("on_layer")
        if on_layer is not None:
            kwargs["on_layer"] = profile.wrap(on_layer, ROWS, keep=(SINK,))
        with profile.section(FORWARD, keep=(SINK,)):
            return forward(self, input_ids, **kwargs)

    patch(passes.Passes, "forward", timed_forward)
    patch(passes.Passes, "_prefix", profile.wrap(passes.Passes._prefix, "prefix step",
                                                 keep=(SINK,)))
    patch(attention, "sink_positions", profile.wrap(attention.sink_positions, SINK))
    # query_features's own time (its hooks' and its chunks' after the pass) is the rows'; its
    # pass is the model's, its sink probe the probe's.
    patch(attention, "query_features", profile.wrap(attention.query_features, ROWS))
    patch(conversation, "render_conversation",
          profile.wrap(conversation.render_conversation, "render (tokenise, sentences)"))
    patch(conversation, "plan_windows", profile.wrap(conversation.plan_windows, "context windows"))
    patch(conversation, "span_graph", profile.wrap(conversation.span_graph, "search (graphs)"))
    patch(engine.Attributor, "attribute",
          profile.wrap(engine.Attributor.attribute, "scores to shares"))
    patch(runner, "trace_conversation",
          profile.wrap(runner.trace_conversation, "entries, checks"))
    for owner, name in ((runner, "plan_run"), (runner, "finish_run"), (runner, "make_headers"),
                        (io.RecordAppender, "write"), (runner, "_read_partial")):
        patch(owner, name, profile.wrap(getattr(owner, name), "I/O (plan, headers, writes)"))

    def restore():
        for owner, name, old in reversed(undo):
            setattr(owner, name, old)

    return restore


# --------------------------------------------------------------------------- the run


def run_once(loaded, bench: Benchmark, profile: Profile, folder: Path,
             log: Path | None = None) -> dict:
    """One run of the runner over ``bench``, a plain pass beside each conversation; each
    conversation's row also appended to ``log`` as it is measured."""
    import mtcabench.evaluate.runners._trace as runner
    from mtcabench.evaluate import forward, passes_for, trace_benchmark

    service = passes_for(loaded.model)
    service.clear()  # as a new process: no prefix, no sink probe kept
    rows: list[dict] = []
    started = time.strftime("%Y-%m-%dT%H:%M:%S")  # which rows one process measured
    traced = runner.trace_conversation  # (instrumented)

    def side_by_side(attributor, conversation, spans, methods, settings, naive=False):
        profile.enabled = False
        t0 = time.perf_counter()
        ids = plain_ids(loaded, conversation, spans)
        ids_s = time.perf_counter() - t0
        profile.enabled = True

        def plain() -> float:
            profile.enabled = False
            try:
                t0 = time.perf_counter()
                forward(loaded.model, ids)  # the pass service, no prefix reused
                return time.perf_counter() - t0
            finally:
                profile.enabled = True

        before = (attributor.forward_passes, attributor.model_tokens, attributor.reused_tokens)
        first_plain = len(rows) % 2 == 0
        plain_s = plain() if first_plain else None
        t0 = time.perf_counter()
        result = traced(attributor, conversation, spans, methods, settings, naive=naive)
        trace_s = time.perf_counter() - t0
        if not first_plain:
            plain_s = plain()
        rows.append({
            "conversation": conversation.id, "spans": len(spans), "tokens": len(ids),
            "plain_s": plain_s, "trace_s": trace_s, "ids_s": ids_s,
            "calls": attributor.forward_passes - before[0],
            "computed": attributor.model_tokens - before[1],
            "reused": attributor.reused_tokens - before[2],
            "windowed": result.windowed, "skipped": result.skipped,
        })
        if log is not None:
            append_cost_row(log, {**rows[-1], "domain": conversation.domain, "process": started,
                             "max_rss_mib": round(resource.getrusage(
                                 resource.RUSAGE_SELF).ru_maxrss / 1024)})
        return result

    outputs = {m: folder / f"{m}.jsonl" for m in METHODS}
    for p in outputs.values():
        p.unlink(missing_ok=True)
    runner.trace_conversation = side_by_side
    try:
        with PeakRss(interval=0.05) as mem:
            t0 = time.perf_counter()
            report = trace_benchmark(bench, outputs, model=loaded, progress=False)
            wall = time.perf_counter() - t0
    finally:
        runner.trace_conversation = traced
    return {"rows": rows, "wall_s": wall, "peak_above_mib": mem.above, "peak_mib": mem.peak,
            "forward_passes": report.forward_passes, "outputs": outputs}


def entries(outputs: dict[str, Path]) -> dict[str, dict[str, dict]]:
    """Per method, per span id, its entry as written."""
    out = {}
    for m, path in outputs.items():
        lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        out[m] = {e["span_id"]: e for e in lines if e.get("kind") != "header" and "span_id" in e}
    return out


def differences(a: dict, b: dict) -> list[str]:
    """Where two runs' entries differ: edges, skips or windows, or a score (edge or evidence)
    by more than TOL."""
    out = []

    def close(x, y) -> bool:
        return (x is None) == (y is None) and (x is None or abs(x - y) <= TOL)

    for m in sorted(set(a) | set(b)):
        ea, eb = a.get(m, {}), b.get(m, {})
        if set(ea) != set(eb):
            out.append(f"{m}: spans differ ({len(set(ea) ^ set(eb))})")
        for sid in sorted(set(ea) & set(eb)):
            x, y = ea[sid], eb[sid]
            if (x.get("skipped"), x.get("window")) != (y.get("skipped"), y.get("window")):
                out.append(f"{m} {sid}: skipped/window differ")
                continue
            xe, ye = x.get("edges") or [], y.get("edges") or []
            if [(e["child"], e["parent"]) for e in xe] != [(e["child"], e["parent"]) for e in ye]:
                out.append(f"{m} {sid}: edges differ")
                continue
            for e, f in zip(xe, ye, strict=True):
                xs, ys = e.get("sentences") or [], f.get("sentences") or []
                if not close(e.get("score"), f.get("score")) or len(xs) != len(ys) or any(
                        (s["start"], s["end"]) != (t["start"], t["end"])
                        or not close(s["score"], t["score"]) for s, t in zip(xs, ys)):
                    out.append(f"{m} {sid}: edge {e['child']}->{e['parent']} score or "
                               "evidence differs")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--conversations", type=int, help="the first N (default: all)")
    ap.add_argument("--shortest", action="store_true", help="the N shortest instead")
    ap.add_argument("--stride", type=int, default=1, help="every K-th conversation first "
                    "(a systematic sample of a split)")
    ap.add_argument("--ids", type=Path, help="only the conversations this file names, one id "
                    "per line (e.g. those a --log records as windowed)")
    ap.add_argument("--spans", type=int, default=2, help="without --release: answer spans per "
                    "conversation")
    ap.add_argument("--release", type=Path, help="a release (all its spans of the split)")
    ap.add_argument("--split", choices=("train", "dev", "test"), default="test")
    ap.add_argument("--source", default="taubench", help="with --release (all: every source)")
    ap.add_argument("--domain", default="airline", help="with --release (all: every domain)")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--threads", type=int, help="torch's CPU threads (default: torch's own)")
    ap.add_argument("--save", type=Path, help="write the entries here (for --compare)")
    ap.add_argument("--compare", type=Path, help="entries of an earlier --save to compare with")
    ap.add_argument("--out", type=Path, help="keep the submissions in this folder")
    ap.add_argument("--architecture", choices=sorted(ARCHITECTURES), help="a randomly "
                    "initialised model of this architecture instead of the default model "
                    "(cost at a real agent's model size; the graphs are meaningless)")
    ap.add_argument("--log", type=Path, help="append each conversation's row here as it is "
                    "measured, and leave out the conversations it holds (a whole split over "
                    "several runs)")
    ap.add_argument("--summary", action="store_true", help="with --log: the figures of the "
                    "rows it holds, no model (with --release: against the whole selection)")
    args = ap.parse_args()
    if args.stride < 1:
        raise SystemExit("error: --stride takes a whole number of at least 1")
    if args.summary:
        if args.log is None:
            raise SystemExit("error: --summary reads a --log")
        selected = (len(pick(held_out(args), args.conversations, False, None, args.stride)
                        .spans_by_conversation()) if args.release else None)
        print(cost_summary(cost_log_rows(args.log), selected))
        return 0
    only = None
    if args.ids is not None:
        try:
            only = set(args.ids.read_text(encoding="utf-8").split())
        except (OSError, UnicodeDecodeError) as exc:
            raise SystemExit(f"error: --ids {args.ids}: cannot be read ({exc}); give a text "
                             "file of conversation ids, one per line") from None
        if not only:
            raise SystemExit(f"error: --ids {args.ids} names no conversation")
    if args.log is not None and args.repeats != 1:
        raise SystemExit("error: --log records one measure per conversation: no --repeats")

    t0 = time.perf_counter()
    import torch  # noqa: F401 - the imports a command pays for, timed with the load

    from mtcabench.evaluate import load_model

    imports_s = time.perf_counter() - t0
    if args.threads:
        torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    loaded = (random_model(args.architecture, args.device) if args.architecture
              else load_model(device=args.device))
    load_s = time.perf_counter() - t0
    model_mib = rss_mib()
    t0 = time.perf_counter()
    bench = pick(held_out(args), args.conversations, args.shortest, loaded.tokenizer,
                 args.stride, only)
    if args.log is not None:
        args.log.parent.mkdir(parents=True, exist_ok=True)
        done = {r["conversation"] for r in cost_log_rows(args.log)}
        left = [s for s in bench.spans if s.conversation_id not in done]
        print(f"{args.log}: {len(done)} conversations measured before, left out", flush=True)
        bench = Benchmark({s.conversation_id: bench.conversations[s.conversation_id]
                           for s in left}, left, bench.origin)
    bench_s = time.perf_counter() - t0
    n = len(bench.spans_by_conversation())
    if n == 0:
        print("nothing left to measure" + (f"; the figures: --log {args.log} --summary"
                                           if args.log else ""))
        return 0
    print(f"{loaded.name} on {loaded.device}, {torch.get_num_threads()} threads; {n} "
          f"conversations ({args.split}), {len(bench.spans)} spans; imports {imports_s:.1f} s, "
          f"model load {load_s:.1f} s, conversations read in {bench_s:.1f} s", flush=True)

    profile = Profile()
    restore = instrument(profile)
    runs = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = args.out or Path(tmp)
            folder.mkdir(parents=True, exist_ok=True)
            for r in range(args.repeats):
                run = run_once(loaded, bench, profile, folder, args.log)
                runs.append(run)
                got = entries(run["outputs"])
                show(run, r, n, load_s)
                if r == 0:
                    first = got
                elif differences(first, got):
                    print(f"  repeat {r + 1}: entries differ from the first run's")
            if args.save:
                args.save.parent.mkdir(parents=True, exist_ok=True)
                args.save.write_text(json.dumps(first, sort_keys=True), encoding="utf-8")
    finally:
        restore()

    print("\nwhere trace's time goes (all repeats; self time, the plain passes left out):")
    total = sum(profile.seconds.values())
    for cat, s in sorted(profile.seconds.items(), key=lambda x: -x[1]):
        print(f"  {cat:32s} {s:8.1f} s  {100 * s / total:5.1f}%  ({profile.calls[cat]} calls)")
    traced_s = sum(r["trace_s"] for run in runs for r in run["rows"])
    plain_s = sum(r["plain_s"] for run in runs for r in run["rows"])
    print(f"  {'(sum)':32s} {total:8.1f} s; the model forward of the plain passes {plain_s:.1f} s"
          f", trace's per conversation {traced_s:.1f} s")
    ratios = [sum(r["trace_s"] for r in run["rows"]) / sum(r["plain_s"] for r in run["rows"])
              for run in runs]
    print(f"\ntrace / plain pass per conversation over {len(runs)} run(s): "
          f"{min(ratios):.2f}-{max(ratios):.2f}x; peak RSS {max(run['peak_mib'] for run in runs):.0f}"
          f" MiB ({model_mib:.0f} MiB with the model loaded; "
          f"max RSS of the process {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}"
          " MiB)")
    if loaded.device.type == "cuda":
        print(f"GPU memory: peak {torch.cuda.max_memory_allocated() / 2**20:,.0f} MiB allocated "
              f"({torch.cuda.get_device_name()})")
    if args.compare:
        before = json.loads(args.compare.read_text(encoding="utf-8"))
        diff = differences(before, first)
        spans = sum(len(v) for v in first.values())
        print(f"entries against {args.compare}: "
              + ("all equal (edges, scores and evidence within 1e-5, "
                 f"{spans} entries)" if not diff else f"{len(diff)} differ:\n  "
                 + "\n  ".join(diff[:20])))
        return 1 if diff else 0
    return 0


def show(run: dict, r: int, n: int, load_s: float) -> None:
    rows = run["rows"]
    print(f"\nrun {r + 1}: {'conversation':44s} {'spans':>5s} {'tokens':>6s} {'plain s':>8s} "
          f"{'trace s':>8s} {'ratio':>6s} {'calls':>5s} {'computed':>8s} {'reused':>6s}")
    for x in rows:
        print(f"       {x['conversation'][-44:]:44s} {x['spans']:5d} {x['tokens']:6d} "
              f"{x['plain_s']:8.2f} {x['trace_s']:8.2f} {x['trace_s'] / x['plain_s']:6.2f} "
              f"{x['calls']:5d} {x['computed']:8d} {x['reused']:6d}"
              + (f"  ({x['windowed']} windowed)" if x["windowed"] else "")
              + (f"  ({x['skipped']} skipped)" if x["skipped"] else ""))
    plain = sum(x["plain_s"] for x in rows)
    trace = sum(x["trace_s"] for x in rows)
    # The runner's wall, the plain passes (and the rendering of their ids) inside it taken out.
    runner = run["wall_s"] - plain - sum(x["ids_s"] for x in rows)
    k = max(len(rows), 1)
    print(f"  per conversation: plain pass {plain / k:.2f} s; trace {trace / k:.2f} s: "
          f"{trace / plain:.2f}x; with the runner's own costs {runner / k:.2f} s: "
          f"{runner / plain:.2f}x; with the model load {(runner + load_s) / k:.2f} s: "
          f"{(runner + load_s) / plain:.2f}x")
    print(f"  model calls {sum(x['calls'] for x in rows)} ({sum(x['calls'] for x in rows) / k:.2f}"
          f" per conversation, the runner counted {run['forward_passes']}); tokens computed "
          f"{sum(x['computed'] for x in rows):,} against the plain passes' "
          f"{sum(x['tokens'] for x in rows):,} ({sum(x['reused'] for x in rows):,} read from the "
          f"prefix cache); median ratio {statistics.median(x['trace_s'] / x['plain_s'] for x in rows):.2f}"
          f"; peak RSS {run['peak_mib']:.0f} MiB ({run['peak_above_mib']:.0f} above the start)")


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except InputError as exc:  # a broken --log, a release that is not one: one line
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(3) from None
