"""The pass service: every model call goes through it and is counted; its prefix cache (the
key/value states of a system prompt, across conversations and Tracers) changes no graph; the
Tracer's worker is joined at exit."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from mtcabench.evaluate import (
    Attributor,
    Query,
    Tracer,
    TraceSettings,
    make_scorer,
    render_conversation,
    trace_conversation,
)
from mtcabench.evaluate.attribution._attention import SINK_PROBE_TOKENS
from mtcabench.evaluate.attribution._loading import DEFAULT_MODEL
from mtcabench.evaluate.attribution._passes import PrefixCache, passes_for
from mtcabench.ingest import read_taubench
from mtcabench.model import Role

#: Shares and edge scores with and without the prefix cache: the same sums in another order
#: (the kernels' blocking differs with the number of tokens fed), about 1e-6 apart.
TOL = 1e-5
PACKAGE = Path(__file__).resolve().parents[2] / "mtcabench"


def test_the_model_is_called_in_the_pass_service_only():
    """A call of the model (``model(input_ids=...)``, ``.forward(``, ``.generate(``) appears in
    one module of the package: the pass service (the peers' own packages aside)."""
    call = re.compile(r"model\s*\(\s*(input_ids|\*\*)|model\.forward\s*\(|\.generate\s*\(")
    found = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                   if "peers" not in p.parts and call.search(p.read_text(encoding="utf-8")))
    assert found == ["evaluate/attribution/_passes.py"]


def test_prefix_cache_is_bounded_by_bytes_least_recently_used_out():
    def states(n):
        return [(torch.zeros(1, 1, n, 2), torch.zeros(1, 1, n, 2))]  # 16 bytes a token

    cache = PrefixCache(max_bytes=16 * 25)
    a, b, c = np.arange(10), np.arange(100, 110), np.arange(200, 210)
    cache.store(a, states(10))
    cache.store(b, states(10))
    assert cache.get(a)[0][0].shape[2] == 10  # a used last: b goes first
    cache.store(c, states(10))
    assert len(cache) == 2 and cache.bytes == 16 * 20
    assert cache.get(b) is None
    # only the exact prefix serves: a common start, or a cut of a longer one, would not be
    # computed as a pass over the prefix alone computes it
    assert cache.get(c[:6]) is None and cache.get(np.r_[a, 1]) is None
    cache.store(np.arange(40), states(40))  # larger than the whole budget: not kept
    assert len(cache) == 2 and (cache.hits, cache.misses) == (1, 3)


def test_a_pass_is_the_same_whatever_the_cache_holds(tiny_loaded, sample_path):
    """A pass is a function of its arguments, not of what ran before in the process: with the
    prefix cold, warm, off, or holding a longer prefix of the same tokens, its logits and
    attention rows are the same bits (a resumed trace writes the bytes an uninterrupted one
    writes). Before, a warm cache started the pass at the stored prefix's end and a cold one
    ran it whole: about 1e-6 apart, enough to reorder two evidence sentences."""
    conv = _sample(sample_path)[0]
    rendered = render_conversation(conv, tiny_loaded.tokenizer)
    ids = rendered.full.input_ids
    store = rendered.shared_prefix
    at = np.arange(store + 5, len(ids))
    service = passes_for(tiny_loaded.model)

    def run(**kw):
        rows = []
        res = service.forward(ids, logits_at=at, reuse=int(at[0]), store=store,
                              on_layer=lambda layer, m, h, pe, keys: rows.append(keys[..., -1, :].clone()),
                              **kw)
        return res, torch.stack(rows)

    service.clear()
    cold, cold_rows = run()
    warm, warm_rows = run()
    assert (cold.start, warm.start) == (0, store) and len(service.prefixes) == 1
    limit = service.prefixes.max_bytes
    try:
        service.prefixes.max_bytes = 0
        off, off_rows = run()
    finally:
        service.prefixes.max_bytes = limit
    service.clear()
    service.forward(ids[: store + 3], store=store + 2, reuse=store + 2)  # a longer prefix only
    other, other_rows = run()
    for res, rows in ((warm, warm_rows), (off, off_rows), (other, other_rows)):
        assert torch.equal(res.logits, cold.logits) and torch.equal(rows, cold_rows)


def _sample(sample_path):
    return list(read_taubench(sample_path))


def _trace(loaded, convs, spans, settings):
    attributor = Attributor(loaded, make_scorer("avg-attention", settings, loaded))
    entries = [trace_conversation(attributor, c, spans[c.id], ["tokengeist", "flat"], settings)
               for c in convs]
    return attributor, entries


def _answer_spans(convs):
    from tests.evaluate.test_online import lineage_spans

    return {c.id: lineage_spans(c) for c in convs}


def _same_entries(a, b):
    for x, y in zip(a, b, strict=True):
        for method in x.entries:
            for e, f in zip(x.entries[method], y.entries[method], strict=True):
                assert [(g.child, g.parent) for g in e.edges] == [(g.child, g.parent)
                                                                   for g in f.edges]
                for g, h in zip(e.edges, f.edges, strict=True):
                    assert (g.score is None) == (h.score is None)
                    if g.score is not None:
                        assert abs(g.score - h.score) < TOL


def test_trace_counts_every_call_and_graphs_equal_without_the_cache(tiny_loaded, sample_path):
    """The sample's conversations share their system policy: with the cache, the second and
    third start from the first's prefix and the sink probe runs once; the graphs are those of
    plain passes, and every call (the probe's included) is in ``forward_passes``."""
    convs = _sample(sample_path)
    spans = _answer_spans(convs)
    settings = TraceSettings()
    service = passes_for(tiny_loaded.model)
    limit = service.prefixes.max_bytes
    try:
        service.prefixes.max_bytes = 0  # off: one plain pass per conversation, probes each time
        plain, plain_entries = _trace(tiny_loaded, convs, spans, settings)
    finally:
        service.prefixes.max_bytes = limit
    cached, cached_entries = _trace(tiny_loaded, convs, spans, settings)
    assert plain.forward_passes == 2 * len(convs)  # the pass and the sink probe, each
    assert plain.reused_tokens == 0
    assert cached.forward_passes == len(convs) + 1  # the probe once: the same policy
    assert service.prefixes.hits >= len(convs) - 1 and cached.reused_tokens > 0
    # the tokens computed: the plain run's, less the prefixes read and the probes not rerun
    probes = (len(convs) - 1) * SINK_PROBE_TOKENS
    assert cached.model_tokens + cached.reused_tokens == plain.model_tokens - probes
    _same_entries(plain_entries, cached_entries)


def test_tracers_of_one_model_share_the_system_prompt(tiny_loaded, sample_path):
    """A second Tracer of the model computes only what follows the system prompt the first
    one stored; its answers equal the first's (and so the offline ones)."""
    conv = _sample(sample_path)[0]
    assert conv.turns[0].role is Role.SYSTEM
    first = Tracer(tiny_loaded, pass_tokens=0, background=False)
    first.extend(conv.turns)
    second = Tracer(tiny_loaded, pass_tokens=0, background=False)
    second.extend(conv.turns)
    assert first.stats.reused_tokens == 0
    assert second.stats.reused_tokens == first.layout.turn_tokens(0)[1]
    assert second.stats.tokens_fed == first.stats.tokens_fed - second.stats.reused_tokens
    assert second.stats.model_calls == second.stats.forward_calls  # the probe remembered
    assert first.stats.model_calls == first.stats.forward_calls + 1
    for t in conv.turns:
        if t.role is Role.ASSISTANT and t.text:
            a, b = first.shares(t.index, 0, len(t.text)), second.shares(t.index, 0, len(t.text))
            assert a.keys() == b.keys() and all(abs(a[i] - b[i]) < TOL for i in a)


def test_the_online_answer_honours_a_non_additive_scorer(tiny_loaded, sample_path):
    """The Tracer answers with the offline answer code: a scorer whose units are not additive
    pools a segment by its best unit online as offline (it summed them before)."""
    from mtcabench.evaluate.attribution._scorers import AverageAttention

    class Peak(AverageAttention):
        name = "peak-test"
        online = True
        additive = False

    conv = _sample(sample_path)[0]
    settings = TraceSettings()
    scorer = Peak()
    tracer = Tracer(tiny_loaded, scorer=scorer, settings=settings, pass_tokens=0,
                    background=False)
    tracer.extend(conv.turns)
    attributor = Attributor(tiny_loaded, scorer)

    last = max(t.index for t in conv.turns if t.role is Role.ASSISTANT and t.text)
    rendered = render_conversation(conv, tiny_loaded.tokenizer, upto=last)
    text = conv.turns[last].text
    offline = attributor.shares(rendered, [Query("q", last, 0, len(text))])["q"]
    online = tracer.shares(last, 0, len(text))
    assert offline.keys() == online.keys()
    assert all(abs(offline[i] - online[i]) < 1e-4 for i in offline)


EXIT_SCRIPT = """
import sys
from mtcabench.evaluate import Tracer
from mtcabench.ingest import read_taubench

conv = next(read_taubench(sys.argv[2]))
tracer = Tracer(sys.argv[1])
tracer.extend(conv.turns)  # the worker starts on them; the script ends at once
print("last line ran", flush=True)
"""


@pytest.mark.model
def test_the_process_exits_cleanly_while_the_worker_runs(sample_path, tmp_path):
    """A script that adds messages and ends while the background worker is inside a pass
    exits with code 0: the worker is joined at interpreter exit, not killed mid-pass (before,
    signal 6, 'terminate called without an active exception', after the last line ran). The
    real model: a tiny one's pass ends before the interpreter does."""
    script = tmp_path / "add_and_exit.py"
    script.write_text(textwrap.dedent(EXIT_SCRIPT), encoding="utf-8")
    for _ in range(2):
        res = subprocess.run([sys.executable, str(script), DEFAULT_MODEL, str(sample_path)],
                             capture_output=True, text=True, timeout=300,
                             cwd=Path(__file__).resolve().parents[2])
        assert "last line ran" in res.stdout
        assert res.returncode == 0, res.stderr[-2000:]
        assert "terminate called" not in res.stderr


@pytest.mark.parametrize("arch", ["llama", "qwen3", "mistral"])
def test_a_pass_on_from_a_cache_splits_its_attention_only_where_its_mask_is_causal(
        arch, tiny_models, sample_path):
    """A pass that runs on from a key/value cache with several new tokens runs the attention
    in two flash calls merged by their log-sum-exps (``split_attention``): its logits are the
    model's own sdpa's over the same cache (which builds the causal mask), up to float
    rounding; the model's attention setting is back afterwards, also when the pass fails,
    and ``load_model`` hands out the same model meanwhile. A model with a sliding window (its
    mask is not a plain causal one) runs its own attention."""
    import threading

    from transformers import DynamicCache

    from mtcabench.evaluate import load_model
    from mtcabench.evaluate.attribution._passes import SPLIT_ATTENTION, attention_modules

    lm = load_model(str(tiny_models[arch]))
    model = lm.model
    service = passes_for(model)
    ids = render_conversation(_sample(sample_path)[2], lm.tokenizer).full.input_ids
    cut = len(ids) // 2
    at = np.arange(cut, len(ids))
    arg = service._cache_arg

    def own() -> torch.Tensor:  # the model's own attention, its mask built by transformers
        cache = DynamicCache()
        with torch.inference_mode():
            model(input_ids=torch.tensor([ids[:cut]]), use_cache=True, **{arg: cache})
            out = model(input_ids=torch.tensor([ids[cut:]]), use_cache=True, **{arg: cache})
        return out.logits[0]

    seen, reloaded = [], []

    def look(module, args, kwargs):
        seen.append(module.config._attn_implementation)
        t = threading.Thread(target=lambda: reloaded.append(
            load_model(str(tiny_models[arch])).model is not model))
        t.start()
        t.join()

    first = attention_modules(model)[0]
    handle = first.register_forward_pre_hook(look, with_kwargs=True)
    try:
        cache = service.forward(ids[:cut]).cache
        got = service.forward(ids, cache=cache, logits_at=at).logits
    finally:
        handle.remove()
    assert seen == ["sdpa", "sdpa" if arch == "mistral" else SPLIT_ATTENTION]
    assert reloaded == [False, False]
    assert model.config._attn_implementation == "sdpa"
    want = own()
    assert torch.allclose(got, want, atol=1e-4, rtol=1e-5), float((got - want).abs().max())

    def fail(module, args, kwargs):
        raise RuntimeError("a pass that fails midway")

    cache = service.forward(ids[:cut]).cache
    handle = first.register_forward_pre_hook(fail, with_kwargs=True)
    try:
        with pytest.raises(RuntimeError, match="fails midway"):
            service.forward(ids, cache=cache, logits_at=at)
    finally:
        handle.remove()
    assert model.config._attn_implementation == "sdpa"
