"""The online Tracer: its graphs and shares equal offline `trace`'s on every span of the sample
(on the three tiny architectures) and of ten real TauBench conversations (real model); it
answers without a forward pass, crops and recomputes where a template re-renders earlier
text, and refuses what it cannot do. Tests asking for ``loaded`` are marked ``model`` by
tests/conftest.py; those on a tiny model run in the fast lane."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from mtcabench.lineage import propose_conversation
from mtcabench.benchmark import load_benchmark
from mtcabench.errors import InputError
from mtcabench.evaluate import (
    Attributor,
    LoadedModel,
    Query,
    Tracer,
    TraceSettings,
    make_scorer,
    render_conversation,
    trace_conversation,
    turn_shares,
)
from mtcabench.evaluate.attribution._attention import query_features
from mtcabench.evaluate.attribution._engine import segment_ids
from mtcabench.evaluate.online._tracer import as_message
from mtcabench.evaluate.attribution._scorers import AverageAttention
from mtcabench.graph import check_graph, depth, sources
from mtcabench.ingest import read_taubench
from mtcabench.model import (
    BenchmarkSpan,
    DecisionSource,
    DependencyType,
    ProvenanceGraph,
    Role,
    TargetSpan,
    Verdict,
    span_id,
)
from tests.support.tiny_models import ARCHITECTURES

TOL = 1e-4
METHODS = ("tokengeist", "flat")
#: Ten short real TauBench airline conversations with values to trace (2,088-2,471 tokens with
#: SmolLM2's template, 12-18 turns, 3-18 lineage spans each): the shortest of
#: gpt-4o-airline.json with at least three lineage spans, so that the test runs in minutes on
#: 2 cores.
TAUBENCH_IDS = [
    "taubench/airline/gpt-4o/task-38/trial-3",
    "taubench/airline/gpt-4o/task-42/trial-3",
    "taubench/airline/gpt-4o/task-39/trial-3",
    "taubench/airline/gpt-4o/task-19/trial-2",
    "taubench/airline/gpt-4o/task-12/trial-0",
    "taubench/airline/gpt-4o/task-12/trial-1",
    "taubench/airline/gpt-4o/task-41/trial-3",
    "taubench/airline/gpt-4o/task-48/trial-0",
    "taubench/airline/gpt-4o/task-35/trial-1",
    "taubench/airline/gpt-4o/task-43/trial-0",
]


def lineage_spans(conv) -> list[BenchmarkSpan]:
    """Every span the lineage annotator proposes on a conversation, and every answer as a
    whole (what `explain` traces by default), as benchmark spans (trace reads no gold)."""
    spans = [BenchmarkSpan(
        id=c.id, conversation_id=conv.id, source=conv.source, domain=conv.domain, span=c.span,
        dependency_type=c.dependency_type, graph=c.graph, depth=depth(c.graph),
        sources=sources(c.graph, conv), decision_source=DecisionSource.AUTO,
        verdict=Verdict.ACCEPT) for c in propose_conversation(conv)]
    for t in conv.turns:
        if t.role is Role.ASSISTANT and t.content.strip():
            span = TargetSpan(turn=t.index, start=0, end=len(t.content), text=t.content)
            alone = ProvenanceGraph(target=t.index, nodes=[t.index], edges=[])
            spans.append(BenchmarkSpan(
                id=span_id(conv.id, span), conversation_id=conv.id, source=conv.source,
                domain=conv.domain, span=span, dependency_type=DependencyType.DIRECT,
                graph=alone, depth=0, sources=[], decision_source=DecisionSource.AUTO,
                verdict=Verdict.ACCEPT))
    return spans


@pytest.fixture(scope="module", params=ARCHITECTURES)
def tiny_arch(request, tiny_models):
    """Each tiny model (the default model's architecture, q/k norms, a sliding window)."""
    from mtcabench.evaluate import load_model

    return load_model(str(tiny_models[request.param]))


@pytest.fixture(scope="module")
def taubench_ten(taubench_airline):
    by_id = {c.id: c for c in read_taubench(taubench_airline) if c.id in TAUBENCH_IDS}
    return [by_id[i] for i in TAUBENCH_IDS]


def offline(loaded, conv, spans, settings, scorer="avg-attention"):
    """`trace_conversation`'s entries per method, and the shares its one pass computed."""
    attributor = Attributor(loaded, make_scorer(scorer, settings, loaded),
                            aggregate=settings.turn_aggregate)
    seen: dict = {}
    compute = attributor.attribute  # the pass that gives shares and evidence sentences

    def spy(rendered, queries, sentences, shared=None):
        out = compute(rendered, queries, sentences, shared)
        seen.update({key: shares for key, (shares, _) in out.items()})
        return out

    attributor.attribute = spy
    result = trace_conversation(attributor, conv, spans, METHODS, settings)
    # one pass, and the sink probe unless this process probed the same start before
    assert result.forward_passes in (1, 2) and not result.skipped
    return result.entries, seen


def check_equivalent(loaded, conv, spans, settings=TraceSettings(), scorer="avg-attention"):
    entries, off_shares = offline(loaded, conv, spans, settings, scorer)
    tracer = Tracer(loaded, scorer=scorer, settings=settings, conversation_id=conv.id)
    for turn in conv.turns:
        tracer.add(as_message(turn))  # as an agent loop would: OpenAI chat messages
    assert tracer.stats.crops == 0 and tracer.stats.tokens_fed <= tracer.stats.tokens
    tracer.flush()
    passes = tracer.stats.forward_calls
    # every token processed once (the system prompt's, stored by the offline pass, read)
    assert tracer.stats.tokens_fed + tracer.stats.reused_tokens == tracer.stats.tokens
    # Each add tokenised only its new turn: the ids are those of the whole rendering.
    assert tracer.layout.input_ids == render_conversation(conv, loaded.tokenizer).full.input_ids
    worst = 0.0
    for k, s in enumerate(spans):
        on = tracer.shares(s.span.turn, s.span.start, s.span.end)
        off = off_shares[s.id]
        assert set(on) == set(off), s.id
        worst = max([worst, *(abs(on[t] - off[t]) for t in off)])
        for m in METHODS:
            graph = tracer.explain(s.span.turn, s.span, method=m)
            got = sorted((e.child, e.parent, e.score) for e in graph.edges)
            want = sorted((e.child, e.parent, e.score) for e in entries[m][k].edges)
            assert [g[:2] for g in got] == [w[:2] for w in want], (s.id, m)
            for g, w in zip(got, want):
                assert (g[2] is None) == (w[2] is None)
                if g[2] is not None:
                    assert abs(g[2] - w[2]) < TOL, (s.id, m, g, w)
            if m == "tokengeist":
                assert not check_graph(graph, conv, s.span, record=s.id)
    for t in conv.turns:  # every intermediate node Tokengeist may ask for
        if t.role is Role.ASSISTANT and t.text and t.index in off_shares:
            on = tracer.shares(t.index, 0, len(t.text))
            assert set(on) == set(off_shares[t.index])
            worst = max([worst, *(abs(on[i] - v) for i, v in off_shares[t.index].items())])
    assert worst < TOL
    assert tracer.stats.forward_calls == passes  # the answers ran no forward pass
    return tracer


def test_sample_spans_equal_offline(tiny_arch, sample_benchmark):
    bench = load_benchmark(sample_benchmark)
    for conv in bench.conversations.values():
        spans = [s for s in bench.spans if s.conversation_id == conv.id] + lineage_spans(conv)
        assert spans, conv.id
        tracer = check_equivalent(tiny_arch, conv, spans)
        assert tracer.stats.tokens > 300  # past the tiny Mistral's window of 48


def test_sample_at2_equal_offline(loaded, sample_benchmark):
    bench = load_benchmark(sample_benchmark)
    conv = next(iter(bench.conversations.values()))
    spans = [s for s in bench.spans if s.conversation_id == conv.id]
    check_equivalent(loaded, conv, spans, scorer="at2")


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(TAUBENCH_IDS)))
def test_taubench_spans_equal_offline(loaded, taubench_ten, index):
    conv = taubench_ten[index]
    spans = lineage_spans(conv)
    assert spans, conv.id
    check_equivalent(loaded, conv, spans)


def test_explain_runs_no_forward_pass(tiny_loaded, sample_path, monkeypatch):
    loaded = tiny_loaded
    conv = next(read_taubench(sample_path))
    # In the calling thread (background=False): the model runs at every add ...
    tracer = Tracer(loaded, pass_tokens=0, background=False)
    batched = Tracer(loaded, pass_tokens=10_000, background=False)  # ... or at the first answer
    sizes = []
    for turn in conv.turns:
        before = tracer.stats.tokens_fed
        tracer.add(turn)
        sizes.append(tracer.stats.tokens_fed - before)
        assert tracer.pending_tokens == 0
    assert tracer.stats.forward_calls == len(conv.turns) and sum(sizes) == tracer.stats.tokens
    calls = []
    real = type(loaded.model).forward
    monkeypatch.setattr(type(loaded.model), "forward",
                        lambda self, *a, **k: calls.append(1) or real(self, *a, **k))
    graph = tracer.explain()  # the last answer, whole
    last = max(t.index for t in conv.turns if t.role is Role.ASSISTANT and t.content.strip())
    assert graph.target == last and graph.edges and not calls
    # the same answers as a tracer that ran the model in one pass
    batched.extend(conv.turns)
    assert batched.stats.forward_calls == 0 and batched.pending_tokens == batched.stats.tokens
    for t in conv.turns:
        if t.role is Role.ASSISTANT:
            a, b = tracer.shares(t.index, 0, len(t.text)), batched.shares(t.index, 0, len(t.text))
            assert set(a) == set(b) and all(abs(a[i] - b[i]) < TOL for i in a)
    assert batched.stats.forward_calls == 1


def test_reset_and_context_limit(loaded, sample_path):
    conv = next(read_taubench(sample_path))
    tracer = Tracer(loaded, settings=TraceSettings(max_tokens=400))
    tracer.extend(conv.turns)  # turns past the limit are added, the model stops before them
    assert tracer.stats.turns == len(tracer.turns) == len(conv.turns)
    assert 0 < tracer.stats.past_turns < len(conv.turns) and tracer.stats.tokens <= 400
    tracer.reset()
    assert tracer.turns == [] and tracer.stats.tokens == 0
    tracer.add(conv.turns[0])
    assert len(tracer.turns) == 1


def test_tool_message_checked_as_it_comes(loaded):
    tracer = Tracer(loaded)
    tracer.add({"role": "user", "content": "hi"})
    with pytest.raises(InputError, match=r"message 1: tool result answers call 'nope'"):
        tracer.add({"role": "tool", "tool_call_id": "nope", "content": "{}"})
    assert len(tracer.turns) == 1


def test_the_tracer_takes_messages_of_every_format_the_registry_knows(loaded):
    """Each message's format is asked of the format registry: the built-in formats' messages
    mix in one conversation, and a format registered after import is taken like them."""
    from mtcabench.transcripts import FORMATS, NO, SURE, LogFormat, register_format

    def sniff_message(message):
        return SURE if isinstance(message, dict) and "speaker" in message else NO

    def read_message(builder, message, here):
        return [builder.user(message["said"], here)]

    fmt = register_format(LogFormat("test-speakers", "Speakers", "{speaker, said}",
                                    lambda source: NO, lambda source: [], order=90,
                                    sniff_message=sniff_message, read_message=read_message))
    try:
        tracer = Tracer(loaded)
        messages = [
            {"role": "system", "content": "You track parcels."},  # OpenAI chat
            {"speaker": "human", "said": "Where is parcel 7?"},  # the registered format
            {"role": "assistant", "content": [  # Anthropic
                {"type": "tool_use", "id": "c1", "name": "find", "input": {"parcel": 7}}]},
            {"role": "tool", "parts": [  # OpenTelemetry GenAI
                {"type": "tool_call_response", "id": "c1", "response": {"city": "Lyon"}}]},
            {"role": "assistant", "content": [{"type": "reasoning", "reasoning": "..."},  # Inspect
                                              {"type": "text", "text": "Let me check the van."}],
             "tool_calls": [{"id": "c2", "function": "van", "arguments": {"parcel": 7}}]},
            {"type": "function_call_output", "call_id": "c2", "output": "out for delivery"},
            [{"type": "message", "role": "assistant",  # a Responses model response
              "content": [{"type": "output_text", "text": "It is in Lyon, out for delivery."}]}],
        ]
        for m in messages:
            tracer.add(m)
        assert [t.role for t in tracer.turns] == [Role.SYSTEM, Role.USER, Role.ASSISTANT,
                                                  Role.TOOL, Role.ASSISTANT, Role.TOOL,
                                                  Role.ASSISTANT]
        assert tracer.turns[1].content == "Where is parcel 7?"
        assert tracer.turns[5].name == "van" and tracer.turns[3].content == '{"city": "Lyon"}'
        tracer.flush()
        assert tracer.stats.turns == 7 and tracer.pending_tokens == 0
    finally:
        FORMATS.unregister(fmt.name)


def test_scorers_that_cannot_run_online_are_refused(loaded):
    with pytest.raises(InputError, match=r"attntrace cannot run online: it scores each sentence "
                                         r"over forward passes"):
        Tracer(loaded, scorer="attntrace")

    class Peak(AverageAttention):
        name = "peak"

    with pytest.raises(InputError, match=r"scorer 'peak' has no online form"):
        Tracer(loaded, scorer=Peak())


def test_template_that_rerenders_earlier_turns_crops_and_recomputes(loaded, sample_path):
    """A template that marks the last message differently re-renders the previous one when a
    message follows: the tracer crops to the common prefix and recomputes, and its shares
    equal those of one pass over the final tokens."""
    tok = copy.deepcopy(loaded.tokenizer)
    tok.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
        "{% if loop.last %}<|im_start|>(latest)\n{% endif %}{% endfor %}")
    shifted = LoadedModel(loaded.model, tok, "smollm2-last-marked", loaded.context_length)
    conv = next(read_taubench(sample_path))
    tracer = Tracer(shifted, pass_tokens=0, background=False)  # a crop at every add
    tracer.extend(conv.turns)
    st = tracer.stats
    assert st.crops == len(conv.turns) - 1 and st.recomputed_tokens > 0
    assert st.tokens_fed + st.reused_tokens == st.tokens + st.recomputed_tokens
    layout = tracer.layout
    assert layout.text.endswith("<|im_start|>(latest)\n")
    turns = np.array([s.turn for s in tracer.sentences])
    answers = [t for t in conv.turns if t.role is Role.ASSISTANT and t.text]
    rows = [np.arange(*layout.span_tokens(t.index, 0, len(t.text))) for t in answers]
    feats = query_features(loaded.model, layout.input_ids, rows, layout.token_sentence,
                           len(layout.sentence_chars), with_heads=False)
    scores = AverageAttention().sentence_scores(feats).double().numpy()
    for q, t in enumerate(answers):
        want = turn_shares(scores[q], turns, t.index, segments=segment_ids(tracer.sentences))
        got = tracer.shares(t.index, 0, len(t.text))
        assert set(got) == set(want) and all(abs(got[i] - want[i]) < TOL for i in want)


def test_offline_and_online_queries_agree_on_the_default_target(loaded, sample_path):
    """``Tracer.target()``'s default is the last answer's whole content, as `explain`'s."""
    conv = next(read_taubench(sample_path))
    tracer = Tracer(loaded)
    tracer.extend(conv.turns)
    target = tracer.target()
    last = max(t.index for t in conv.turns if t.role is Role.ASSISTANT and t.content.strip())
    assert (target.turn, target.start, target.end) == (last, 0, len(conv.turns[last].content))
    from mtcabench.evaluate import render_conversation

    rendered = render_conversation(conv, loaded.tokenizer)
    off = Attributor(loaded, make_scorer("avg-attention", TraceSettings(), loaded)).shares(
        rendered, [Query("t", last, 0, target.end)])["t"]
    on = tracer.shares(last, 0, target.end)
    assert set(on) == set(off) and max(abs(on[i] - off[i]) for i in off) < TOL


def test_only_a_turn_that_starts_at_an_added_token_is_tokenised_alone(loaded):
    from mtcabench.evaluate.online._state import starts_with_split_token

    tok = loaded.tokenizer
    assert starts_with_split_token(tok, "<|im_start|>user\nhi<|im_end|>\n")
    assert not starts_with_split_token(tok, "user\nhi")  # could merge with what precedes
    lstripped = type("T", (), {"added_tokens_decoder": {
        0: type("A", (), {"content": "<s>", "lstrip": True})()}})()
    assert not starts_with_split_token(lstripped, "<s>x")  # it would take the blanks before


def test_a_pass_in_another_thread_waits_for_hooks_on_the_shared_model(loaded):
    """The Tracer's background worker and an offline Attributor share one model: a pass in
    another thread neither runs the hooks registered here nor runs while they are set."""
    import threading

    from mtcabench.evaluate.attribution._attention import attention_rows
    from mtcabench.evaluate.attribution._passes import RowHooks

    seen: list[int] = []
    done = threading.Event()
    worker = threading.Thread(target=lambda: (attention_rows(loaded.model, [1, 2, 3, 4], [3]),
                                              done.set()))
    with RowHooks(loaded.model, lambda layer, *_: seen.append(layer)):
        worker.start()
        assert not done.wait(1.0), "a pass ran while another thread's hooks were set"
    worker.join(60)
    assert done.is_set() and seen == []
