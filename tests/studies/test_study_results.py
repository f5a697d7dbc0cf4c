"""Resumable studies (mtcabench.studies): one result file per unit, a rerun skips what is
done and redoes what is torn, missing or of other settings; a stop loses at most the unit in
progress. The model-free floors make these units (no model), so this runs in the fast lane."""

from __future__ import annotations

import dataclasses
import json

import pytest

from mtcabench.benchmark import load_benchmark
from mtcabench.errors import OutputBusy
from mtcabench.files import claim_output
from mtcabench.studies import FLOOR, Models, ResultStore, SearchPoint, StudyResult, Unit, run_units
from mtcabench.studies._units import FLOOR_POINT, state
from tests.support.sample_benchmark import build_sample_benchmark

FLOORS = FLOOR_POINT  # every floor of the registry, string-match included


class NoModel(Models):
    """A run that must not load the model."""

    def get(self, name):
        raise AssertionError(f"the model {name} was loaded")


@pytest.fixture()
def units(sample_path, tmp_path):
    bench = load_benchmark(build_sample_benchmark(sample_path, tmp_path / "bench"))
    by_conv = bench.spans_by_conversation()
    return [Unit("test", "test", bench.conversations[c], tuple(by_conv[c]), FLOOR, "floors",
                 points=(FLOORS,)) for c in sorted(by_conv)]


def run(units, store, **kw):
    lines = []
    summary = run_units(units, store, models=NoModel(), log=lines.append, commit="abc", **kw)
    return summary, lines


def test_a_rerun_skips_done_units_and_redoes_a_torn_one(units, tmp_path):
    store = ResultStore(tmp_path / "units")
    first, lines = run(units, store)
    assert (first.computed, first.done) == (3, 0)
    assert lines[0] == "3 units: 0 done, 0 to replay, 3 to compute (0 with the model)"
    paths = [u.path(store) for u in units]
    assert all(p.is_file() for p in paths)
    # the file name comes from the conversation id through the one name policy
    assert paths[0].name == "taubench_airline_sample_task-s1_trial-0.json"
    mtimes = [p.stat().st_mtime_ns for p in paths]

    again, lines = run(units, store)
    assert (again.computed, again.done, again.replayed) == (0, 3, 0)
    assert [p.stat().st_mtime_ns for p in paths] == mtimes  # nothing rewritten
    assert lines[0] == "3 units: 3 done, 0 to replay, 0 to compute (0 with the model)"

    # a torn file (cut mid-write by a copy, say) is reported and computed again
    text = paths[1].read_text()
    paths[1].write_text(text[: len(text) // 2])
    assert state(units[1], store)[0].startswith("torn: ")
    third, lines = run(units, store)
    assert (third.computed, third.done) == (1, 2)
    assert any("computed (torn:" in line and units[1].conversation.id in line for line in lines)
    assert json.loads(paths[1].read_text()) == json.loads(text)


def test_a_result_of_other_settings_is_not_reused(units, tmp_path):
    store = ResultStore(tmp_path / "units")
    run(units, store)
    # the same path (same labels), another conversation text: another signature
    conv = units[0].conversation
    turns = list(conv.turns)
    turns[1] = turns[1].model_copy(update={"content": turns[1].content + " (edited)"})
    edited = dataclasses.replace(units[0], conversation=conv.model_copy(update={"turns": turns}))
    assert edited.path(store) == units[0].path(store) and edited.signature != units[0].signature
    assert state(edited, store)[0] == "other settings"
    summary, _ = run([edited, *units[1:]], store)
    assert (summary.computed, summary.done) == (1, 2)
    got = store.read(edited.path(store))
    assert isinstance(got, StudyResult) and got.signature == edited.signature


def test_a_new_search_point_is_replayed_and_the_others_kept(units, tmp_path):
    store = ResultStore(tmp_path / "units")
    run(units, store)
    only_recency = SearchPoint("recency-only", methods=("recency",))
    more = [dataclasses.replace(u, points=(only_recency,)) for u in units]
    summary, lines = run(more, store)
    assert (summary.replayed, summary.computed) == (3, 0)
    got = store.read(more[0].path(store))
    assert set(got.points) == {"default", "recency-only"}  # the other stage's point stays
    assert got.points["recency-only"].methods["recency"] == got.points["default"].methods[
        "recency"]


def test_a_stop_loses_at_most_the_unit_in_progress(units, tmp_path, monkeypatch):
    from mtcabench.studies import _units

    store = ResultStore(tmp_path / "units")
    calls = []
    real = _units.compute_unit

    def stop_at_the_second(unit, loaded):
        calls.append(unit.conversation.id)
        if len(calls) == 2:
            raise KeyboardInterrupt  # Ctrl-C, or the machine taken away
        return real(unit, loaded)

    monkeypatch.setattr(_units, "compute_unit", stop_at_the_second)
    with pytest.raises(KeyboardInterrupt):
        run(units, store)
    assert [p.name for p in sorted(store.root.rglob("*.json"))] == [units[0].path(store).name]
    assert not list(store.root.rglob("*.tmp"))
    # a write killed with -9 leaves its temporary file: the next run removes it
    stray = units[0].path(store).parent / ".left-by-kill.json.x1y2.tmp"
    stray.write_text("{")
    monkeypatch.setattr(_units, "compute_unit", real)
    summary, lines = run(units, store)
    assert (summary.done, summary.computed) == (1, 2) and not stray.exists()
    assert any("left unfinished" in line for line in lines)


def test_two_runs_never_write_one_store(units, tmp_path):
    store = ResultStore(tmp_path / "units")
    store.root.mkdir(parents=True)
    with claim_output(store.root), pytest.raises(OutputBusy):
        run(units, store)


def test_scores_are_the_scorers(units, tmp_path):
    """A unit's per-span row is score_span's, as `mtcabench score` averages it."""
    from mtcabench.baselines import FLOORS as F
    from mtcabench.results.metrics import columns, score_span, span_matrix

    store = ResultStore(tmp_path / "units")
    summary, _ = run(units, store)
    assert set(FLOORS.methods) == set(F) >= {"recency", "first-user", "string-match"}
    for unit, result in zip(units, summary.results):
        for name in F:
            for span, got in zip(unit.spans, result.points["default"].methods[name]):
                graph = F[name].graph(unit.conversation, span.span)
                row = span_matrix([score_span(span, unit.conversation, graph.edges)])[0]
                assert got.score == pytest.approx(dict(zip(columns(), row)), abs=1e-6)
                assert got.span_id == span.id and got.lookups == 0


def test_the_shares_cache_is_read_by_the_one_json_reader(tmp_path):
    """The shares cache was read with str.splitlines and json.loads: a U+2028 inside a line cut
    it in two, and a bad line was a traceback. Now: io's reader, a torn last line left out."""
    from mtcabench.errors import InputError
    from mtcabench.studies import load_cache

    path = tmp_path / "shares.jsonl"
    good = json.dumps({"conversation_id": "c\u2028one", "signature": "s", "shares": {}},
                      ensure_ascii=False)
    path.write_text(good + "\n" + '{"conversation_id": "torn', encoding="utf-8")
    assert list(load_cache(path)) == ["c\u2028one"]
    path.write_text(good + "\n" + '{"conversation_id": "c2", "seconds": NaN}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"shares.jsonl:2: a number JSON cannot carry"):
        load_cache(path)
    path.write_text('{"signature": "s"}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"shares.jsonl:1: a shares line without its conv"):
        load_cache(path)
