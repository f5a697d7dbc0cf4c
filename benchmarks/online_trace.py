"""Online tracing on TauBench: adding every turn against one plain forward pass, and explaining
a span of the last turn online against re-running `trace` on the whole conversation.

For each of the first ``--conversations`` TauBench airline conversations (gpt-4o-airline.json,
in file order) whose rendering fits in ``--max-tokens``, measured side by side in this one
process, ``--repeats`` times (the median is reported):

(a) **adding**: a fresh :class:`~mtcabench.evaluate.Tracer` adds every turn as OpenAI chat
    messages (rendering, tokenising, the model over new tokens with the kept cache, the
    recomputed assistant rows reduced to per-sentence features), flushed at the end; against
    one plain forward pass over the same tokens (the model's own sdpa attention, no cache
    kept, no rows: the least any attribution needs). With ``--per-turn`` also a tracer that
    runs the model at every add (``pass_tokens=0``);
(b) **explaining** the first sentence of the last answer with Tokengeist from the tracer's
    stored features, against ``trace_conversation`` on the whole conversation (render, one
    pass with every row Tokengeist may need, the search), and whether both graphs are equal;

and the peak resident memory above the loaded model during each, with the tracer's cache and
stored features. Ratios are of the summed times over the conversations, per repeat.

    python benchmarks/online_trace.py --conversations 4 --repeats 3

With ``--llm-latency S``, instead: the agent's view. The turns of each conversation are
added as an agent loop adds them, and before each assistant turn (the LLM's answer) the agent
waits ``S`` seconds for it (a simulated LLM); after that wait, the first sentence of each
answer added before it is explained (the last answer after one more wait: the next call). Side by side: the default Tracer (the model runs in a background
worker during the wait) and ``background=False`` (the model runs when ``explain`` asks).
Printed: the explain latencies after the wait (median and max over every assistant turn)
and the longest ``add``.

    python benchmarks/online_trace.py --conversations 2 --llm-latency 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _memory import PeakRss
from tests.support.paths import taubench_airline_path

from mtcabench.evaluate import (
    Attributor,
    Tracer,
    TraceSettings,
    load_model,
    make_scorer,
    render_conversation,
    trace_conversation,
)
from mtcabench.evaluate import DEFAULT_PASS_TOKENS, as_message, forward, passes_for
from tests.support.smoke import answer_spans
from mtcabench.ingest import read_taubench


def pick(n: int, max_tokens: int, tokenizer) -> list[tuple]:
    """The first ``n`` conversations that fit, each with its last answer's first sentence."""
    out = []
    for conv in read_taubench(taubench_airline_path()):
        spans = answer_spans(conv, 1)
        if not spans:
            continue
        tokens = render_conversation(conv, tokenizer).full.num_tokens
        if tokens <= max_tokens:
            out.append((conv, spans[0], tokens))
        if len(out) == n:
            break
    return out


def timed(fn, *args):
    """Seconds, peak memory above the start (MiB) and value of ``fn(*args)``."""
    with PeakRss(interval=0.05) as mem:
        start = time.perf_counter()
        value = fn(*args)
        seconds = time.perf_counter() - start
    return seconds, mem.above, value


def clocked(fn, *args):
    """Seconds and value of ``fn(*args)`` (no memory sampling: for short calls)."""
    start = time.perf_counter()
    value = fn(*args)
    return time.perf_counter() - start, value


def add_all(tracer: Tracer, conv) -> None:
    """What an agent loop does: every message to the tracer as it comes."""
    for turn in conv.turns:
        tracer.add(as_message(turn))
    tracer.flush()


def agent_view(loaded, settings, work, latency: float, ahead: bool = False) -> None:
    """Explain latency after each simulated LLM wait, background worker against none."""
    from mtcabench.model import Role
    from mtcabench.transcripts import target_span

    def explain_first_sentence(tracer, turn, out):
        first = turn.content.strip().split(". ")[0]
        span = target_span(tracer.conversation, turn.index, first)
        seconds, _ = clocked(tracer.explain, turn.index, span)
        out.append(seconds)

    results, firsts = {}, {}
    for background in (True, False):
        explains, adds = [], []
        # One agent's conversations in a row: the first pays for the system prompt (the
        # warm-up's is forgotten), the later ones find it in the pass service's prefix cache.
        passes_for(loaded.model).clear()
        per_conversation = []
        for conv, _, _ in work:
            start = len(explains)
            tracer = Tracer(loaded, settings=settings, background=background)
            turns = list(conv.turns)
            if ahead and turns and turns[0].role is Role.SYSTEM:
                # The agent gives the Tracer its system prompt when it starts, before the
                # user speaks: its pass is over before the conversation begins.
                tracer.add(as_message(turns.pop(0)))
                tracer.flush()
            answered = []  # answers added since the last LLM wait
            for turn in turns:
                if turn.role is Role.ASSISTANT:
                    time.sleep(latency)  # the agent waits for its LLM: this turn is its answer
                    for t in answered:  # ... and explains the earlier answers after the wait
                        explain_first_sentence(tracer, t, explains)
                    answered.clear()
                seconds, _ = clocked(tracer.add, as_message(turn))
                adds.append(seconds)
                if turn.role is Role.ASSISTANT and turn.content.strip():
                    answered.append(turn)
            time.sleep(latency)  # the next LLM call after the last answer
            for t in answered:
                explain_first_sentence(tracer, t, explains)
            tracer.close()
            per_conversation.append(max(explains[start:], default=0.0))
        results[background] = (explains, adds)
        firsts[background] = per_conversation
    for background, (explains, adds) in results.items():
        name = "background worker (default)" if background else "background=False         "
        print(f"{name}: explain after a {latency:g} s LLM wait: median "
              f"{statistics.median(explains) * 1000:.1f} ms, max {max(explains) * 1000:.1f} ms "
              f"over {len(explains)} answers; longest add {max(adds) * 1000:.1f} ms")
        print(f"  max explain per conversation, in order: "
              f"{', '.join(f'{x * 1000:.0f} ms' for x in firsts[background])}")
    on, off = (statistics.median(results[b][0]) for b in (True, False))
    print(f"median explain latency, background=False over the default: {off / on:.0f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conversations", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=4096)
    ap.add_argument("--pass-tokens", type=int, default=DEFAULT_PASS_TOKENS,
                    help="the Tracer's pass_tokens")
    ap.add_argument("--per-turn", action="store_true", help="also a tracer with pass_tokens=0")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--threads", type=int, help="torch threads (default: torch's choice)")
    ap.add_argument("--llm-latency", type=float, metavar="S",
                    help="the agent's view: explain after a simulated LLM wait of S seconds")
    ap.add_argument("--system-ahead", action="store_true",
                    help="with --llm-latency: each Tracer is given the system prompt (and runs "
                    "it) before the conversation starts")
    args = ap.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)

    loaded = load_model(device=args.device)
    settings = TraceSettings()
    attributor = Attributor(loaded, make_scorer("avg-attention", settings, loaded))
    work = pick(args.conversations, args.max_tokens, loaded.tokenizer)
    print(f"{len(work)} conversations, {sum(w[2] for w in work)} tokens "
          f"({', '.join(str(w[2]) for w in work)}), turns "
          f"{', '.join(str(len(w[0].turns)) for w in work)}; device {loaded.device}, "
          f"{__import__('torch').get_num_threads()} threads")
    # Warm-up (first-pass allocations and thread pools), not measured.
    forward(loaded.model, render_conversation(work[0][0], loaded.tokenizer).full.input_ids)
    add_all(Tracer(loaded, settings=settings, background=False), work[0][0])
    if args.llm_latency is not None:
        agent_view(loaded, settings, work, args.llm_latency, args.system_ahead)
        return
    variants = {"online": args.pass_tokens} | ({"per-turn": 0} if args.per_turn else {})
    ratios: dict[str, list[float]] = {"a " + v: [] for v in variants} | {"b": []}
    memory: dict[str, list[float]] = {k: [] for k in ("plain", *variants, "trace")}
    same = True
    stats = None
    for rep in range(args.repeats):
        total = dict.fromkeys(("plain", *variants, "explain", "trace"), 0.0)
        for conv, span, _ in work:
            ids = render_conversation(conv, loaded.tokenizer).full.input_ids
            dt, mem, _ = timed(forward, loaded.model, ids)
            total["plain"] += dt
            memory["plain"].append(mem)
            tracers = {}
            for name, pass_tokens in variants.items():
                tracer = Tracer(loaded, settings=settings, pass_tokens=pass_tokens,
                                background=False)
                dt, mem, _ = timed(add_all, tracer, conv)
                total[name] += dt
                memory[name].append(mem)
                tracers[name] = tracer
            tracer = tracers["online"]
            stats = tracer.stats
            passes = tracer.stats.forward_calls
            dt, graph = clocked(tracer.explain, span.span.turn, span.span)
            assert tracer.stats.forward_calls == passes, "explaining ran a forward pass"
            total["explain"] += dt
            dt, mem, result = timed(trace_conversation, attributor, conv, [span],
                                    ["tokengeist"], settings)
            total["trace"] += dt
            memory["trace"].append(mem)
            entry = result.entries["tokengeist"][0]
            same &= (sorted(e.pair for e in graph.edges)
                     == sorted((e.child, e.parent) for e in entry.edges))
        for name in variants:
            ratios["a " + name].append(total[name] / total["plain"])
        ratios["b"].append(total["trace"] / total["explain"])
        print(f"repeat {rep + 1}: plain {total['plain']:.1f} s, "
              + ", ".join(f"{n} {total[n]:.1f} s ({total[n] / total['plain']:.2f}x)"
                          for n in variants)
              + f"; explain {total['explain'] * 1000:.1f} ms vs trace {total['trace']:.1f} s "
              f"({total['trace'] / total['explain']:.0f}x)", flush=True)
    med = {k: statistics.median(v) for k, v in ratios.items()}
    print()
    for name, pass_tokens in variants.items():
        print(f"(a) adding every turn online (pass_tokens={pass_tokens}) / one plain forward "
              f"pass: {med['a ' + name]:.2f}x (median of {args.repeats}; runs "
              f"{', '.join(f'{r:.2f}' for r in ratios['a ' + name])})")
    print(f"(b) re-running trace on the whole conversation / explaining online: "
          f"{med['b']:.0f}x (median; runs {', '.join(f'{r:.0f}' for r in ratios['b'])}); "
          f"graphs identical: {same}")
    print("peak RSS above the loaded model (max over conversations and repeats): "
          + ", ".join(f"{k} {max(v):.0f} MiB" for k, v in memory.items()))
    if stats is not None:
        print(f"tracer of the last conversation: {stats.tokens} tokens, {stats.forward_calls} "
              f"passes over {stats.tokens_fed} tokens, {stats.crops} crops, {stats.stored_rows} "
              f"stored rows; cache {stats.cache_bytes / 2**20:.0f} MiB, features "
              f"{stats.feature_bytes / 2**10:.0f} KiB")


if __name__ == "__main__":
    main()
