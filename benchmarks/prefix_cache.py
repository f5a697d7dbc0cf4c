"""The prefix cache of the pass service on TauBench: `trace` with and without it, side by side.

On the first N TauBench airline conversations (gpt-4o-airline.json, in file order) with the
default model, avg-attention and Tokengeist, two spans per conversation (the first sentence of
the last two answers), in this one process: one run with the prefix cache off (every
conversation computes all its tokens: one plain forward pass and the sink probe each), then
one with it on, starting empty (the first conversation stores the airline policy, every later
one reads it, and the sink probe runs once). Printed per run: model calls, tokens computed,
tokens read from the cache, seconds per conversation (median and total); the cache's hit
rate, the tokens ratio and the speed ratio; and whether every graph is the same (edges equal,
scores within 1e-5).

    python benchmarks/prefix_cache.py --conversations 6

With ``--count``, no model runs: over the conversations (all 200 with ``--conversations
200``) the tokens each pass would compute are counted from the tokenizer alone, by the rules
the runs follow (a pass covers the tokens up to the last span's end; with the cache, a
conversation whose system prompt's token ids an earlier one stored starts after them, and the
64-token sink probe runs once per distinct start), as a ratio with/without.

    python benchmarks/prefix_cache.py --conversations 200 --count
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from itertools import islice
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.paths import taubench_airline_path
from tests.support.smoke import answer_spans

from mtcabench.evaluate import (
    Attributor,
    TraceSettings,
    load_model,
    make_scorer,
    passes_for,
    trace_conversation,
)
from mtcabench.ingest import read_taubench

TOL = 1e-5


def run(loaded, convs, settings):
    attributor = Attributor(loaded, make_scorer("avg-attention", settings, loaded))
    seconds, entries = [], []
    for conv in convs:
        t0 = time.perf_counter()
        entries.append(trace_conversation(attributor, conv, answer_spans(conv, 2),
                                          ["tokengeist"], settings).entries["tokengeist"])
        seconds.append(time.perf_counter() - t0)
    return attributor, seconds, entries


def same(a, b) -> bool:
    for x, y in zip(a, b, strict=True):
        for e, f in zip(x, y, strict=True):
            if [(g.child, g.parent) for g in e.edges] != [(g.child, g.parent) for g in f.edges]:
                return False
            if any((g.score is None) != (h.score is None)
                   or (g.score is not None and abs(g.score - h.score) > TOL)
                   for g, h in zip(e.edges, f.edges, strict=True)):
                return False
    return True


def count(loaded, convs) -> None:
    from mtcabench.evaluate import SINK_PROBE_TOKENS, render_conversation

    plain = cached = 0
    prefixes: set[bytes] = set()
    probes: set[bytes] = set()
    for conv in convs:
        spans = answer_spans(conv, 2)
        if not spans:
            continue
        rendered = render_conversation(conv, loaded.tokenizer, upto=max(s.span.turn for s in spans))
        full = rendered.full
        end = max(full.span_tokens(s.span.turn, s.span.start, s.span.end)[1] for s in spans)
        first = min(full.span_tokens(s.span.turn, s.span.start, s.span.end)[0] for s in spans)
        ids = bytes(str(full.input_ids[: rendered.shared_prefix]), "ascii")
        probe = bytes(str(full.input_ids[:SINK_PROBE_TOKENS]), "ascii")
        plain += end + SINK_PROBE_TOKENS
        reused = min(rendered.shared_prefix, first) if ids in prefixes else 0
        cached += end - reused + (0 if probe in probes else SINK_PROBE_TOKENS)
        prefixes.add(ids)
        probes.add(probe)
    print(f"{len(convs)} conversations: tokens computed without the cache {plain:,}, with it "
          f"{cached:,}: ratio {cached / plain:.3f} ({len(prefixes)} distinct system prompts)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=6)
    parser.add_argument("--count", action="store_true",
                        help="count the tokens from the tokenizer alone (no model runs)")
    args = parser.parse_args()
    loaded = load_model()
    convs = list(islice(read_taubench(taubench_airline_path()), args.conversations))
    if args.count:
        count(loaded, convs)
        return
    settings = TraceSettings()
    service = passes_for(loaded.model)
    budget = service.prefixes.max_bytes
    run(loaded, convs[:1], settings)  # warm-up (allocations, thread pools), not measured
    service.clear()
    service.prefixes.max_bytes = 0
    plain, plain_s, plain_e = run(loaded, convs, settings)
    service.prefixes.max_bytes = budget
    service.clear()
    cached, cached_s, cached_e = run(loaded, convs, settings)
    hits, misses = service.prefixes.hits, service.prefixes.misses
    print(f"{len(convs)} conversations, {loaded.name} on {loaded.device}, "
          f"{__import__('torch').get_num_threads()} threads")
    for name, att, secs in (("no cache", plain, plain_s), ("prefix cache", cached, cached_s)):
        print(f"{name:>13}: {att.forward_passes} model calls, {att.model_tokens} tokens computed, "
              f"{att.reused_tokens} read from the cache; s/conversation median "
              f"{statistics.median(secs):.2f}, total {sum(secs):.1f}")
    print(f"cache: {hits} hits, {misses} misses (hit rate {hits / max(hits + misses, 1):.2f}), "
          f"{service.prefixes.stores} prefixes stored, {service.prefixes.bytes / 2**20:.0f} MiB")
    print(f"tokens computed with/without: {cached.model_tokens / plain.model_tokens:.3f}; "
          f"time with/without: {sum(cached_s) / sum(plain_s):.3f} "
          f"(speed-up {sum(plain_s) / sum(cached_s):.2f}x)")
    print(f"graphs equal: {same(plain_e, cached_e)}")


if __name__ == "__main__":
    main()
