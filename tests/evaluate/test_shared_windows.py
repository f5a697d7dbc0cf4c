"""Shared context windows (``window_room`` above 0; the default, 0, is a window per turn): a
window fitted with room is read by the later turns that still fit in it, one rendering and one
set of passes for all of them; which window a turn gets does not depend on which turns are
asked (online equals offline). Tiny model: mechanics only."""

from __future__ import annotations

import pytest

from mtcabench.evaluate import (
    TARGET,
    Attributor,
    Tokengeist,
    TraceSettings,
    Tracer,
    as_message,
    get_methods,
    make_scorer,
    model_shares,
    render_conversation,
)
from mtcabench.evaluate.attribution._window import Window, plan_windows
from mtcabench.ingest import read_taubench
from mtcabench.model import Role, TargetSpan

#: Past this limit, s1's assistant turns 8 and 10 end beyond it (at 589 and 644 tokens with
#: the tiny model's tokenizer, checked below); fitted without room, turn 8's window leaves
#: turn 10 past it.
LIMIT = 545


@pytest.fixture(scope="module")
def s1(sample_path):
    return next(c for c in read_taubench(sample_path) if c.task_id == "s1")


def ends(conv, tokenizer) -> dict[int, int]:
    full = render_conversation(conv, tokenizer).full
    return {i: full.turn_tokens(i)[1] for i, t in enumerate(conv.turns)
            if t.role is Role.ASSISTANT}


def whole(conv, turn: int) -> TargetSpan:
    text = conv.turns[turn].text
    return TargetSpan(turn=turn, start=0, end=len(text), text=text)


def shares_of(loaded, conv, spans: dict, room: float):
    settings = TraceSettings(max_tokens=LIMIT, window_room=room)
    attributor = Attributor(loaded, make_scorer("avg-attention", settings, loaded))
    got = model_shares(attributor, conv, spans, get_methods(["tokengeist"]).values(), settings)
    return got, attributor.forward_passes


def test_later_turns_share_the_window_fitted_with_room(tiny_loaded, s1):
    tok = tiny_loaded.tokenizer
    past = {i: e for i, e in ends(s1, tok).items() if e > LIMIT}
    assert sorted(past) == [8, 10]
    room = LIMIT // 4
    plan = plan_windows(s1, past, tok, LIMIT, room)
    first, second = plan[8], plan[10]
    assert isinstance(first, Window) and isinstance(second, Window)
    assert first.anchor == second.anchor == 8 and first.room == room and first.limit == LIMIT
    assert first.end_after <= LIMIT - room and second.end_after <= LIMIT
    assert second.cuts == first.cuts and 8 not in second.cuts  # turn 8 whole in 10's window
    # Turn 10 reads the window's turns as they are, up to its own.
    assert second.conversation.turns[: 9] == first.conversation.turns
    # Without room, a window per turn, fitted to the limit.
    alone = plan_windows(s1, past, tok, LIMIT, 0)
    assert alone[8].anchor == 8 and alone[10].anchor == 10 and alone[10].cuts != first.cuts
    assert alone[8].room == 0 and alone[8].end_after > first.end_after
    # A turn's window depends on the conversation up to it only, not on what else is asked.
    assert plan_windows(s1, {8: past[8]}, tok, LIMIT, room)[8].cuts == first.cuts


def test_one_set_of_passes_for_the_turns_of_a_shared_window(tiny_loaded, s1):
    spans = {"eight": whole(s1, 8), "ten": whole(s1, 10)}
    shares_of(tiny_loaded, s1, spans, 0.25)  # the model's sink probe, once per process
    shared, passes = shares_of(tiny_loaded, s1, spans, 0.25)
    per_turn, passes_per_turn = shares_of(tiny_loaded, s1, spans, 0.0)
    assert passes == 1 and passes_per_turn == 2
    assert shared.windows["eight"].anchor == shared.windows["ten"].anchor == 8
    assert per_turn.windows["ten"].anchor == 10
    # The earlier turn's answers from the shared rendering are those of its own rendering
    # (the model reads causally): asked alone, the same shares.
    alone, _ = shares_of(tiny_loaded, s1, {"eight": whole(s1, 8)}, 0.25)
    keys = [TARGET, *Tokengeist().query_turns(s1, 8)]
    assert len(keys) > 2
    for key in keys:
        got, want = shared.shares["eight"](key), alone.shares["eight"](key)
        assert got.keys() == want.keys() and got
        assert all(abs(got[p] - want[p]) < 1e-4 for p in got)


def test_online_reads_a_shared_window_as_trace_does(tiny_loaded, s1):
    spans = {"eight": whole(s1, 8), "ten": whole(s1, 10)}
    offline, _ = shares_of(tiny_loaded, s1, spans, 0.25)
    tracer = Tracer(tiny_loaded, settings=TraceSettings(max_tokens=LIMIT, window_room=0.25),
                    background=False, conversation_id=s1.id)
    for t in s1.turns:
        tracer.add(as_message(t))
    for key, span in spans.items():  # asked one at a time, as a developer would
        online = tracer.shares_function(span)
        for node in [TARGET, *Tokengeist().query_turns(s1, span.turn)]:
            got, want = online(node), offline.shares[key](node)
            assert got.keys() == want.keys()
            assert all(abs(got[p] - want[p]) < 1e-4 for p in got), (key, node)


def test_the_room_is_a_share_of_the_limit(tiny_loaded):
    from mtcabench.evaluate import SettingsError

    for bad in (-0.1, 1.0, "0.2"):
        with pytest.raises(SettingsError, match="window_room must be a share of the token limit"):
            TraceSettings(window_room=bad)


def test_the_window_room_study_pairs_each_room_with_a_window_per_turn(
        tiny_loaded, sample_benchmark, tmp_path):
    """benchmarks/window_policy.py's functions: the default's windowed units again at a room
    (a setting of their own, their windows stored with it), compared span by span."""
    from mtcabench.benchmark import load_benchmark
    from mtcabench.studies import (
        Models,
        ResultStore,
        Unit,
        room_units,
        run_units,
        window_room_table,
        windowed,
    )

    bench = load_benchmark(sample_benchmark)
    by_conv = bench.spans_by_conversation()
    units = [Unit("dev", "dev", bench.conversations[c], tuple(by_conv[c]), "avg-attention",
                  "default", TraceSettings(max_tokens=400), model=tiny_loaded.name)
             for c in sorted(by_conv)]
    models = Models(loaded=tiny_loaded)
    base = [r for r in run_units(units, ResultStore(tmp_path / "units"), models=models,
                                 log=lambda _: None, commit="abc").results if windowed(r)]
    assert base
    targets = [u for u in units if u.conversation.id in {r.conversation_id for r in base}]
    shared = room_units(targets, 0.25)
    assert {u.setting for u in shared} == {"default-room-0.25"}
    got = run_units(shared, ResultStore(tmp_path / "rooms"), models=models, log=lambda _: None,
                    commit="abc").results
    rooms = {w["room"] for r in got for w in r.shares["windows"].values()}
    assert rooms == {100}  # a quarter of the 400-token limit, asked (and stored) per window
    table = window_room_table("dev", base, {0.25: got})
    rows = [line for line in table.splitlines() if line.startswith("| 0")]
    assert [r.split(" | ")[0] for r in rows] == ["| 0 (a window per turn, the default)",
                                                  "| 0.25"]
    spans = sum(len(windowed(r)) for r in base)
    assert all(f" / {spans} |" in r for r in rows)
    assert rows[1].split(" | ")[3].startswith(("+", "-"))  # the paired difference
